// The configuration search (`weft plan --search`, docs/planning.md "Choosing the
// configuration") on the jobs its issue names — Llama 3 405B on 8192 H100s and DeepSeek-V3 on
// 2048 H800s — and GPT-2 on 8 A100s, which it finishes: configurations considered per second,
// the seconds taken, whether it finished, and how far below its best the unexplored bound is.
// Then what making each pipeline shape once saves (`plan::program_cache`): every plan of one
// 405B configuration estimated with its pipeline made afresh, and from a cache, side by side.
//
//   configuration_search [BUDGET_S] [REPEATS]   defaults 8 s and 3 runs; medians printed
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "published.hpp"

#include <weft/plan/best.hpp>
#include <weft/plan/configurations.hpp>
#include <weft/plan/hf_config.hpp>

#ifndef WEFT_TEST_DATA
#error "WEFT_TEST_DATA names the tests' data folder"
#endif

namespace {

using namespace weft::plan;
using weft::bench::median;
using weft::bench::read_file;

struct row {
  const char* name;
  const char* model;  ///< a config.json under tests/data/hf
  const char* cluster;
  long long devices;
  int global_batch;
  double seq;
};

}  // namespace

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 8;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  if (!(budget > 0) || repeats < 1) {
    std::fprintf(stderr, "usage: configuration_search [BUDGET_S > 0] [REPEATS >= 1]\n");
    return 2;
  }
  const row rows[] = {
      {"GPT-2 on 8 A100", "gpt2", "a100-80g", 8, 64, 1024},
      {"Llama 3 405B on 8192 H100", "llama-3.1-405b", "h100-sxm", 8192, 2048, 8192},
      {"DeepSeek-V3 on 2048 H800", "deepseek-v3", "h800", 2048, 15360, 4096},
  };
  std::printf("%-28s %12s %10s %14s %9s %9s %8s %10s %9s\n", "job", "considered", "seconds",
              "considered/s", "judged", "complete", "best s", "bound s", "gap");
  for (const row& r : rows) {
    const transformer m =
        read_hf_config(read_file(std::string(WEFT_TEST_DATA) + "/hf/" + r.model + ".json")).model;
    job j;
    j.global_batch_size = r.global_batch;
    j.seq = r.seq;
    configuration_search_options o;
    o.budget_s = budget;
    o.space.devices = r.devices;
    std::vector<double> seconds, rate;
    configuration_search_result last;
    for (int k = 0; k < repeats; ++k) {
      last = search_configurations(m, j, *find_cluster(r.cluster), o);
      seconds.push_back(last.seconds_taken);
      rate.push_back(static_cast<double>(last.counts.considered) / last.seconds_taken);
    }
    const double best = last.top.empty() ? 0 : last.top.front().best.step.count();
    const double bound = last.complete ? best : last.least_unexplored.count();
    std::printf("%-28s %12lld %10.2f %14.0f %9lld %9s %8.3f %10.3f %8.1f%%\n", r.name,
                last.counts.considered, median(seconds), median(rate), last.counts.simulated,
                last.complete ? "yes" : "no", best, bound,
                best > 0 ? 100 * (1 - bound / best) : 0.0);
  }
  // Llama 3 405B as Meta ran it on 8192 H100s (tp 8, pp 16, dp 64): its plans' estimates.
  const transformer m =
      read_hf_config(read_file(std::string(WEFT_TEST_DATA) + "/hf/llama-3.1-405b.json")).model;
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.tp = 8;
  j.pp = 16;
  j.dp = 64;
  j.sequence_parallel = true;
  j.global_batch_size = 2048;
  j.seq = 8192;
  std::vector<job> plans;
  for (const plan_choice& x : best_plan(m, j, c).judged)
    if (x.ran) plans.push_back(x.tried);
  using clock = std::chrono::steady_clock;
  program_cache programs;
  const auto pass = [&](const estimate_options& o) {
    const auto t0 = clock::now();
    for (const job& p : plans) (void)estimate_job(m, p, c, o);
    return std::chrono::duration<double>(clock::now() - t0).count() /
           static_cast<double>(plans.size());
  };
  (void)pass({.programs = &programs});  // the cache filled
  std::vector<double> fresh, cached;
  for (int k = 0; k < repeats; ++k) {
    fresh.push_back(pass({}));
    cached.push_back(pass({.programs = &programs}));
  }
  std::printf(
      "\nan estimate of Llama 3 405B (tp 8, pp 16, dp 64; %zu plans): %.2f ms with its "
      "pipeline made afresh, %.2f ms from the cache (%.2fx)\n",
      plans.size(), 1e3 * median(fresh), 1e3 * median(cached), median(fresh) / median(cached));
  return 0;
}
