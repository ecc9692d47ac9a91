// Adaptive context parallelism against ring attention over the mask suite, and the planner's
// speed.
//
//   adaptive_cp suite [SEQ]    a markdown table per mask and cp (docs/adaptive-cp.md)
//   adaptive_cp [Google Benchmark flags]   planning a 1024 x 1024 coarse mask for cp = 8
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>

using namespace weft::cp;

namespace {

/// The mask suite for a sequence of `s` tokens: windows of s/16, a prefix of s/4, ...
std::vector<std::string> suite(int s) {
  const auto n = [](const char* fmt, int a, int b = 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, fmt, a, b);
    return std::string(buf);
  };
  return {"full",
          "causal",
          n("window:w=%d", s / 16),
          n("bidir-window:w=%d", s / 32),
          n("global-window:g=%d,w=%d", s / 128, s / 32),
          "documents:n=12",
          "causal-documents:n=12",
          n("shared-question:q=%d,n=6", s / 8),
          n("causal-blockwise:b=%d", s / 16),
          n("prefix-lm:p=%d", s / 4),
          n("random:density=0.1,b=%d,seed=1", s / 64),
          n("random:density=0.3,b=%d,seed=1", s / 64),
          n("random:density=0.6,b=%d,seed=1", s / 64),
          "interleaved-documents:n=8"};
}

/// Work of each rank's queries (coarse cells that attend) under `order`: ring attention gives
/// rank i every block (i, j), one per round.
double balance(const dense_mask& coarse, const std::vector<int>& order, int cp) {
  const int n = coarse.size(), per = n / cp;
  std::vector<double> work(static_cast<std::size_t>(cp), 0.0);
  for (int p = 0; p < n; ++p) {
    const auto row = coarse.row(order[static_cast<std::size_t>(p)]);
    work[static_cast<std::size_t>(p / per)] +=
        static_cast<double>(std::count(row.begin(), row.end(), std::uint8_t{1}));
  }
  double mean = 0, top = 0;
  for (const double w : work) {
    mean += w / cp;
    top = std::max(top, w);
  }
  return mean > 0 ? top / mean : 1.0;
}

/// Zig-zag (striped) order for causal masks: 2 cp chunks, rank i holds chunks i and 2 cp - 1 - i.
std::vector<int> zigzag(int n, int cp) {
  const int chunk = n / (2 * cp);
  std::vector<int> order;
  for (int i = 0; i < cp; ++i)
    for (const int c : {i, 2 * cp - 1 - i})
      for (int t = 0; t < chunk; ++t) order.push_back(c * chunk + t);
  return order;
}

int run_suite(int seq) {
  std::printf(
      "| mask | cp | ring rounds | ring balance | zig-zag balance | tasks | after re-map | "
      "rounds | lower bound | max units | plan ms |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const std::string& spec : suite(seq)) {
    const range_mask m = masks::by_name(spec, seq);
    for (const int cp : {2, 4, 8, 16}) {
      std::vector<double> ms;
      adaptive_layout pl;
      for (int rep = 0; rep < 5; ++rep) {
        pl = adapt_layout(m, cp);
        ms.push_back(pl.planning_time.count() * 1e3);
      }
      std::sort(ms.begin(), ms.end());
      const int n = pl.coarse.size();
      const bool causal_like = spec == "causal";
      char zz[32] = "—";
      if (causal_like) std::snprintf(zz, sizeof zz, "%.2f", balance(pl.coarse, zigzag(n, cp), cp));
      std::printf("| %s | %d | %d | %.2f | %s | %d | %zu | %d | %d | %d | %.1f |\n", spec.c_str(),
                  cp, cp, balance(pl.coarse, identity_order(n), cp), zz, pl.remapped.before.tasks,
                  pl.assignment.tasks.size(), pl.assignment.rounds, pl.assignment.lower_bound,
                  pl.assignment.max_comm_units(), ms[ms.size() / 2]);
    }
  }
  return 0;
}

void plan_1024(benchmark::State& state, const char* spec) {
  const range_mask m = masks::by_name(spec, 1 << 17);
  const dense_mask coarse = coarsen(m, 1024);
  for (auto _ : state) {
    adaptive_layout pl = adapt_layout(coarse, 8);
    benchmark::DoNotOptimize(pl.assignment.rounds);
  }
}
BENCHMARK_CAPTURE(plan_1024, causal, "causal")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_1024, documents, "causal-documents:n=12")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_1024, shared_question, "shared-question:q=8192,n=6")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_1024, random_30, "random:density=0.3,b=8192,seed=1")
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "suite") == 0)
    return run_suite(argc > 2 ? std::atoi(argv[2]) : 1 << 16);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
