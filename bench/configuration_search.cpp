// The configuration search (`weft plan --search`, docs/planning.md "Choosing the
// configuration") on the jobs its issue names — Llama 3 405B on 8192 H100s and DeepSeek-V3 on
// 2048 H800s — and GPT-2 on 8 A100s, which it finishes: configurations considered per second,
// the seconds taken, whether it finished, and how far below its best the unexplored bound is.
//
//   configuration_search [BUDGET_S] [REPEATS]   defaults 8 s and 3 runs; medians printed
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "published.hpp"

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
  return 0;
}
