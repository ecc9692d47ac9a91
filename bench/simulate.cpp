// Simulation throughput on a DeepSeek-V3-scale schedule: DualPipeV on 16 ranks, 64
// micro-batches, 61 MoE layers per chunk with fb-overlap (about 1M sub-stage ops). Lowering,
// the event-driven simulator and the metrics, side by side with a unit-step simulation of the
// same program (each step runs every unit that earlier steps made ready: the way PyTorch's
// pipelining simulator steps through a schedule).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <weft/generators/dualpipe.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/sim/metrics.hpp>

namespace {

const weft::schedule& big_schedule() {
  static const weft::schedule s = weft::dualpipev({.ranks = 16,
                                                   .micro = 64,
                                                   .layers = 61,
                                                   .stages = weft::stage_set::moe_with_shared(),
                                                   .overlap = weft::overlap_options::all()});
  return s;
}
const weft::program& big_program() {
  static const weft::program p = weft::lower(big_schedule());
  return p;
}

std::size_t bytes_of(const weft::program& p) {
  return p.source.ops.size() * sizeof(weft::op) + p.source.slot_end.size() * 4 +
         p.source.rank_begin.size() * 4 + p.rank.size() * 2 + p.stream.size() + p.slot.size() * 4 +
         p.wait_begin.size() * 4 + p.waits.size() * 4 + p.partner.size() * 4 +
         p.queue_begin.size() * 4 + p.queue.size() * 4;
}

void lower(benchmark::State& state) {
  const weft::schedule& s = big_schedule();
  for (auto _ : state) {
    const weft::program p = weft::lower(s);
    benchmark::DoNotOptimize(p.waits.pages());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.ops.size()));
}

/// Simulates the step under `c` for as long as the benchmark asks; its makespan as a counter.
void simulate_step(benchmark::State& state, const weft::unit_cost_model& c) {
  const weft::program& p = big_program();
  double makespan = 0;
  for (auto _ : state) {
    const weft::unit_timeline t = weft::simulate(p, c);
    makespan = t.makespan.count();
    benchmark::DoNotOptimize(t.finish.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.size()));
  state.counters["makespan"] = makespan;
}

void simulate(benchmark::State& state) {
  simulate_step(state, weft::unit_cost_model::deepseek_v3_like());
  const weft::program& p = big_program();
  state.counters["ops"] = static_cast<double>(p.size());
  // Program plus timeline plus the simulator's own arrays (about 8 words per op and event).
  const double sim_bytes =
      static_cast<double>(p.size()) * (2 * 8 + 4 * 4 + 8) + static_cast<double>(p.waits.size()) * 4;
  state.counters["bytes_per_op"] =
      (static_cast<double>(bytes_of(p)) + sim_bytes) / static_cast<double>(p.size());
}

/// The same step with overlap priced: links shared (all-to-alls and pipeline transfers on one
/// port class) and compute slowed 18.9 % while its device communicates (arXiv 2507.03114).
void simulate_contended(benchmark::State& state) {
  weft::unit_cost_model c = weft::unit_cost_model::deepseek_v3_like();
  c.contention = {.shared_links = true, .compute_slowdown = 0.189};
  simulate_step(state, c);
}

void measure(benchmark::State& state) {
  const weft::program& p = big_program();
  const weft::unit_timeline t = weft::simulate(p, weft::unit_cost_model::deepseek_v3_like());
  for (auto _ : state) {
    const weft::unit_step_metrics m = weft::measure(p, t);
    benchmark::DoNotOptimize(m.makespan);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.size()));
}

/// Unit-step simulation: unit cost per op, every unit that is ready at a step runs in it (the
/// one semantics' readiness, stepped level by level instead of by event times).
void unit_step(benchmark::State& state) {
  const weft::program& p = big_program();
  std::uint64_t steps = 0;
  for (auto _ : state) {
    const weft::semantics g(p);
    weft::readiness<> st(g);
    struct events : weft::readiness_events {
      std::vector<std::uint32_t> next;
      void ready(std::uint32_t u) { next.push_back(u); }
    } ev;
    st.begin(ev);
    std::uint32_t step = 0;
    std::vector<std::uint32_t> now;
    while (!ev.next.empty()) {
      now.swap(ev.next);
      ev.next.clear();
      for (const std::uint32_t u : now) st.complete_unit(u, ev);
      ++step;
    }
    steps = step;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.size()));
  state.counters["steps"] = static_cast<double>(steps);
}

}  // namespace

BENCHMARK(lower)->Unit(benchmark::kMillisecond);
BENCHMARK(simulate)->Unit(benchmark::kMillisecond);
BENCHMARK(simulate_contended)->Unit(benchmark::kMillisecond);
BENCHMARK(measure)->Unit(benchmark::kMillisecond);
BENCHMARK(unit_step)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
