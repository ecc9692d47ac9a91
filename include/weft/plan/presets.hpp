// The scenarios of MindSpeed's feature notes as data (llama2-70b-xdc, ampipe-16p, llama3-405b): a
// preset is a folder holding the model's config.json, the job (job.json, plan/job_file.hpp) and the
// cluster (cluster.json, plan/cluster_file.hpp), read the way `weft plan` reads a user's own, and
// turned into the facts a scenario's cost model is built from. The files of `presets/` are the one
// statement of each run; tests/unit/test_presets.cpp holds them to the published facts.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/plan/cluster_file.hpp>
#include <weft/plan/flops.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/sim/ampipe_preset.hpp>
#include <weft/sim/tp2d_facts.hpp>
#include <weft/sim/xdc_preset.hpp>

namespace weft::plan {

namespace detail {
/// What a scenario's facts do not price: a `config_error` naming the scenario.
[[noreturn]] inline void refuse(const char* scenario, const std::string& why) {
  throw config_error(std::string("the ") + scenario + " scenario prices " + why);
}
}  // namespace detail

/// A preset's three files, read; every reader's warnings together.
struct preset {
  hf_model model;
  job_file job;
  cluster_file cluster;
  std::vector<std::string> warnings;
};

/// Refuses to plan built-in preset `name` where it is another command's scenario, not a job
/// (callers ask only of the built-in folders; one's own of the same name is what it says):
/// llama3-405b is tp2d's (tp 16 as 8 x 2), which 1D tensor parallelism — all a plan prices —
/// cannot split over the model's 8 key/value heads. `model` is the preset's config.json.
inline void refuse_scenario_preset(const std::string& name, const std::string& model) {
  if (name == "llama3-405b")
    throw config_error(
        "weft: plan: preset llama3-405b is the 2D tensor-parallel scenario (tp 16 as 8 x 2), "
        "which 1D tensor parallelism cannot split over its 8 key/value heads: run it with "
        "weft tp2d --preset llama3-405b, or plan the model from " +
        model);
}

/// Reads `dir`/config.json, job.json and cluster.json. Throws `config_error` naming the file
/// that is missing or wrong.
inline preset read_preset(const std::filesystem::path& dir) {
  const auto text = [&](const char* name) {
    const std::filesystem::path p = dir / name;
    std::ifstream in(p, std::ios::binary);
    if (!in)
      throw config_error("preset " + dir.filename().string() + ": cannot read " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string where = dir.filename().string() + "/";
  preset out;
  try {
    out.model = read_hf_config(text("config.json"));
  } catch (const config_error& e) {  // the reader names config.json; say which preset's
    throw config_error("preset " + where + std::string(e.what()));
  }
  out.job = read_job(text("job.json"), where + "job.json");
  out.cluster = read_cluster(text("cluster.json"), where + "cluster.json");
  // The job's and the cluster's readers name their file already; the config's says config.json.
  for (const std::string& x : out.model.warnings) out.warnings.push_back(where + x);
  for (const auto* w : {&out.job.warnings, &out.cluster.warnings})
    for (const std::string& x : *w) out.warnings.push_back(x);
  return out;
}

/// The cross-data-centre scenario's facts (sim/xdc_preset.hpp) from a model, a job and a cluster
/// of data centres: a dense model with a SwiGLU MLP, pipeline and tensor parallelism (no
/// context or expert parallelism), every micro-batch's `seq` tokens. Throws `config_error` for
/// what the scenario does not price.
inline xdc_facts xdc_facts_of(const transformer& m, const job& j, const cluster& c) {
  const auto refuse = [](const std::string& why) { detail::refuse("cross-DC", why); };
  if (m.moe.active() || m.mla.active()) refuse("a dense model with standard attention");
  if (m.mlp != mlp_kind::gated) refuse("a SwiGLU MLP (three matrices)");
  if (j.cp != 1 || j.ep != 1) refuse("pipeline, tensor and data parallelism only (cp 1, ep 1)");
  if (c.centres.sites < 1 || j.pp % c.centres.sites != 0)
    refuse("pipeline ranks split evenly over the data centres");
  xdc_facts f;
  f.layers = m.layers;
  f.hidden = m.hidden;
  const layer_flops work = forward_flops(m, 0, j.seq * j.micro_batch_size, j.seq);
  f.linear_flops = (work.projections + work.mlp) / j.tp;
  f.causal_flops = work.scores / 2 / j.tp;
  f.seq = j.seq;
  f.micro_batch_size = j.micro_batch_size;
  f.tp = j.tp;
  f.pp = j.pp;
  f.dp = j.dp;
  f.chunks = j.chunks;
  f.micro = j.micro();
  f.sequence_parallel = j.sequence_parallel;
  f.device = c.device;
  f.intra = c.intra;
  f.inter = c.inter;
  f.km = c.centres.km;
  f.ratio = c.centres.convergence_ratio;
  f.sites = c.centres.sites;
  return f;
}

/// The AMPipe scenario's facts (sim/ampipe_preset.hpp) from a model, a job and a cluster: MoE
/// layers of routed experts with a plain (GeLU) MLP each and standard attention, one sequence a
/// micro-batch on one pipeline rank, tensor parallelism inside a node where it fits and expert
/// parallelism over the links its group crosses (`group_link`). Throws `config_error` for what
/// the scenario does not price.
inline moe_mesh_facts moe_mesh_facts_of(const transformer& m, const job& j, const cluster& c) {
  const auto refuse = [](const std::string& why) { detail::refuse("AMPipe", why); };
  if (!m.moe.active() || m.moe.first_dense != 0 || m.moe.every != 1 || m.moe.shared_ffn > 0)
    refuse("MoE layers throughout, routed experts only");
  if (m.mlp != mlp_kind::plain) refuse("experts with a plain two-matrix MLP (GeLU)");
  if (m.mla.active() || m.kv_heads != m.heads)
    refuse("standard attention (as many KV as query heads)");
  if (j.pp != 1 || j.micro_batch_size != 1)
    refuse("one pipeline rank and one sequence a micro-batch");
  if (j.policy == recompute::selective || j.recompute_method == "block" || j.recompute_every > 1)
    refuse("no recomputation or full recomputation of every layer");
  moe_mesh_facts f;
  f.seq = j.seq;
  f.hidden = m.hidden;
  f.ffn = m.moe.expert_ffn;
  f.layers = m.layers;
  f.experts = m.moe.routed;
  f.top_k = m.moe.top_k;
  f.tp = j.tp;
  f.cp = j.cp;
  f.ep = j.ep;
  f.sequence_parallel = j.sequence_parallel;
  f.full_recompute = j.policy == recompute::full;
  f.peak_flops = c.device.peak_flops;
  f.efficiency = c.device.efficiency;
  f.memory_bytes_per_s = c.device.memory_bytes_per_s;
  f.tp_link = group_link(c, j.tp, 1);
  f.ep_link = group_link(c, j.ep, static_cast<long long>(j.tp) * j.cp);
  return f;
}

/// The 2D tensor-parallel scenario's layer (sim/tp2d_facts.hpp; tp/preset.hpp prices it) from a
/// model, a job and a cluster: a dense layer with a SwiGLU MLP (fc1 holds gate and up) and
/// grouped-query attention, `seq` tokens a sequence, the cluster's devices and machines
/// (collectives across machines in two levels). Throws `config_error` for what the scenario does
/// not price.
inline tp_layer_facts tp_layer_facts_of(const transformer& m, const job& j, const cluster& c) {
  const auto refuse = [](const std::string& why) { detail::refuse("2D tensor-parallel", why); };
  if (m.moe.active() || m.mla.active()) refuse("a dense layer with standard attention");
  if (m.mlp != mlp_kind::gated) refuse("a SwiGLU MLP (fc1 holds gate and up)");
  tp_layer_facts f;
  f.hidden = m.hidden;
  f.ffn = m.ffn;
  f.heads = m.heads;
  f.kv_heads = m.kv_heads;
  f.seq = j.seq;
  f.micro_batch_size = j.micro_batch_size;
  f.device = c.device;
  f.mesh = {.per_node = c.per_node, .intra = c.intra, .inter = c.inter, .hierarchical = true};
  return f;
}

/// A preset's scenario facts, from its three files.
inline xdc_facts xdc_facts_of(const preset& p) {
  return xdc_facts_of(p.model.model, p.job.spec, p.cluster.spec);
}
inline moe_mesh_facts moe_mesh_facts_of(const preset& p) {
  return moe_mesh_facts_of(p.model.model, p.job.spec, p.cluster.spec);
}
inline tp_layer_facts tp_layer_facts_of(const preset& p) {
  return tp_layer_facts_of(p.model.model, p.job.spec, p.cluster.spec);
}

}  // namespace weft::plan
