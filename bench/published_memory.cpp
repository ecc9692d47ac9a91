// weft's memory per device beside measured peaks of public training runs: FlagPerf's Megatron
// runs of Llama 3 8B and 70B (FlagOpen/FlagPerf, training/nvidia/llama3_8B-megatron and
// llama3_70B-megatron READMEs), each the model, the job and the devices as the run states them,
// nothing fitted. FlagPerf samples `nvidia-smi` ("used" of 80 GiB), so weft's peak is compared as
// nvidia-smi shows it: with the caching allocator's reserve and the CUDA context
// (`plan::as_nvidia_smi`). Prints measured, weft and the error per row, the median and worst
// error, and how well weft orders the rows (Spearman's rank correlation) — what a user choosing
// between them relies on (docs/planning.md, "Memory against measured peaks").
//
//   published_memory            the table
//   published_memory --check    also exit 1 when a row cannot be planned (the smoke test)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "published.hpp"

#include <weft/plan/cluster.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/memory.hpp>

#ifndef WEFT_PRESETS_DIR
#error "WEFT_PRESETS_DIR names the presets folder"
#endif

namespace {

using namespace weft;
using namespace weft::plan;
using weft::bench::median;
using weft::bench::read_file;

struct row {
  std::string_view name, model, cluster;  ///< model: a config.json under presets/models
  job j;
  double measured_gib;  ///< nvidia-smi's "used"
};

/// FlagPerf's Megatron-core 0.6 recipe: sequence 8192, one sequence a micro-batch, 512 a step,
/// sequence parallelism, the distributed optimizer, bf16, flash attention (Transformer Engine),
/// 1F1B. (Its README lists recomputation, its script sets none; with flash attention Megatron's
/// selective recomputation keeps the same bytes, so the two readings agree.)
job flagperf(int tp, int pp, int dp, fp8_recipe fp8 = fp8_recipe::none) {
  job j;
  j.tp = tp;
  j.pp = pp;
  j.dp = dp;
  j.seq = 8192;
  j.global_batch_size = 512;
  j.sequence_parallel = tp > 1;
  j.fp8 = fp8;
  return j;
}

std::vector<row> rows() {
  using enum fp8_recipe;
  constexpr std::string_view l8 = "llama-3-8b.json", l70 = "llama-3-70b.json";
  // A800: the A100 80 GB with its NVLink cut; its memory is the A100's. (FlagPerf's 440-H100
  // row, tp 2 x dp 220, is left out: its 512 sequences a step do not split over 220 ranks, and
  // the batch it ran is not stated.)
  return {
      {"8B, A800 x8, pp 2 dp 4", l8, "a100-80g", flagperf(1, 2, 4), 76},
      {"8B, A800 x8, pp 4 dp 2", l8, "a100-80g", flagperf(1, 4, 2), 59},
      {"8B, A800 x8, tp 2 pp 2 dp 2", l8, "a100-80g", flagperf(2, 2, 2), 51},
      {"8B, A800 x8, tp 4 pp 2", l8, "a100-80g", flagperf(4, 2, 1), 35},
      {"8B, A800 x8, pp 8", l8, "a100-80g", flagperf(1, 8, 1), 55},
      {"8B, A800 x8, tp 8", l8, "a100-80g", flagperf(8, 1, 1), 30},
      {"8B, A800 x8, tp 2 pp 4", l8, "a100-80g", flagperf(2, 4, 1), 45},
      {"8B, H100 x8, tp 2 dp 4", l8, "h100-sxm", flagperf(2, 1, 4), 71},
      {"8B, H100 x8, tp 2 dp 4, fp8", l8, "h100-sxm", flagperf(2, 1, 4, hybrid), 74},
      {"8B, H100 x16, tp 2 dp 8", l8, "h100-sxm", flagperf(2, 1, 8), 62},
      {"8B, H100 x16, tp 2 dp 8, fp8", l8, "h100-sxm", flagperf(2, 1, 8, hybrid), 64},
      {"70B, H100 x64, tp 8 pp 4 dp 2", l70, "h100-sxm", flagperf(8, 4, 2), 55},
  };
}

/// Ranks of `v` (1 = smallest; ties share their mean rank).
std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t k = i;
    while (k + 1 < order.size() && v[order[k + 1]] == v[order[i]]) ++k;
    for (std::size_t x = i; x <= k; ++x) r[order[x]] = (static_cast<double>(i + k) / 2) + 1;
    i = k + 1;
  }
  return r;
}

/// Spearman's rank correlation: Pearson's of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> x = ranks_of(a), y = ranks_of(b);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::string_view(argv[1]) == "--check";
  constexpr double GiB = 1024.0 * 1024 * 1024;
  int failed = 0;
  std::vector<double> measured, predicted, errors;
  std::printf("%-32s %12s %14s %14s %8s\n", "run (FlagPerf, nvidia-smi)", "measured GiB",
              "weft peak GiB", "as nvidia-smi", "error");
  for (const row& r : rows()) {
    try {
      const transformer m = read_hf_config(read_file(std::string(WEFT_PRESETS_DIR) + "/models/" +
                                                     std::string(r.model)))
                                .model;
      const estimate e = estimate_job(m, r.j, *find_cluster(r.cluster));
      const double peak = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
      const double shown = as_nvidia_smi(peak);
      const double err = shown / (r.measured_gib * GiB) - 1;
      std::printf("%-32.32s %12.0f %14.1f %14.1f %+7.1f%%\n", std::string(r.name).c_str(),
                  r.measured_gib, peak / GiB, shown / GiB, 100 * err);
      measured.push_back(r.measured_gib);
      predicted.push_back(shown);
      errors.push_back(std::abs(err));
    } catch (const std::exception& x) {
      ++failed;
      std::printf("%-32.32s cannot be planned: %s\n", std::string(r.name).c_str(), x.what());
    }
  }
  if (!errors.empty())
    std::printf("%zu rows: |error| median %.1f%%, worst %.1f%%; rank correlation %.2f\n",
                errors.size(), 100 * median(errors),
                100 * *std::max_element(errors.begin(), errors.end()),
                spearman(measured, predicted));
  return check && failed ? 1 : 0;
}
