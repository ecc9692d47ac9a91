// Run-time legality checking of generated schedules: 1F1B with MoE sub-stages (8 ops per
// micro-batch, chunk and layer), up to about 1M ops. `verify` takes the fast path (a proof under
// slot-by-slot execution) and falls back to the precise checker; `check` always runs the precise
// checker and builds the full report. Side by side in one run.
#include <benchmark/benchmark.h>

#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/verify.hpp>

namespace {

// About `ops` ops: 16 ranks, 8 layers per chunk, MoE sub-stages, micro-batches to fit.
weft::schedule make(std::int64_t ops) {
  const int ranks = 16, layers = 8;
  const int micro = static_cast<int>(ops / (ranks * layers * 8));
  return weft::one_f_one_b({.ranks = ranks,
                            .micro = micro < 1 ? 1 : micro,
                            .layers = layers,
                            .stages = weft::stage_set::moe()});
}

void generate(benchmark::State& state) {
  std::size_t n = 0;
  for (auto _ : state) {
    const weft::schedule s = make(state.range(0));
    n = s.ops.size();
    benchmark::DoNotOptimize(s.ops.data());
  }
  state.counters["ops"] = static_cast<double>(n);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void verify(benchmark::State& state) {
  const weft::schedule s = make(state.range(0));
  for (auto _ : state) {
    bool ok = weft::verify(s);
    benchmark::DoNotOptimize(ok);
    if (!ok) state.SkipWithError("schedule not legal");
  }
  state.counters["ops"] = static_cast<double>(s.ops.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.ops.size()));
}

void check_report(benchmark::State& state) {
  const weft::schedule s = make(state.range(0));
  for (auto _ : state) {
    const weft::report r = weft::check(s);
    if (!r.ok()) state.SkipWithError("schedule not legal");
    benchmark::DoNotOptimize(r.violations.data());
  }
  state.counters["ops"] = static_cast<double>(s.ops.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.ops.size()));
}

}  // namespace

BENCHMARK(generate)->Arg(1024)->Arg(1 << 17)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(verify)->Arg(1024)->Arg(1 << 17)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(check_report)->Arg(1024)->Arg(1 << 17)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
