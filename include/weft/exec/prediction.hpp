// The prediction of a run of the CPU runtime, in one place: what the shared-worker simulator
// needs from a run's measures (sim/calibrate.hpp, sim/shared_workers.hpp) and the simulation
// itself. Every tool and benchmark that sets a measured run beside its prediction asks here, so
// they all predict with one model.
#pragma once

#include <algorithm>
#include <thread>

#include <weft/exec/measures.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/shared_workers.hpp>

namespace weft::exec {

/// `base` calibrated from a run of `p`: compute at its CPU time where the run measured it (its
/// work, which the simulated cores slow again), else at its measured span; communication at its
/// measured spans.
inline cost_model calibrated_from(const program& p, const timeline& measured, const run_measures& m,
                                  cost_model base = {}) {
  return calibrated(p, measured, std::move(base), m.comm_span, m.cpu);
}

/// The shared-worker simulator's options for a run: the runtime's reaction to an event, its
/// cost per unit and an idle worker's wake-up; and where the run measured CPU time, the
/// machine's cores and the CPU the runtime's other threads took of them, charged to the
/// communication in flight they served (`run_measures::comm_cores`; spread evenly over the run
/// instead, `background_cores`, it predicts the MoE example as well and the 2D layers' short
/// programs worse, docs/benchmarks.md). Over MPI no CPU time is gathered: every worker then has
/// a core, as `mpi::concurrent_workers` counts them.
inline sim_options sim_options_from(const program& p, const timeline& measured,
                                    const run_measures& m) {
  const bool work = m.cpu.size() == p.size();
  return {.event_latency = measured_event_latency(p, measured, m.posted),
          .dispatch_overhead = m.dispatch_gap,
          .wake_latency = m.wake_gap,
          .cores = work ? std::max(1u, std::thread::hardware_concurrency()) : 0u,
          .comm_load = work ? m.comm_cores : 0.0};
}

/// What the simulator predicts for a run of `p` on `workers` with `replicas`, from the run
/// itself: `calibrated_from` and `sim_options_from`.
inline timeline predicted_run(const program& p, const timeline& measured, const run_measures& m,
                              unsigned workers, int replicas = 1, cost_model base = {}) {
  return simulate_on_workers(p, calibrated_from(p, measured, m, std::move(base)), workers,
                             sim_options_from(p, measured, m), replicas);
}

}  // namespace weft::exec
