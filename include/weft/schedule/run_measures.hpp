// What a run measures besides its timeline: the parts of a step that calibrate a simulation of
// the same runtime (sim/prediction.hpp, sim/calibrate.hpp, sim_options). Beside the timeline
// type, below both the runtime that fills it and the simulator that reads it.
#pragma once

#include <cstddef>
#include <vector>

#include <weft/core/time.hpp>
#include <weft/schedule/timeline.hpp>

namespace weft {

struct run_measures {
  /// Per comm op (replica 0): the time from the moment every party had started it (both ends of
  /// a transfer, every member of a collective, every replica's copy) to the moment every party
  /// had it — its own time, without the wait for late peers, and with the last party's
  /// completion, as the simulators count a unit. What `calibrated` takes for communication.
  std::vector<seconds> comm_span;
  /// Per op (replica 0): when it was started on its stream — a comm op as soon as it arrived,
  /// before its peers were there. What `measured_event_latency` reads.
  std::vector<seconds> posted;
  /// The mean time a worker spent between two units of compute when the second was already
  /// ready: the runtime's own cost per unit (`sim_options::dispatch_overhead`).
  seconds dispatch_gap{0};
  /// The mean time from a unit of compute becoming ready to its start when the worker that
  /// ran it had nothing to do meanwhile: how long an idle worker takes to wake up and start it
  /// (`sim_options::wake_latency`).
  seconds wake_gap{0};
  /// Per op copy (replica r of op i at r × ops + i, as `semantics::copy` numbers them: replica
  /// 0's first), for units of compute: the CPU time their unit's kernels took on the worker's
  /// thread — the work, without the time the thread waited for a core. Empty over a world of
  /// processes. What `calibrated` takes for compute (replica 0's), and what the shared-worker
  /// simulator takes op by op (`sim_options::work`): the copies of one op differ, and a
  /// collective waits for the slowest.
  std::vector<seconds> cpu;
  /// The cores' worth of CPU the process spent besides units of compute over the run (its comm
  /// worker, timer, host and the runtime's own work), on average: the process's CPU time less
  /// every unit's, over the makespan. 0 over a world.
  double background_cores = 0;
  /// The same CPU per unit of communication in flight: over the sum of every communication
  /// unit's time in flight (every replica's), the cores' worth that the runtime's other threads
  /// take for each (`sim_options::comm_load`). 0 over a world, or with no communication.
  double comm_cores = 0;
  /// Per op copy, as `cpu`, for units of compute: the fraction of its unit's time during which
  /// another unit of compute ran too (any rank, any replica). Two compute threads slow each other
  /// beyond sharing cores (caches, memory, a core's hyper-threads); `co_run_slowdown` reads how
  /// much from this and `cpu`. Empty over a world.
  std::vector<double> co_run;
  /// The cores the process could use while it ran (`sim_options::cores`). 0 over a world.
  unsigned cores = 0;

  /// Were CPU times measured for a program of `ops` ops (every replica's)?
  bool has_cpu(std::size_t ops) const noexcept {
    return ops > 0 && !cpu.empty() && cpu.size() % ops == 0 && co_run.size() == cpu.size();
  }
};

}  // namespace weft
