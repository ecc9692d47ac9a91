// weft's plans of published training runs beside what the papers report: every row the model,
// the job and the cluster the paper states, priced with the built-in clusters' one parameter set,
// nothing fitted. Prints published, weft and the error per row, and the summary the planning
// docs quote (docs/planning.md, "Against published runs").
//
//   published_runs            the table, and the error with each part of the model switched off
//   published_runs --check    also exit 1 when a row cannot be planned (the smoke test)
//   published_runs --choose [BUDGET_S]
//                             for each run, the configuration weft would choose on the same
//                             devices and batch (`plan::search_configurations`, BUDGET_S each,
//                             default 2; Megatron-LM's schedules where the paper ran Megatron),
//                             its predicted gain over the published one, and where it comes from
//   published_runs --sweeps   measured sweeps of one model over many ways to split its GPUs
//                             (Narayanan et al. 2021's Figures 13-15; vTrain's Megatron-DeepSpeed
//                             runs): measured and weft's per configuration, the rank correlation
//                             of the two orders, and how far weft's first choice is from the
//                             measured best
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "hagemann2023.hpp"
#include "published.hpp"

#include <weft/plan/cluster.hpp>
#include <weft/plan/configurations.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/flops.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/memory.hpp>
#include <weft/plan/presets.hpp>

#ifndef WEFT_PRESETS_DIR
#error "WEFT_PRESETS_DIR names the presets folder"
#endif

namespace {

using namespace weft;
using namespace weft::plan;
using weft::bench::median;
using weft::bench::read_file;

/// What a paper reports for a run, in its own unit.
enum class reported { step_s, tflops_per_gpu, tokens_per_s_per_gpu };

struct run {
  std::string_view name, source, model, cluster;  ///< model: a config.json under presets/
  job j;
  reported unit;
  double published;
  bool korthikanti = false;   ///< one of Korthikanti et al. 2022's Table 5 rows
  std::string_view preset{};  ///< else: a preset's folder, its model, job and cluster
};

job megatron(int tp, int pp, int dp, int gbs, recompute policy, bool sp, std::string_view schedule,
             int chunks, int micro_batch = 1) {
  job j;
  j.tp = tp;
  j.pp = pp;
  j.dp = dp;
  j.global_batch_size = gbs;
  j.micro_batch_size = micro_batch;
  j.seq = 2048;
  j.policy = policy;
  j.sequence_parallel = sp;
  j.schedule = schedule;
  j.chunks = chunks;
  j.flash_attention = false;  // 2021-22's Megatron: attention as matmuls and a fused softmax
  // Its schedules then waited for every batched transfer (the interleaved one's
  // overlap_p2p_comm came in 2023).
  j.runtime = pipeline_runtime::megatron;
  j.scatter_gather_transfers = true;  // without sequence parallelism (Narayanan et al. §4.1)
  // Trained in fp16 (Megatron-LM's examples/pretrain_gpt3_175B.sh: --fp16), whose gradients
  // are reduced in 16 bits, by an all-reduce: the distributed optimizer came later (2022).
  j.fp16 = j.grad_reduce_in_bf16 = true;
  j.sharding = dp_sharding::no_shard;
  return j;
}

std::vector<run> runs() {
  using enum recompute;
  std::vector<run> out;
  // Korthikanti et al. 2022 (arXiv 2205.05198): Table 3's configurations, Table 5's iteration
  // times — full recomputation without sequence parallelism, and their work (sequence
  // parallelism and selective recomputation). Sequence 2048; micro-batch 4 for 22B (one a
  // step), 1 for the others; 175B and 530B with the interleaved schedule of 3 stages per rank
  // (§6); no data parallelism.
  const auto table5 = [&](std::string_view name, std::string_view model, int pp, int gbs,
                          int micro_batch, int chunks, double full_s, double present_s) {
    const std::string_view schedule = chunks > 1 ? "interleaved" : "1f1b";
    out.push_back({name, "Korthikanti et al. 2022, Table 5, full recompute", model, "a100-80g",
                   megatron(8, pp, 1, gbs, full, false, schedule, chunks, micro_batch),
                   reported::step_s, full_s, true});
    out.push_back({name, "Korthikanti et al. 2022, Table 5, SP + selective", model, "a100-80g",
                   megatron(8, pp, 1, gbs, selective, true, schedule, chunks, micro_batch),
                   reported::step_s, present_s, true});
  };
  table5("GPT 22B, 8 A100", "models/gpt-22b.json", 1, 4, 4, 1, 1.42, 1.10);
  table5("GPT-3 175B, 64 A100", "models/gpt3-175b.json", 8, 64, 1, 3, 18.13, 13.75);
  table5("MT-NLG 530B, 280 A100", "models/mt-nlg-530b.json", 35, 280, 1, 3, 49.05, 37.83);
  table5("GPT 1T, 512 A100", "models/gpt-1t.json", 64, 512, 1, 1, 94.42, 71.49);

  // Narayanan et al. 2021 (arXiv 2104.04473), Table 1: the 1T model on 3072 A100s, tp 8, pp 64,
  // batch 3072, 163 TFLOP/s a GPU as their Eq. 3 counts a step's FLOPs (full recomputation:
  // 96 B s l h^2 (1 + s/6h + V/16lh)); the step that makes.
  {
    const double B = 3072, s = 2048, l = 128, h = 25600, V = 51200;
    const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    out.push_back({"GPT 1T, 3072 A100", "Narayanan et al. 2021, Table 1 (Eq. 3)",
                   "models/gpt-1t.json", "a100-80g",
                   megatron(8, 64, 6, 3072, recompute::full, false, "1f1b", 1), reported::step_s,
                   eq3 / (3072 * 163e12)});
  }

  // BLOOM (arXiv 2211.05100) on Jean Zay: the preset's model, job and cluster
  // (tr11-176B-ml.slurm; four Omni-Path links a node). Its measured step at batch 2048:
  // "elapsed time per iteration (s): 105.22" (train/tr11-176B-ml/chronicles.md).
  out.push_back({"BLOOM 176B, 384 A100",
                 "BigScience tr11-176B-ml chronicles",
                 "",
                 "",
                 {},
                 reported::step_s,
                 105.22,
                 false,
                 "bloom-176b"});

  // Llama 3 (arXiv 2407.21783), Table 4: 405B at 8192 tokens on 8192 and 16384 H100s, and at
  // 131072 tokens with context parallelism 16; 16M tokens a batch; BF16 TFLOP/s a GPU. The
  // interleaved schedule with one layer fewer on the first and the last stage (§3.3.2).
  // TFLOP/s as PaLM's MFU counts them (the paper cites it): attention's whole square.
  const auto llama = [&](std::string_view name, int dp, int cp, double seq, double tflops) {
    job j;
    j.tp = 8;
    j.pp = 16;
    j.dp = dp;
    j.cp = cp;
    j.seq = seq;
    j.global_batch_size = static_cast<int>(16 * 1024 * 1024 / seq);
    j.sequence_parallel = true;
    j.schedule = "interleaved";
    j.layout = "Et*3|(t*4|)*30,t*3L";
    j.cp_comm_type = cp_comm::all_gather;  // §3.3.2: K and V all-gathered, exposed
    out.push_back({name, "Llama 3 paper, Table 4", "llama3-405b/config.json", "h100-sxm", j,
                   reported::tflops_per_gpu, tflops});
  };
  llama("Llama 3 405B, 8192 H100", 64, 1, 8192, 430);
  llama("Llama 3 405B, 16384 H100", 128, 1, 8192, 400);
  llama("Llama 3 405B 128k, 16384", 8, 16, 131072, 380);

  // NVIDIA's measured Megatron-Bridge runs on DGX-H100 (its performance summary, 26.04.01 and
  // 25.11 containers, tokens/s a GPU), each as its H100 recipe sets it: FP8 current scaling on
  // every layer with FP8 weights gathered, gradients reduced in bf16, the distributed optimizer
  // with both overlaps, sequence parallelism with tp, no recomputation, the interleaved
  // schedule with p2p overlap where it is virtual, experts force-balanced (dropless); Qwen3
  // 235B's all-to-alls behind another micro-batch's compute (combined 1F1B); the dense rows'
  // tensor-parallel collectives beside their GEMMs (userbuffers, priced with Transformer
  // Engine's defaults: their recipes' own settings differ in SM counts and a ring exchange for
  // the forward's reduce-scatters; Qwen3 235B's perf config turns the overlap off).
  const auto nemo = [&](std::string_view name, std::string_view model, int devices, int tp, int pp,
                        int cp, int ep, int chunks, int gbs, double seq, std::string_view layout,
                        double tokens) {
    job j;
    j.tp = tp;
    j.pp = pp;
    j.cp = cp;
    j.ep = ep;
    j.dp = devices / (tp * pp * cp);
    j.seq = seq;
    j.global_batch_size = gbs;
    j.sequence_parallel = tp > 1;
    j.schedule = chunks > 1 ? "interleaved" : "1f1b";
    j.chunks = layout.empty() ? chunks : 1;
    j.layout = layout;
    j.runtime = pipeline_runtime::megatron;
    j.overlap_p2p_comm = chunks > 1;
    j.fp8 = fp8_recipe::hybrid;
    j.fp8_current_scaling = true;  // FP8-CS: Megatron's --fp8-recipe tensorwise
    j.fp8_param_gather = true;
    j.grad_reduce_in_bf16 = true;
    j.overlap_grad_reduce = j.overlap_param_gather = true;
    out.push_back({name, "Megatron-Bridge performance summary (DGX-H100)", model, "h100-sxm", j,
                   reported::tokens_per_s_per_gpu, tokens});
  };
  nemo("Llama 3 70B, 64 H100 (NeMo 26.04.01)", "models/llama-3-70b.json", 64, 4, 8, 1, 1, 5, 256,
       8192, "", 1664);
  out.back().j.tp_comm_overlap = true;  // userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192
  // 126 layers with the embedding and the loss counted as layers: two a virtual stage.
  nemo("Llama 3.1 405B, 1024 H100 (NeMo 26.04.01)", "llama3-405b/config.json", 1024, 8, 8, 2, 1, 8,
       1536, 8192, "Et|(t*2|)*62,tL", 328);
  out.back().j.tp_comm_overlap = true;  // userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192
  // Its experts whole (expert tensor parallelism 1), ep 32 folded over dp 16 x tp 2.
  nemo("Qwen3 235B-A22B, 256 H100 (NeMo 26.04.01)", "models/qwen3-235b-a22b.json", 256, 2, 8, 1, 32,
       4, 8192, 4096, "Et*2|(t*3|)*30,t*2L", 1712);
  out.back().j.expert_tp = 1;
  out.back().j.overlap_moe_ep_comm = out.back().j.delay_wgrad_compute = true;
  nemo("Qwen3 30B-A3B, 16 H100 (NeMo 26.04.01)", "models/qwen3-30b-a3b.json", 16, 1, 1, 1, 16, 1,
       1024, 4096, "", 8960);
  out.back().j.dispatcher = moe_dispatcher::flex;  // HybridEP
  // Megatron-FSDP: parameters, gradients and optimizer states sharded over the 8 GPUs.
  nemo("Llama 3 8B, 8 H100 (NeMo 25.11, FSDP)", "models/llama-3-8b.json", 8, 1, 1, 1, 1, 1, 128,
       8192, "", 14451);
  out.back().j.sharding = dp_sharding::optim_grads_params;

  // DeepSeek-V3 (arXiv 2412.19437), §1 and Table 1: 180K H800 GPU hours a trillion tokens, on
  // the job and cluster of presets/deepseek-v3 (pp 16, ep 64, dp 128, DualPipe).
  out.push_back({"DeepSeek-V3, 2048 H800",
                 "DeepSeek-V3 report, Table 1",
                 "",
                 "",
                 {},
                 reported::tokens_per_s_per_gpu,
                 1e12 / (180e3 * 3600),
                 false,
                 "deepseek-v3"});
  return out;
}

/// weft's figure for run `r` in the paper's unit.
double weft_figure(const run& r, const estimate& e, const transformer& m) {
  switch (r.unit) {
    case reported::step_s:
      return e.step.count();
    case reported::tflops_per_gpu:  // the papers count attention's whole square
      return model_flops(m, static_cast<double>(r.j.batch()) * r.j.seq, r.j.seq,
                         attention_count::whole) /
             e.step.count() / r.j.devices() / 1e12;
    case reported::tokens_per_s_per_gpu:
      return e.tokens_per_s / r.j.devices();
  }
  return 0;
}

/// The model with one part switched off: what each adds to the agreement.
struct variant {
  const char* name;
  estimate_options options;
  /// Collectives at the links' own bandwidth whatever their size, one NIC a device.
  bool link_bandwidth = false;
  bool flat_busbw = false;  ///< collectives at the fabric's peak bus bandwidth, any size
  bool no_fp8 = false;      ///< the job's FP8 recipe (DeepSeek-V3's) dropped: all bf16
  bool no_wait = false;     ///< transfers as PyTorch's runtime issues them, not Megatron-LM's
};
constexpr variant variants[] = {
    {"weft", {}},
    {"-shapes", {.matmul_shapes = false}},
    {"-memory", {.memory_bound = false}},
    {"-nccl", {}, true},
    {"-launch", {.launches = false}},
    {"-sizes", {}, false, true},
    {"-fp8", {}, false, false, true},
    {"-p2p", {}, false, false, false, true},
};

/// A rank's step by part, averaged over the pipeline ranks.
struct step_parts {
  std::vector<std::pair<const char*, double>> parts;
  explicit step_parts(const estimate& e) {
    const auto n = static_cast<double>(e.breakdown.size());
    const auto add = [&](const char* name, auto of) {
      double sum = 0;
      for (const rank_breakdown& b : e.breakdown) sum += of(b).count();
      parts.emplace_back(name, sum / n);
    };
    add("compute", [](const rank_breakdown& b) { return b.work.compute() + b.work.launch; });
    add("recompute", [](const rank_breakdown& b) { return b.work.recompute; });
    add("TP", [](const rank_breakdown& b) { return b.work.tp; });
    add("CP", [](const rank_breakdown& b) { return b.work.cp; });
    add("EP", [](const rank_breakdown& b) { return b.work.ep - b.hidden; });
    add("PP wait", [](const rank_breakdown& b) { return b.transfers; });
    add("bubble", [](const rank_breakdown& b) { return b.bubble; });
    add("DP sync", [](const rank_breakdown& b) { return b.grad_sync; });
    add("optimizer", [](const rank_breakdown& b) { return b.optimizer; });
  }
};

/// Where the chosen plan's step is shorter than the published one's: the two parts that gain
/// the most, in seconds a rank.
std::string why(const estimate& published, const estimate& chosen) {
  const step_parts a(published), b(chosen);
  std::vector<std::pair<double, const char*>> gains;
  for (std::size_t i = 0; i < a.parts.size(); ++i)
    gains.emplace_back(a.parts[i].second - b.parts[i].second, a.parts[i].first);
  std::sort(gains.rbegin(), gains.rend());
  std::string out;
  for (std::size_t i = 0; i < 2 && gains[i].first > 0; ++i) {
    char text[64];
    std::snprintf(text, sizeof text, "%s%s -%.2f s", out.empty() ? "" : ", ", gains[i].second,
                  gains[i].first);
    out += text;
  }
  return out.empty() ? "none shorter" : out;
}

std::string sizes(const job& j) {
  char text[160];
  const std::string etp = j.etp() != j.tp ? "/" + std::to_string(j.etp()) : "";
  std::snprintf(text, sizeof text, "tp%d pp%d dp%d cp%d ep%d%s mbs%d %s %s%s", j.tp, j.pp, j.dp,
                j.cp, j.ep, etp.c_str(), j.micro_batch_size, recompute_text(j).c_str(),
                j.schedule.c_str(), j.chunks > 1 ? ("x" + std::to_string(j.chunks)).c_str() : "");
  return text;
}

/// `--choose`: each run's configuration as weft would choose it, beside the published one.
int choose(double budget) {
  std::printf("%-24s %-44s %9s  %-44s %9s %7s  %s\n", "run", "published configuration", "weft s",
              "weft's choice", "step s", "gain", "where (s a rank)");
  for (const run& r : runs()) {
    if (r.korthikanti && r.source.find("full recompute") != std::string_view::npos) continue;
    transformer m;
    cluster c;
    job j = r.j;
    if (!r.preset.empty()) {
      const preset p = read_preset(std::string(WEFT_PRESETS_DIR) + "/" + std::string(r.preset));
      m = p.model.model;
      j = p.job.spec;
      c = p.cluster.spec;
    } else {
      m = read_hf_config(read_file(std::string(WEFT_PRESETS_DIR) + "/" + std::string(r.model)))
              .model;
      c = *find_cluster(r.cluster);
    }
    const estimate published = estimate_job(m, j, c);
    configuration_search_options o;
    o.budget_s = budget;
    o.top = 1;
    // Megatron-LM's runtime where the run was Megatron-LM's; a trainer of its own (BLOOM's
    // DeepSpeed) keeps to its own rules.
    o.space.runtime = j.runtime == pipeline_runtime::megatron && !j.own_trainer()
                          ? runs_on::megatron
                          : runs_on::any;
    try {
      const configuration_search_result found = search_configurations(m, j, c, o);
      if (found.top.empty()) {
        std::printf("%-24.24s none fitting found in %.0f s\n", std::string(r.name).c_str(), budget);
        continue;
      }
      const plan_choice& best = found.top.front().best;
      const estimate chosen = estimate_job(m, best.tried, c);
      std::printf("%-24.24s %-44.44s %9.3f  %-44.44s %9.3f %+6.1f%%  %s%s\n",
                  std::string(r.name).c_str(), sizes(j).c_str(), published.step.count(),
                  sizes(best.tried).c_str(), best.step.count(),
                  100 * (published.step / best.step - 1), why(published, chosen).c_str(),
                  found.complete ? "" : " (budget ran out)");
    } catch (const std::exception& x) {
      std::printf("%-24.24s cannot be searched: %s\n", std::string(r.name).c_str(), x.what());
    }
  }
  return 0;
}

/// One of Narayanan et al. 2021's measured sweeps (arXiv 2104.04473, §5.4, Figures 13-15): one
/// model and batch on 64 A100s, split every way along two axes, TFLOP/s a GPU as their Eq. 3
/// counts them. The figures print no numbers: the values are read off the plotted markers
/// (about ±3 TFLOP/s); where two markers overlap, the middle of the range they cover.
struct sweep {
  std::string_view figure, model;  ///< model: a config.json under presets/models
  int batch;
  char axes;  ///< 'p': (pipeline, tensor); 'd': (pipeline, data); 't': (tensor, data)
  std::vector<std::pair<std::pair<int, int>, double>> points;  ///< (first, second) -> TFLOP/s
};

std::vector<sweep> sweeps() {
  // §5.4.1: "a 161-billion-parameter GPT model (32 transformer layers ..., 128 attention heads,
  // hidden size of 20480)"; §5.4.2-5.4.3: "a 5.9-billion-parameter GPT model (32 transformer
  // layers, 32 attention heads, hidden size of 3840)", micro-batch size 1. Sequence 2048 and
  // vocabulary 51,200 as every model of §5.
  using points = std::vector<std::pair<std::pair<int, int>, double>>;
  const auto figure = [](std::string_view name, std::string_view model, char axes) {
    return [=](int batch, points p) { return sweep{name, model, batch, axes, std::move(p)}; };
  };
  const auto fig13 = figure("Fig. 13 (p, t)", "models/gpt-161b.json", 'p');
  const auto fig14 = figure("Fig. 14 (p, d)", "models/gpt-5.9b.json", 'd');
  const auto fig15 = figure("Fig. 15 (t, d)", "models/gpt-5.9b.json", 't');
  return {
      fig13(32, {{{2, 32}, 103}, {{4, 16}, 132}, {{8, 8}, 140}, {{16, 4}, 111}, {{32, 2}, 91}}),
      fig13(128, {{{2, 32}, 107}, {{4, 16}, 146}, {{8, 8}, 165}, {{16, 4}, 162}, {{32, 2}, 148}}),
      fig14(32, {{{2, 32}, 62}, {{4, 16}, 56}, {{8, 8}, 53}, {{16, 4}, 49}, {{32, 2}, 43}}),
      fig14(512, {{{2, 32}, 148}, {{4, 16}, 141}, {{8, 8}, 129}, {{16, 4}, 114}, {{32, 2}, 90}}),
      fig15(32, {{{2, 32}, 56}, {{4, 16}, 54}, {{8, 8}, 55}, {{16, 4}, 38}, {{32, 2}, 22}}),
      fig15(128, {{{2, 32}, 103}, {{4, 16}, 88}, {{8, 8}, 70}, {{16, 4}, 38}, {{32, 2}, 22}}),
      fig15(512, {{{2, 32}, 127}, {{4, 16}, 104}, {{8, 8}, 75}, {{16, 4}, 38}, {{32, 2}, 22}}),
  };
}

/// Ranks of `v` from 1, ties given their average rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) out[order[k]] = (static_cast<double>(i + j) + 2) / 2;
    i = j + 1;
  }
  return out;
}

/// Spearman's rank correlation: the Pearson correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> x = ranks(a), y = ranks(b);
  const auto n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

/// Megatron-LM of 2021 as §5 ran it: full recomputation (their Eq. 3 assumes it), attention as
/// matmuls and a fused softmax, 1F1B waiting for each transfer, sent scattered over tp.
job narayanan(const sweep& s, int first, int second) {
  job j = megatron(1, 1, 1, s.batch, recompute::full, false, "1f1b", 1);
  (s.axes == 't' ? j.tp : j.pp) = first;
  (s.axes == 'p' ? j.tp : j.dp) = second;
  return j;
}

/// Narayanan et al.'s Eq. 3: a step's FLOPs with full recomputation.
double eq3_flops(const transformer& m, double batch, double seq) {
  const double l = m.layers, h = m.hidden, V = m.vocab;
  return 96 * batch * seq * l * h * h * (1 + seq / (6 * h) + V / (16 * l * h));
}

/// vTrain's measured runs (Bang et al., MICRO 2024; VIA-Research/vTrain, data/
/// ground_truth_multi.csv, "collected using Megatron-DeepSpeed"): four GPT models, each on one
/// A100 cluster split many ways, batch 1536 of 2048 tokens (the two smaller 512 and 1024), every
/// layer recomputed (its configs' `use_checkpoint`), 1F1B; the nodes' network 800 Gb/s (its
/// configs' `inter_node_bandwidth`: four 200 Gb/s HDR NICs a node). The vocabulary is not
/// stated: 51,200 here, GPT-2's padded as the other presets'.
struct vtrain_model {
  std::string_view name, file;  ///< file: a config.json under presets/models
  int batch;
};
constexpr vtrain_model vtrain_models[] = {{"3.6B, 64 A100", "models/gpt-3.6b.json", 512},
                                          {"18.4B, 256 A100", "models/gpt-18.4b.json", 1024},
                                          {"39.1B, 512 A100", "models/gpt-39.1b.json", 1536},
                                          {"175B, 512 A100", "models/gpt3-175b.json", 1536}};
struct vtrain_run {
  int model, tp, dp, pp, micro;
  double ms;  ///< the measured iteration
};
constexpr vtrain_run vtrain_runs[] = {
    {0, 1, 64, 1, 8, 3566.5},   {0, 1, 64, 1, 4, 3638.3},   {0, 2, 32, 1, 8, 3975.2},
    {0, 1, 64, 1, 2, 3700.5},   {0, 2, 32, 1, 16, 3937.5},  {0, 2, 32, 1, 4, 4078.2},
    {0, 2, 32, 1, 2, 4264.2},   {0, 4, 16, 1, 16, 4492.1},  {0, 4, 16, 1, 32, 4548.2},
    {0, 4, 16, 1, 8, 4634.4},   {0, 4, 16, 1, 4, 4764},     {0, 1, 32, 2, 4, 4382.1},
    {0, 1, 32, 2, 2, 4034.9},   {0, 4, 16, 1, 2, 6228.3},   {0, 1, 32, 2, 8, 5045.6},
    {0, 8, 8, 1, 64, 9838.9},   {0, 8, 8, 1, 32, 4972.3},   {0, 8, 8, 1, 16, 5017.8},
    {0, 8, 8, 1, 8, 5178},      {0, 8, 8, 1, 4, 5618},      {0, 8, 8, 1, 2, 8880.9},
    {0, 16, 4, 1, 32, 10580.6}, {0, 16, 4, 1, 16, 10719.3}, {0, 16, 4, 1, 8, 10894},
    {0, 16, 4, 1, 4, 11960.1},  {0, 16, 4, 1, 2, 13472.2},  {1, 8, 32, 1, 8, 9603.6},
    {1, 8, 32, 1, 16, 10506.6}, {1, 8, 32, 1, 4, 9927.6},   {1, 8, 32, 1, 2, 10453.3},
    {1, 4, 32, 2, 8, 10856.3},  {1, 4, 32, 2, 4, 10950.4},  {1, 4, 32, 2, 2, 10031.6},
    {1, 2, 32, 4, 4, 10825},    {1, 1, 32, 8, 4, 12379},    {1, 8, 16, 2, 2, 10434.8},
    {1, 8, 8, 4, 2, 10926.4},   {1, 8, 4, 8, 8, 11026.1},   {1, 2, 16, 8, 8, 13157.5},
    {1, 16, 16, 1, 2, 20414.8}, {1, 8, 4, 8, 32, 16241.4},  {2, 2, 32, 8, 2, 21890.4},
    {2, 4, 32, 4, 2, 13875.5},  {2, 2, 16, 16, 2, 23747.9}, {2, 4, 32, 4, 3, 16185.5},
    {2, 4, 32, 4, 4, 15625.6},  {2, 4, 16, 8, 2, 16070.6},  {2, 2, 32, 8, 3, 19067.2},
    {2, 4, 16, 8, 3, 17606.1},  {2, 4, 8, 16, 2, 14529.6},  {2, 2, 16, 16, 3, 26188.8},
    {2, 4, 16, 8, 4, 17413.6},  {2, 4, 32, 4, 6, 18532.1},  {2, 8, 32, 2, 6, 14915.5},
    {2, 8, 32, 2, 8, 15212.8},  {2, 8, 32, 2, 4, 14757.3},  {2, 8, 32, 2, 12, 17126.8},
    {2, 8, 32, 2, 3, 14850.4},  {2, 4, 8, 16, 3, 15023.9},  {2, 8, 32, 2, 2, 14614},
    {2, 4, 8, 16, 4, 15585.5},  {2, 8, 16, 4, 2, 14713.4},  {2, 4, 16, 8, 6, 16087},
    {2, 8, 16, 4, 3, 14833.8},  {2, 8, 16, 4, 4, 14750.7},  {2, 8, 16, 4, 6, 15249.4},
    {2, 8, 8, 8, 2, 15001.9},   {2, 8, 16, 4, 8, 15814.5},  {2, 8, 8, 8, 3, 15270.7},
    {2, 8, 8, 8, 4, 14967.1},   {2, 4, 8, 16, 6, 20044.1},  {2, 8, 8, 8, 6, 15775.3},
    {2, 8, 16, 4, 12, 17182.4}, {2, 1, 32, 16, 3, 19991},   {2, 8, 4, 16, 2, 15639.4},
    {2, 2, 32, 8, 6, 23062.9},  {2, 8, 4, 16, 3, 16360.8},  {2, 8, 8, 8, 8, 16413.4},
    {2, 8, 4, 16, 4, 15944.5},  {2, 8, 4, 16, 6, 16232.8},  {2, 2, 16, 16, 6, 27228.4},
    {2, 8, 8, 8, 12, 17999.5},  {2, 4, 16, 8, 12, 20614.8}, {2, 8, 4, 16, 8, 16877.1},
    {2, 8, 4, 16, 12, 18568.3}, {2, 4, 8, 16, 12, 27810.3}, {2, 8, 8, 8, 24, 23171.1},
    {2, 8, 4, 16, 24, 24169.9}, {3, 4, 8, 16, 2, 54255.9},  {3, 4, 8, 16, 3, 55236},
    {3, 4, 4, 32, 2, 53909.6},  {3, 4, 4, 32, 2, 53937.9},  {3, 4, 4, 32, 3, 56297.2},
    {3, 2, 8, 32, 2, 57411.2},  {3, 4, 8, 16, 4, 57720},    {3, 8, 8, 8, 2, 55109.6},
    {3, 8, 8, 8, 3, 56176.5},   {3, 8, 4, 16, 2, 56315.8},  {3, 4, 4, 32, 4, 59333.2},
    {3, 8, 8, 8, 4, 58240.3},   {3, 8, 4, 16, 3, 55677.5},  {3, 8, 4, 16, 4, 57504.3},
    {3, 8, 2, 32, 2, 58555.4},  {3, 8, 2, 32, 3, 57324.4},  {3, 2, 8, 32, 3, 64296.3},
    {3, 8, 4, 16, 6, 60519.2},  {3, 4, 4, 32, 6, 66632.5},  {3, 8, 2, 32, 4, 59147.5},
    {3, 8, 2, 32, 6, 62636.8}};

/// What the sweeps add up to: per point the step's error, per sweep the rank correlation of the
/// measured and predicted steps and how far weft's first choice is below the measured best.
struct sweep_tally {
  std::vector<double> errors, correlations, regrets;

  /// One sweep's steps, measured and weft's (seconds, or anything proportional to them).
  void add(const std::vector<double>& measured, const std::vector<double>& predicted) {
    std::vector<double> signed_errors;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      signed_errors.push_back(predicted[i] / measured[i] - 1);
      errors.push_back(std::abs(signed_errors.back()));
    }
    const double best = *std::min_element(measured.begin(), measured.end());
    const auto first = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
    const double rho = spearman(measured, predicted), regret = 1 - best / measured[first];
    correlations.push_back(rho);
    regrets.push_back(regret);
    const auto worst =
        std::max_element(signed_errors.begin(), signed_errors.end(),
                         [](double a, double b) { return std::abs(a) < std::abs(b); });
    std::printf(
        "\n  step error median %+.1f%%, worst %+.1f%%; rank correlation %.2f; weft's first "
        "choice measured %.1f%% below the best\n",
        100 * median(signed_errors), 100 * *worst, rho, 100 * regret);
  }
  void print(const char* what) const {
    std::printf(
        "%s, %zu points: |error| of the step median %.1f%%, worst %.1f%%; rank correlation "
        "median %.2f, worst %.2f; first choice below the measured best: median %.1f%%, "
        "worst %.1f%%\n",
        what, errors.size(), 100 * median(errors),
        100 * *std::max_element(errors.begin(), errors.end()), median(correlations),
        *std::min_element(correlations.begin(), correlations.end()), 100 * median(regrets),
        100 * *std::max_element(regrets.begin(), regrets.end()));
  }
};

transformer preset_model(std::string_view file) {
  return read_hf_config(read_file(std::string(WEFT_PRESETS_DIR) + "/" + std::string(file))).model;
}

/// Megatron-DeepSpeed as vTrain ran it: Megatron's layers without sequence parallelism, fp16,
/// DeepSpeed's pipeline waiting for each transfer, each tensor-parallel rank sending its share
/// of the activation and the receivers gathering it whole (DeepSpeed's runtime/pipe/engine.py:
/// `is_pipe_partitioned = self.is_model_parallel`, a PartitionedTensor).
job vtrain_job(const vtrain_model& v, const vtrain_run& r) {
  return megatron(r.tp, r.pp, r.dp, v.batch, recompute::full, false, "1f1b", 1, r.micro);
}

/// Aleph Alpha's Megatron-like trainer ("Scaling", github.com/Aleph-Alpha/scaling) as Hagemann
/// et al. 2023 ran it: bf16, ZeRO-1 (optimizer states sharded over the data-parallel ranks,
/// the bf16 gradients all-reduced whole in fp32 after the backward and the updated parameters
/// all-gathered, nothing overlapped), 1F1B
/// waiting for each transfer, FlashAttention-2; its norms, SwiGLU, rotary embeddings and loss
/// PyTorch's eager operations.
job hagemann_job(const bench::hagemann_sheet& s, const bench::hagemann_run& r) {
  job j;
  j.tp = r.tp;
  j.pp = r.pp;
  j.dp = s.devices / (r.tp * r.pp);
  j.micro_batch_size = r.micro;
  j.global_batch_size = s.sequences;
  j.seq = s.seq;
  j.policy = r.recompute ? recompute::full : recompute::none;
  j.sequence_parallel = r.sp != 0;
  j.runtime = pipeline_runtime::megatron;
  j.sharding = dp_sharding::optim;
  // Gradients kept in bf16 (each parameter's own .grad), cast to fp32 only in the all-reduce's
  // buckets (optimizer/allreduce.py).
  j.grad_reduce_in_bf16 = true;
  j.grad_all_reduce_fp32 = true;
  // Each micro-batch's gradients added to them by PyTorch's autograd, a pass of its own.
  j.gradient_accumulation_fusion = false;
  // PyTorch's RMSNorm, SwiGLU and rotary embeddings, eager — where the runs took the fused
  // RMSNorm kernel, the norms alone fused.
  j.eager = true;
  j.fused_rms_norm = r.rms_kernel != 0;
  // Its loss, kernel or not: the logits gathered whole over tp (ColumnParallelLinear's
  // parallel_output off by default), cast to fp32 and given to PyTorch's cross_entropy
  // (transformer/model/losses/cross_entropy.py).
  j.eager_loss = true;
  return j;
}

/// What the memory model says of a sweep's runs against what ran and what ran out of memory.
struct memory_tally {
  int agree = 0, missed_oom = 0, false_oom = 0;
  void add(bool measured_ran, bool fits) {
    if (measured_ran == fits)
      ++agree;
    else if (fits)
      ++missed_oom;
    else
      ++false_oom;
  }
};

/// Weft's first choice of a group: the fastest it says fits, and what it measured (0: it ran out
/// of memory; -1: weft says none fits).
struct choice {
  double predicted = 0, measured = -1;
  void offer(double step, double measured_step) {
    if (predicted == 0 || step < predicted) {
      predicted = step;
      measured = measured_step;
    }
  }
};

/// Over the groups: how many first choices ran out of memory, and how far the others measured
/// from the group's best.
struct choice_tally {
  int out_of_memory = 0;
  std::vector<double> regrets;
  void add(const choice& c, double best) {
    if (c.measured == 0)
      ++out_of_memory;
    else if (c.measured > 0)
      regrets.push_back(c.measured / best - 1);
  }
  void print(const char* criterion) const {
    std::printf(
        "Hagemann et al., weft's first choices judged to fit by the %s: %d ran out of memory; "
        "the %zu that ran measured %.1f%% below the best at the median, %.1f%% at worst\n",
        criterion, out_of_memory, regrets.size(), 100 * median(regrets),
        regrets.empty() ? 0.0 : 100 * *std::max_element(regrets.begin(), regrets.end()));
  }
};

/// `--sweeps`, Hagemann et al.: per sheet and kernel, the runs that ran, their steps measured
/// and weft's, and weft's first choice among those it says fit — which may be one that ran out
/// of memory. Beside weft's fit (the peak within what the device leaves a job,
/// `allocatable_bytes`), the peak against the raw device's bytes (no context, no reserve), for
/// comparison.
void compare_hagemann(const cluster& a100, sweep_tally& tally, memory_tally& memory,
                      memory_tally& memory_raw) {
  using bench::hagemann_runs;
  using bench::hagemann_sheets;
  int unplanned = 0;
  choice_tally weft_choices, raw_choices;
  // Two sheets hold a few configurations twice (measured again): each counted once, as first
  // measured.
  std::set<std::tuple<int, int, int, int, int, int, int>> seen;
  for (std::size_t s = 0; s < std::size(hagemann_sheets); ++s)
    for (const int rms : {0, 1}) {
      const bench::hagemann_sheet& sh = hagemann_sheets[s];
      const transformer m = preset_model(sh.model);
      const bool sp_sheet = s >= 5;
      std::vector<double> measured, predicted;
      std::string points;
      // Weft's first choice among the runs it says fit — and among those whose peak is within
      // the raw device — and what it measured (0: out of memory).
      choice by_weft, by_raw;
      for (const bench::hagemann_run& r : hagemann_runs) {
        if (r.sheet != static_cast<int>(s) || r.rms_kernel != rms) continue;
        if (!seen.insert({r.sheet, r.recompute, r.rms_kernel, r.micro, r.tp, r.pp, r.sp}).second)
          continue;
        if (m.layers % r.pp != 0) {  // their trainer splits layers unevenly; how, not stated
          ++unplanned;
          continue;
        }
        const estimate e = estimate_job(m, hagemann_job(sh, r), a100);
        const double peak = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
        const bool fits = peak <= allocatable_bytes(a100.hbm_bytes), ran = r.step_s > 0;
        const bool fits_raw = peak <= a100.hbm_bytes;
        memory.add(ran, fits);
        memory_raw.add(ran, fits_raw);
        if (fits) by_weft.offer(e.step.count(), r.step_s);
        if (fits_raw) by_raw.offer(e.step.count(), r.step_s);
        char point[96];
        const char* sp = sp_sheet ? (r.sp ? ",sp" : ",-") : "";
        if (ran)
          std::snprintf(point, sizeof point, " (%d,%d,%d,%s%s) %.1f/%.1f%s", r.tp, r.pp, r.micro,
                        r.recompute ? "full" : "none", sp, r.step_s, e.step.count(),
                        fits ? "" : "(over)");
        else if (fits)  // ran out of memory where weft says it fits
          std::snprintf(point, sizeof point, " (%d,%d,%d,%s%s) OOM/%.1f", r.tp, r.pp, r.micro,
                        r.recompute ? "full" : "none", sp, e.step.count());
        else
          continue;
        points += point;
        if (!ran) continue;
        measured.push_back(r.step_s);
        predicted.push_back(e.step.count());
      }
      if (measured.size() < 2) continue;
      std::printf(
          "Hagemann et al. %s, FlashAttention-2%s (tp,pp,mbs,recompute%s measured/weft s):%s",
          std::string(sh.name).c_str(), rms ? " + RMSNorm kernel" : "", sp_sheet ? ",sp" : "",
          points.c_str());
      tally.add(measured, predicted);
      const double best = *std::min_element(measured.begin(), measured.end());
      std::printf("  weft's first choice among those it says fit:");
      for (const auto& [what, c, t] : {std::tuple{"weft", &by_weft, &weft_choices},
                                       std::tuple{"raw device", &by_raw, &raw_choices}}) {
        t->add(*c, best);
        if (c->measured == 0)
          std::printf(" (%s) ran out of memory;", what);
        else
          std::printf(" (%s) measured %.1f%% below the best;", what,
                      100 * (c->measured / best - 1));
      }
      std::printf("\n");
    }
  std::printf(
      "Hagemann et al.: %d runs over pipelines that split the layers unevenly not planned\n",
      unplanned);
  weft_choices.print("peak against what the device leaves a job");
  raw_choices.print("peak against the raw device");
}

/// The least-squares line y = a + b x through the points: {a, b}.
std::pair<double, double> line_through(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double b = sxx > 0 ? sxy / sxx : 0;
  return {my - b * mx, b};
}

/// `--sweeps`, BigScience's batch-size warm-up on BLOOM's 48 nodes (train/tr11-176B-ml/
/// chronicles-prequel.md, "Batchsize Warmup", 02-26): a 182B model of BLOOM's shape (78 layers,
/// hidden 13824, 96 heads; `presets/models/bigscience-182b.json`) at tp 4, pp 12, dp 8,
/// micro-batches of 2, its global batch 512 ... 2048 — the same job four times, so the line
/// through the steps splits what a step costs once (its intercept: the pipeline's fill and
/// drain, the gradient reduction, the optimizer) from what each batch of sequences costs (its
/// slope). Run as the bloom-176b preset's job on its cluster, in fp16 (the BF16 optimizer came
/// two days later, "Rebalancing layers"), the layers split 7 a stage and 1 on the last ("78/12 =
/// 6.5 - so the last stage has 1 block, while the rest have 7").
void compare_warmup() {
  const preset p = read_preset(std::string(WEFT_PRESETS_DIR) + "/bloom-176b");
  const transformer m = preset_model("models/bigscience-182b.json");
  job j = p.job.spec;
  // fp16 (DeepSpeed's fp16 optimizer, not the BF16 one): its gradients accumulated and
  // reduced in 16 bits.
  j.fp16 = j.grad_reduce_in_bf16 = true;
  j.deepspeed_bf16 = false;
  j.layout = "Et*7|(t*7|)*10,t*1L";
  const std::vector<double> batches{512, 1024, 1536, 2048}, measured{35.77, 59.65, 83.11, 107.12};
  std::vector<double> predicted;
  std::printf("BigScience's batch-size warm-up, 182B on 384 A100 (global batch: measured/weft s):");
  for (std::size_t i = 0; i < batches.size(); ++i) {
    j.global_batch_size = static_cast<int>(batches[i]);
    predicted.push_back(estimate_job(m, j, p.cluster.spec).step.count());
    std::printf(" %g %.2f/%.2f", batches[i], measured[i], predicted.back());
  }
  const auto [a, b] = line_through(batches, measured);
  const auto [wa, wb] = line_through(batches, predicted);
  std::printf(
      "\n  once a step: measured %.1f s, weft %.1f s (%+.1f%%); each 512 sequences: measured "
      "%.2f s, weft %.2f s (%+.1f%%)\n",
      a, wa, 100 * (wa / a - 1), 512 * b, 512 * wb, 100 * (wb / b - 1));
}

/// BigScience's last round of configurations before BLOOM's run (train/tr11-176B-ml/
/// chronicles-prequel.md, "Rebalancing layers", 02-28): BLOOM-shaped models (ALiBi, a tied
/// vocabulary of 250,880) of several widths, depths and head counts on the same 48 nodes, 2048
/// sequences of 2048, every layer recomputed, with the BF16 optimizer and the partition that
/// counts each embedding as a layer — the bloom-176b preset's job — under several (dp, tp, pp,
/// micro-batch); the step measured (0: out of memory) and the memory nvidia-smi showed ("Mem",
/// GB as written; 0: not given).
struct bigscience_run {
  int hidden, layers, heads, dp, tp, pp, micro;
  double step_s, memory_gb;
};
constexpr bigscience_run bigscience_runs[] = {
    {12288, 106, 64, 8, 4, 12, 2, 116.54, 67},  {12288, 106, 96, 8, 4, 12, 2, 118.79, 65},
    {12288, 106, 128, 8, 4, 12, 2, 121.42, 67}, {12288, 106, 96, 8, 4, 12, 4, 120.34, 79},
    {12288, 100, 64, 16, 4, 6, 2, 0, 0},        {12288, 100, 64, 16, 4, 6, 1, 0, 0},
    {12288, 100, 64, 8, 8, 6, 2, 139.72, 61},   {12288, 100, 64, 8, 8, 6, 4, 120.96, 72},
    {13312, 82, 64, 4, 8, 12, 4, 111.79, 52},   {13312, 82, 64, 8, 4, 12, 2, 104.45, 63},
    {13312, 82, 104, 8, 4, 12, 2, 123.71, 62},  {13312, 82, 128, 8, 4, 12, 2, 108.78, 60},
    {13312, 82, 64, 8, 4, 12, 4, 104.82, 74},   {13312, 94, 128, 8, 4, 12, 2, 124.10, 67},
    {14336, 70, 64, 4, 8, 12, 2, 121.63, 40},   {14336, 70, 64, 8, 4, 12, 2, 102.03, 59},
    {14336, 70, 112, 8, 4, 12, 2, 104.50, 59},  {14336, 70, 128, 8, 4, 12, 2, 105.89, 60},
    {14336, 70, 64, 8, 4, 12, 4, 102.27, 73},   {14336, 82, 128, 8, 4, 12, 2, 0, 0},
};

/// The model of run `r`: BLOOM's config.json with its width, depth and heads.
transformer bigscience_model(const bigscience_run& r) {
  char config[256];
  std::snprintf(config, sizeof config,
                R"({"model_type": "bloom", "n_layer": %d, "hidden_size": %d, "n_head": %d, )"
                R"("vocab_size": 250880, "attention_dropout": 0.1, "hidden_dropout": 0.1})",
                r.layers, r.hidden, r.heads);
  return read_hf_config(config).model;
}

/// `--sweeps`, BigScience's round: per model (width, depth, heads) the configurations it ran,
/// the step measured and weft's, weft's first choice among those it says fit, and the memory
/// nvidia-smi showed beside weft's view of it.
void compare_bigscience(sweep_tally& tally) {
  const preset p = read_preset(std::string(WEFT_PRESETS_DIR) + "/bloom-176b");
  const cluster& c = p.cluster.spec;
  std::vector<double> memory_errors;
  std::set<std::tuple<int, int, int>> done;
  for (const bigscience_run& g : bigscience_runs) {
    if (!done.insert({g.hidden, g.layers, g.heads}).second) continue;
    const transformer m = bigscience_model(g);
    std::vector<double> measured, predicted;
    choice first;
    std::printf(
        "BigScience's round, hidden %d, %d layers, %d heads (dp,tp,pp,mbs measured/weft s, "
        "memory measured GB/weft GiB):",
        g.hidden, g.layers, g.heads);
    for (const bigscience_run& r : bigscience_runs) {
      if (r.hidden != g.hidden || r.layers != g.layers || r.heads != g.heads) continue;
      job j = p.job.spec;
      j.dp = r.dp;
      j.tp = r.tp;
      j.pp = r.pp;
      j.micro_batch_size = r.micro;
      const int per = (r.layers + 2) / r.pp;  // each embedding counted as a layer
      j.layout = "Et*" + std::to_string(per - 1) + "|(t*" + std::to_string(per) + "|)*" +
                 std::to_string(r.pp - 2) + ",t*" + std::to_string(per - 1) + "L";
      const estimate e = estimate_job(m, j, c);
      const double peak = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
      const bool fits = peak <= allocatable_bytes(c.hbm_bytes);
      const double shown = as_nvidia_smi(peak) / (1024.0 * 1024 * 1024);
      if (fits) first.offer(e.step.count(), r.step_s);
      if (r.step_s > 0) {
        measured.push_back(r.step_s);
        predicted.push_back(e.step.count());
        memory_errors.push_back(std::abs(shown / r.memory_gb - 1));
        std::printf(" (%d,%d,%d,%d) %.1f/%.1f %.0f/%.1f%s", r.dp, r.tp, r.pp, r.micro, r.step_s,
                    e.step.count(), r.memory_gb, shown, fits ? "" : "(over)");
      } else {
        std::printf(" (%d,%d,%d,%d) OOM/%.1f %.1f%s", r.dp, r.tp, r.pp, r.micro, e.step.count(),
                    shown, fits ? "" : "(over)");
      }
    }
    if (measured.size() >= 2)
      tally.add(measured, predicted);
    else
      std::printf("\n");
    if (first.measured == 0)
      std::printf("  weft's first choice among those it says fit ran out of memory\n");
    else if (first.measured > 0 && measured.size() >= 2)
      std::printf("  weft's first choice among those it says fit measured %.1f%% below the best\n",
                  100 * (first.measured / *std::min_element(measured.begin(), measured.end()) - 1));
  }
  std::printf(
      "BigScience's round, memory: |error| of nvidia-smi's view median %.1f%%, worst %.1f%%\n",
      100 * median(memory_errors),
      100 * *std::max_element(memory_errors.begin(), memory_errors.end()));
}

/// `--sweeps`: each measured sweep beside weft's, and how well weft orders it.
int compare_sweeps() {
  const cluster a100 = *find_cluster("a100-80g");
  sweep_tally narayanan_tally;
  for (const sweep& s : sweeps()) {
    const transformer m = preset_model(s.model);
    std::vector<double> measured, predicted;
    std::printf("%s, batch %d:", std::string(s.figure).c_str(), s.batch);
    for (const auto& [split, tflops] : s.points) {
      const job j = narayanan(s, split.first, split.second);
      const estimate e = estimate_job(m, j, a100);
      const double flops = eq3_flops(m, s.batch, j.seq) / 64;
      measured.push_back(flops / (tflops * 1e12));
      predicted.push_back(e.step.count());
      std::printf("  (%d,%d) %.0f/%.0f", split.first, split.second, tflops,
                  flops / e.step.count() / 1e12);
    }
    narayanan_tally.add(measured, predicted);
  }
  cluster four_nics = a100;
  four_nics.fabric.nics_per_node = 4;
  sweep_tally vtrain_tally;
  for (std::size_t v = 0; v < std::size(vtrain_models); ++v) {
    const transformer m = preset_model(vtrain_models[v].file);
    std::vector<double> measured, predicted;
    std::printf("vTrain %s (tp,dp,pp,mbs measured/weft s):",
                std::string(vtrain_models[v].name).c_str());
    for (const vtrain_run& r : vtrain_runs) {
      if (r.model != static_cast<int>(v)) continue;
      const estimate e = estimate_job(m, vtrain_job(vtrain_models[v], r), four_nics);
      measured.push_back(r.ms / 1e3);
      predicted.push_back(e.step.count());
      std::printf(" (%d,%d,%d,%d) %.1f/%.1f", r.tp, r.dp, r.pp, r.micro, r.ms / 1e3,
                  e.step.count());
    }
    vtrain_tally.add(measured, predicted);
    std::printf("  step error median by tp:");  // where the error lies
    for (const int tp : {1, 2, 4, 8, 16}) {
      std::vector<double> of_tp;
      std::size_t i = 0;
      for (const vtrain_run& r : vtrain_runs)
        if (r.model == static_cast<int>(v)) {
          if (r.tp == tp) of_tp.push_back(predicted[i] / measured[i] - 1);
          ++i;
        }
      if (!of_tp.empty()) std::printf(" tp %d %+.0f%%", tp, 100 * median(of_tp));
    }
    std::printf("\n");
  }
  sweep_tally hagemann_tally;
  memory_tally memory, memory_raw;
  compare_hagemann(a100, hagemann_tally, memory, memory_raw);
  compare_warmup();
  sweep_tally bigscience_tally;
  compare_bigscience(bigscience_tally);
  narayanan_tally.print("Narayanan et al. 2021");
  vtrain_tally.print("vTrain");
  hagemann_tally.print("Hagemann et al. 2023");
  bigscience_tally.print("BigScience's round");
  for (const auto& [what, t] :
       {std::pair{"what the device leaves a job", memory}, std::pair{"the raw device", memory_raw}})
    std::printf(
        "Hagemann et al. 2023, memory (the peak against %s): %d runs as weft says "
        "(fit or not), %d weft says fit ran out of memory, %d weft says do not fit ran\n",
        what, t.agree, t.missed_oom, t.false_oom);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--sweeps") {
    try {
      return compare_sweeps();
    } catch (const std::exception& x) {
      std::printf("a sweep cannot be planned: %s\n", x.what());
      return 1;
    }
  }
  if (argc > 1 && std::string_view(argv[1]) == "--choose")
    return choose(argc > 2 ? std::atof(argv[2]) : 2.0);
  const bool check = argc > 1 && std::string_view(argv[1]) == "--check";
  constexpr std::size_t n = std::size(variants);
  std::vector<double> korthikanti[n], all[n];
  int failed = 0;
  std::printf("%-24s %-40s %10s %10s %8s", "run", "source", "published", "weft", "error");
  for (std::size_t v = 1; v < n; ++v) std::printf(" %8s", variants[v].name);
  std::printf("\n");
  for (const run& r : runs()) {
    try {
      run row = r;
      transformer m;
      cluster c;
      if (!r.preset.empty()) {
        const preset p = read_preset(std::string(WEFT_PRESETS_DIR) + "/" + std::string(r.preset));
        m = p.model.model;
        row.j = p.job.spec;
        c = p.cluster.spec;
      } else {
        m = read_hf_config(read_file(std::string(WEFT_PRESETS_DIR) + "/" + std::string(r.model)))
                .model;
        c = *find_cluster(r.cluster);
      }
      double first = 0;
      for (std::size_t v = 0; v < n; ++v) {
        cluster priced = c;
        if (variants[v].link_bandwidth) {
          priced.fabric = {};
          priced.chip.nvlink_by_size = {};
        }
        if (variants[v].flat_busbw) priced.chip.nvlink_by_size = {};
        job asked = row.j;
        if (variants[v].no_fp8) {
          asked.fp8 = fp8_recipe::none;
          asked.fp8_param_gather = false;
          asked.fp8_current_scaling = false;
        }
        // Megatron's combined 1F1B runs only in Megatron's code: its transfers stay Megatron's.
        if (variants[v].no_wait && !asked.overlap_moe_ep_comm) {
          asked.runtime = pipeline_runtime::pytorch;
          asked.scatter_gather_transfers = false;
          asked.overlap_p2p_comm = false;
        }
        const estimate e = estimate_job(m, asked, priced, variants[v].options);
        const double w = weft_figure(row, e, m);
        // The error of the time: a throughput too high is a step too short.
        const double err =
            row.unit == reported::step_s ? w / row.published - 1 : row.published / w - 1;
        if (v == 0) {
          first = w;
          std::printf("%-24.24s %-40.40s %10.4g %10.4g %+7.1f%%", std::string(r.name).c_str(),
                      std::string(r.source).c_str(), r.published, first, 100 * err);
        } else {
          std::printf(" %+7.1f%%", 100 * err);
        }
        all[v].push_back(std::abs(err));
        if (r.korthikanti) korthikanti[v].push_back(std::abs(err));
      }
      std::printf("\n");
    } catch (const std::exception& x) {
      ++failed;
      std::printf("%-24.24s cannot be planned: %s\n", std::string(r.name).c_str(), x.what());
    }
  }
  const auto summary = [](const char* what, const variant& v, const std::vector<double>& e) {
    if (e.empty()) return;
    double mean = 0;
    for (const double x : e) mean += x;
    mean /= static_cast<double>(e.size());
    std::printf("%-9s %s: %zu rows, |error| mean %.1f%%, median %.1f%%, worst %.1f%%\n", v.name,
                what, e.size(), 100 * mean, 100 * median(e),
                100 * *std::max_element(e.begin(), e.end()));
  };
  for (std::size_t v = 0; v < n; ++v)
    summary("Korthikanti et al. Table 5", variants[v], korthikanti[v]);
  for (std::size_t v = 0; v < n; ++v) summary("every row", variants[v], all[v]);
  return check && failed ? 1 : 0;
}
