// A training job from a JSON file (a preset's job.json, `weft plan --job FILE.json`), keyed by
// `weft plan`'s flags without their dashes — the names Megatron gives them:
//   {"tp": 8, "pp": 8, "dp": 1, "seq-length": 4096, "micro-batch-size": 1,
//    "global-batch-size": 64, "sequence-parallel": true, "schedule": "interleaved", "chunks": 5}
// Every key is optional (a job's defaults, `plan::job`); the values take the flags' ranges;
// Megatron's keys are read under its names, with dashes or its underscores. A value out of
// range or of the wrong type is a `config_error` naming it, and so is a key it does not know
// (with the nearest it does) or one of Megatron's it does not price (with what it would change);
// Megatron's keys that change nothing of a step (learning rate, data, logging) are taken.
// docs/planning.md has the keys.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>
#include <weft/core/op.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job.hpp>
#include <weft/plan/megatron_flags.hpp>

namespace weft::plan {

struct job_file {
  job spec;
  std::vector<std::string> warnings;
};

/// weft's keys and Megatron's names for the same settings: a file gives one or the other.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 7> megatron_keys{{
    {"tp", "tensor-model-parallel-size"},
    {"pp", "pipeline-model-parallel-size"},
    {"cp", "context-parallel-size"},
    {"ep", "expert-model-parallel-size"},
    {"chunks", "num-virtual-stages-per-pipeline-rank"},
    {"recompute", "recompute-granularity"},
    {"pipeline-layout", "pipeline-model-parallel-layout"},
}};

namespace detail {
/// The job file's object with each key in dashes (Megatron's argument names have underscores
/// where its flags have dashes); two keys for one name are refused.
inline nlohmann::json dashed_keys(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) return j;  // the reader's own error names it
  nlohmann::json out = nlohmann::json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = it.key();
    std::replace(key.begin(), key.end(), '_', '-');
    if (out.contains(key))
      throw config_error(file + ": " + excerpt(it.key()) + " and " + key +
                         " are one setting: give one");
    out[key] = it.value();
  }
  return out;
}

/// Megatron's keys a job file may give beside weft's: taken where they change nothing weft
/// prices differently (`bf16`, grouped expert matmuls, DeepEP's kernels, the checkpoints'
/// format), read where they do (the optimizer's sharding, fp16's gradients, the attention's
/// kernel), refused where weft prices otherwise.
inline void read_megatron_keys(config_reader& r, job& b, const std::string& file) {
  const auto refuse_false = [&](std::string_view key, std::string_view why) {
    if (!r.flag(key, true))
      throw config_error(file + ": " + std::string(key) + " false: " + std::string(why));
  };
  // Megatron's precision: bf16 or fp16, one of them (its arguments.py asserts so).
  b.fp16 = r.flag("fp16", false);
  if (b.fp16 && r.flag("bf16", false))
    throw config_error(file + ": fp16 and bf16 are one setting: give one");
  if (!b.fp16) refuse_false("bf16", "weft prices bf16 mixed precision (or fp16, `fp16`)");
  refuse_false("moe-grouped-gemm",
               "weft prices each rank's experts as one grouped matmul, not one apiece");
  (void)r.flag("moe-enable-deepep", false);  // what weft's flex dispatcher prices
  b.gradient_accumulation_fusion =
      !r.flag("no-gradient-accumulation-fusion", !b.gradient_accumulation_fusion);
  (void)r.text({"ckpt-format"}, "");  // no part of a step
  if (const std::string o = r.text({"optimizer"}, "adam"); o != "adam")
    throw config_error(file + ": optimizer '" + excerpt(o) +
                       "': weft prices Adam's states and step");
  const bool sharded = r.has("data-parallel-sharding-strategy");
  if (r.flag("use-megatron-fsdp", false) && !sharded)
    throw config_error(file +
                       ": use-megatron-fsdp shards what data-parallel-sharding-strategy says: "
                       "give it");
  if (r.has("use-distributed-optimizer") && r.has("no-distributed-optimizer"))
    throw config_error(file +
                       ": use-distributed-optimizer and no-distributed-optimizer are one "
                       "setting: give one");
  const bool distributed =
      r.flag("use-distributed-optimizer", !r.flag("no-distributed-optimizer", false));
  if (!distributed && sharded)
    throw config_error(file +
                       ": data-parallel-sharding-strategy with the distributed optimizer "
                       "off: give one");
  if (!distributed) b.sharding = dp_sharding::no_shard;
  // fp16 keeps its gradients in 16 bits unless accumulated in fp32; Megatron reads
  // grad-reduce-in-bf16 under bf16 only.
  if (b.fp16) b.grad_reduce_in_bf16 = !r.flag("accumulate-allreduce-grads-in-fp32", false);
  const std::string backend = r.text({"attention-backend"}, "auto");
  if (!one_of_names(backend, attention_backends))
    throw config_error(file +
                       ": attention-backend must be one of auto, flash, fused, unfused, "
                       "local, sdpa, got '" +
                       excerpt(backend) + "'");
  b.attention = attention_library_of(backend);
  const std::string impl = r.text({"transformer-impl"}, "transformer_engine");
  if (!one_of_names(impl, transformer_impls))
    throw config_error(file + ": transformer-impl must be transformer_engine or local, got '" +
                       excerpt(impl) + "'");
  if (scores_whole(backend) || impl == "local") b.flash_attention = false;
  if (r.has("overlap-p2p-communication") && r.has("no-overlap-p2p-communication"))
    throw config_error(file +
                       ": overlap-p2p-communication and no-overlap-p2p-communication are "
                       "one setting: give one");
  if (r.flag("no-overlap-p2p-communication", false)) b.overlap_p2p_comm = false;
}

/// Each key of the file that `r` did not read: Megatron's that change nothing of a step are
/// taken; Megatron's that weft does not price, and any other, refused by name.
inline void refuse_unknown_keys(const config_reader& r, const std::string& file) {
  for (const std::string& key : r.unused_keys()) {
    const std::string flag = "--" + key;
    if (is_megatron_inert(flag)) continue;
    if (const auto why = megatron_unpriced_reason(flag))
      throw config_error(file + ": " + excerpt(key) + " is Megatron's, and weft does not price " +
                         std::string(*why));
    const std::string_view near = nearest_name(key, r.asked());
    throw config_error(
        file + ": " + excerpt(key) + " is not a job setting weft reads" +
        (near.empty() ? std::string() : " (did you mean " + std::string(near) + "?)") +
        "; docs/planning.md lists them");
  }
}
}  // namespace detail

inline job_file read_job(std::string_view text, const std::string& file) {
  const nlohmann::json j = detail::dashed_keys(detail::parse_json(text, file), file);
  detail::config_reader r(j, file);
  for (const auto& [mine, megatron] : megatron_keys)
    if (r.has(mine) && r.has(megatron))
      throw config_error(file + ": " + std::string(mine) + " and " + std::string(megatron) +
                         " are one setting: give one");
  job_file out;
  job& b = out.spec;
  const auto whole = [&](std::string_view key, int& into, double hi) {
    into = static_cast<int>(r.whole({key}, 1, hi, static_cast<double>(into)));
  };
  namespace L = job_limits;
  // weft's short names, or Megatron's.
  const auto either = [&](std::string_view key, std::string_view megatron, int& into, double hi) {
    into = static_cast<int>(r.whole({key, megatron}, 1, hi, static_cast<double>(into)));
  };
  either("tp", "tensor-model-parallel-size", b.tp, L::tp);
  either("pp", "pipeline-model-parallel-size", b.pp, L::pp);
  whole("dp", b.dp, L::dp);
  either("cp", "context-parallel-size", b.cp, L::cp);
  either("ep", "expert-model-parallel-size", b.ep, L::ep);
  whole("micro-batch-size", b.micro_batch_size, L::micro_batch_size);
  if (r.has("global-batch-size"))
    whole("global-batch-size", b.global_batch_size, L::global_batch_size);
  b.seq = r.whole({"seq-length"}, 1, L::seq, b.seq);
  either("chunks", "num-virtual-stages-per-pipeline-rank", b.chunks, limits::chunks);
  if (r.has("num-layers-per-virtual-pipeline-stage"))
    whole("num-layers-per-virtual-pipeline-stage", b.layers_per_virtual_stage, limits::layers);
  if (r.has("decoder-first-pipeline-num-layers"))
    whole("decoder-first-pipeline-num-layers", b.decoder_first, limits::layers);
  if (r.has("decoder-last-pipeline-num-layers"))
    whole("decoder-last-pipeline-num-layers", b.decoder_last, limits::layers);
  b.fp8_format = r.text({"fp8-format"}, b.fp8_format);
  b.fp8_recipe_name = r.text({"fp8-recipe"}, b.fp8_recipe_name);
  if (r.has("expert-tensor-parallel-size"))
    whole("expert-tensor-parallel-size", b.expert_tp, L::tp);
  // One of an enum's names (memory.hpp's lists), or an error listing them.
  const auto choice = [&]<class Enum, std::size_t N>(std::string_view key, Enum fallback,
                                                     const std::array<std::string_view, N>& names) {
    const std::string v = r.text({key}, std::string(names[static_cast<std::size_t>(fallback)]));
    if (const std::optional<Enum> e = named<Enum>(names, v)) return *e;
    std::string list;
    for (const std::string_view a : names) list += (list.empty() ? "" : ", ") + std::string(a);
    throw config_error(file + ": " + std::string(key) + " must be one of " + list + ", got '" +
                       excerpt(v) + "'");
  };
  b.policy = choice(r.has("recompute-granularity") ? "recompute-granularity" : "recompute",
                    b.policy, recompute_names);
  b.recompute_method = r.text({"recompute-method"}, b.recompute_method);
  if (r.has("recompute-num-layers"))
    whole("recompute-num-layers", b.recompute_num_layers, limits::layers);
  if (r.has("recompute-every")) whole("recompute-every", b.recompute_every, limits::layers);
  b.recompute_ops = r.flag("recompute-ops", b.recompute_ops);
  if (const std::optional<std::vector<std::string>> names = r.texts("recompute-modules"))
    b.recompute_modules = recompute_modules_of(*names, file + ": recompute-modules");
  b.sharding = choice("data-parallel-sharding-strategy", b.sharding, dp_sharding_names);
  b.fp8 = choice("fp8", b.fp8, fp8_names);
  b.cp_comm_type = choice("cp-comm-type", b.cp_comm_type, cp_comm_names);
  b.dispatcher = choice("moe-token-dispatcher-type", b.dispatcher, moe_dispatcher_names);
  b.runtime = choice("pipeline-runtime", b.runtime, pipeline_runtime_names);
  b.schedule = r.text({"schedule"}, b.schedule);  // the generator's own error names the known
  b.layout = r.text({"pipeline-layout", "pipeline-model-parallel-layout"}, b.layout);
  b.sequence_parallel = r.flag("sequence-parallel", b.sequence_parallel);
  b.overlap_grad_reduce = r.flag("overlap-grad-reduce", b.overlap_grad_reduce);
  b.overlap_param_gather = r.flag("overlap-param-gather", b.overlap_param_gather);
  b.grad_reduce_in_bf16 = r.flag("grad-reduce-in-bf16", b.grad_reduce_in_bf16);
  b.fp8_param_gather = r.flag("fp8-param-gather", b.fp8_param_gather);
  b.flash_attention = r.flag("flash-attention", b.flash_attention);
  b.overlap_p2p_comm = r.flag("overlap-p2p-communication", b.overlap_p2p_comm);
  b.overlap_moe_ep_comm = r.flag("overlap-moe-expert-parallel-comm", b.overlap_moe_ep_comm);
  b.delay_wgrad_compute = r.flag("delay-wgrad-compute", b.delay_wgrad_compute);
  b.tp_comm_overlap = r.flag("tp-comm-overlap", b.tp_comm_overlap);
  b.eager = r.flag("eager", b.eager);
  b.eager_loss = r.flag("eager-loss", b.eager_loss);
  b.fused_rms_norm = r.flag("fused-rms-norm", b.fused_rms_norm);
  b.grad_all_reduce_fp32 = r.flag("grad-all-reduce-fp32", b.grad_all_reduce_fp32);
  b.deepspeed_bf16 = r.flag("deepspeed-bf16-optimizer", b.deepspeed_bf16);
  b.scatter_gather_transfers =
      r.flag("scatter-gather-tensors-in-pipeline", b.scatter_gather_transfers);
  detail::read_megatron_keys(r, b, file);
  detail::refuse_unknown_keys(r, file);
  return out;
}

}  // namespace weft::plan
