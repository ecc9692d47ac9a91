// What the search optimises, and the one way a plan is judged: built into a schedule, proven
// legal by the checker (rules 1-5, rule 5 being the problem's memory cap), lowered, and run by
// the event simulator — the same simulator every generator's schedule is judged by.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include <weft/core/error.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/search/step_order.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/shared_workers.hpp>
#include <weft/sim/simulate.hpp>

namespace weft::search {

/// A search's question: the model (ranks, chunks and their placement, micro-batches, layers and
/// sub-stages; `model.max_live` is the per-rank memory cap in activation units as rule 5 counts
/// them, 0 for none), the overlap options its schedules are built with, and the cost of every
/// (kind, phase) per chunk.
template <time_type T>
struct basic_problem {
  model_desc model;
  overlap_options overlap = overlap_options::none();
  basic_cost_model<T> cost;
  /// How plans are timed: 0, every rank a device of its own (`simulate`); else compute shared by
  /// this many workers with `replicas` copies of every rank, as the CPU runtime runs a step
  /// (`simulate_on_workers`, to search for what runs fastest there). The bounds assume 0.
  unsigned workers = 0;
  int replicas = 1;
  /// The simulators' options for every plan; a run's per-op-copy work (`sim.work`) belongs to
  /// one program, not to the plans a search makes, and is refused.
  basic_sim_options<T> sim{};
};
using problem = basic_problem<seconds>;
using unit_problem = basic_problem<units>;

/// A plan with its simulated makespan and peak live activations (the largest over ranks).
template <time_type T>
struct scored {
  step_order p;
  T makespan{0};
  int peak_live = 0;
};

/// Builds, checks, lowers and simulates `p` for `q`; nothing when the plan is illegal for the
/// problem (the checker's first violation in `why`, when asked for).
template <time_type T>
std::optional<scored<T>> evaluate(const basic_problem<T>& q, step_order p,
                                  std::string* why = nullptr) {
  p.model = q.model;
  p.overlap = q.overlap;
  const schedule s = to_schedule(p);
  program prog;
  try {
    prog = lower(s);
  } catch (const config_error& e) {
    if (why) {  // the checker's words, without lowering's preamble
      const std::string_view w = e.what();
      *why = w.starts_with(illegal_preamble) ? with_prefix(w.substr(illegal_preamble.size()))
                                             : std::string(w);
    }
    return std::nullopt;
  }
  const basic_timeline<T> t = q.workers == 0
                                  ? simulate(prog, q.cost, q.sim)
                                  : simulate_on_workers(prog, q.cost, q.workers, q.sim, q.replicas);
  if (t.deadlocked()) {  // the checker proves deadlock freedom: a program that stops is a bug
    if (why) *why = "weft: search: the simulation stopped although the checker passed the plan";
    return std::nullopt;
  }
  const buffer<int> peak = peak_live_activations(s);
  scored<T> out{static_cast<step_order&&>(p), t.makespan, 0};
  for (const int x : peak) out.peak_live = std::max(out.peak_live, x);
  return out;
}

}  // namespace weft::search
