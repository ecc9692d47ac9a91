// The prediction of a run of the CPU runtime, in one place: what the shared-worker simulator
// needs from a run's measures (sim/calibrate.hpp, sim/shared_workers.hpp) and the simulation
// itself. Every tool and benchmark that sets a measured run beside its prediction asks here, so
// they all predict with one model. Beside the simulator: it reads a run's measures
// (schedule/run_measures.hpp), never the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <weft/schedule/program.hpp>
#include <weft/schedule/run_measures.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/shared_workers.hpp>

namespace weft {

/// How much longer a unit of compute takes while another runs (`sim_options::co_run_slowdown`),
/// read off a run: every compute op copy's CPU time as a line in the fraction of its time another
/// unit ran beside it (`run_measures::co_run`), cpu = w (1 + x f) with one w per (kind, phase),
/// fitted by least squares. 0 without CPU times, or when nothing ran side by side or slower.
inline double co_run_slowdown(const program& p, const run_measures& m) {
  if (!m.has_cpu(p.size())) return 0;
  const std::size_t copies = m.cpu.size();
  const auto computes = [&](std::size_t x) {
    return stream_of(p.at(x % p.size()).k) == stream_class::compute && m.cpu[x] > seconds(0);
  };
  const auto kind_of = [&](std::size_t x) { return static_cast<int>(p.at(x % p.size()).k); };
  const auto phase_of = [&](std::size_t x) { return static_cast<int>(p.at(x % p.size()).ph); };
  // For a given x, each (kind, phase)'s work is its ops' mean deflated CPU time, and the least
  // squares x for those works is `next(x)`; the fit is where next(x) = x, found by bisection
  // (the alternating update alone closes little of the gap per round where the units of a kind
  // all ran beside others about equally).
  const auto next = [&](double x) {
    double w[kind_count][phase_count] = {};
    int count[kind_count][phase_count] = {};
    for (std::size_t i = 0; i < copies; ++i) {
      if (!computes(i)) continue;
      w[kind_of(i)][phase_of(i)] += m.cpu[i].count() / (1 + x * m.co_run[i]);
      ++count[kind_of(i)][phase_of(i)];
    }
    double num = 0, den = 0;
    for (std::size_t i = 0; i < copies; ++i) {
      if (!computes(i)) continue;
      const double f = m.co_run[i],
                   mean = w[kind_of(i)][phase_of(i)] / count[kind_of(i)][phase_of(i)];
      num += f * (m.cpu[i].count() / mean - 1);
      den += f * f;
    }
    return den > 0 ? num / den : 0.0;
  };
  constexpr double most = max_co_run_slowdown;
  if (!(next(0) > 0)) return 0;
  if (next(most) >= most) return most;
  double lo = 0, hi = most;  // next(lo) > lo, next(hi) < hi
  for (int round = 0; round < 60; ++round) {
    const double mid = (lo + hi) / 2;
    (next(mid) > mid ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

namespace detail {
/// Every op copy's work alone: its CPU time with what running beside another unit added
/// (`co_run_slowdown` x) taken out again. Empty without CPU times.
inline std::vector<seconds> work_alone(const program& p, const run_measures& m, double x) {
  if (!m.has_cpu(p.size())) return {};
  std::vector<seconds> alone(m.cpu);
  for (std::size_t i = 0; i < alone.size(); ++i) alone[i] = m.cpu[i] / (1 + x * m.co_run[i]);
  return alone;
}
/// `calibrated_from` with the co-run slowdown `x` already read off the run.
inline cost_model calibrated_from(const program& p, const timeline& measured, const run_measures& m,
                                  cost_model base, double x) {
  return calibrated(p, measured, std::move(base), m.comm_span, work_alone(p, m, x));
}
}  // namespace detail

/// `base` calibrated from a run of `p`: compute at its CPU time where the run measured it (its
/// work alone: what running beside another unit added, `co_run_slowdown`, taken out again; the
/// simulated cores slow it as they did), else at its measured span; communication at its
/// measured spans.
inline cost_model calibrated_from(const program& p, const timeline& measured, const run_measures& m,
                                  cost_model base = {}) {
  return detail::calibrated_from(p, measured, m, std::move(base), co_run_slowdown(p, m));
}

/// The shared-worker simulator's options for a run: the runtime's reaction to an event, its
/// cost per unit and an idle worker's wake-up; and where the run measured CPU time, the
/// machine's cores, the CPU the runtime's other threads took of them, charged to the
/// communication in flight they served (`run_measures::comm_cores`; spread evenly over the run
/// instead, `background_cores`, it predicts the MoE example as well and the 2D layers' short
/// programs worse, docs/benchmarks.md), and every op copy's own work (`sim_options::work`: the
/// copies of a collective then wait for the slowest, as they did). Over MPI no CPU time is
/// gathered: every worker then has a core, as `mpi::concurrent_workers` counts them, and a unit
/// costs its (kind, phase)'s mean.
inline sim_options sim_options_from(const program& p, const timeline& measured,
                                    const run_measures& m) {
  const bool cpu = m.has_cpu(p.size());
  const double x = cpu ? co_run_slowdown(p, m) : 0.0;
  return {.event_latency = measured_event_latency(p, measured, m.posted),
          .dispatch_overhead = m.dispatch_gap,
          .wake_latency = m.wake_gap,
          .cores = cpu ? m.cores : 0u,
          .comm_load = cpu ? m.comm_cores : 0.0,
          .co_run_slowdown = x,
          .work = detail::work_alone(p, m, x)};
}

/// What the simulator predicts for a run of `p` on `workers` with `replicas`, from the run
/// itself: `calibrated_from` and `sim_options_from` (the co-run slowdown fitted once for both).
inline timeline predicted_run(const program& p, const timeline& measured, const run_measures& m,
                              unsigned workers, int replicas = 1, cost_model base = {}) {
  sim_options o = sim_options_from(p, measured, m);
  const cost_model c = detail::calibrated_from(p, measured, m, std::move(base), o.co_run_slowdown);
  return simulate_on_workers(p, c, workers, std::move(o), replicas);
}

}  // namespace weft
