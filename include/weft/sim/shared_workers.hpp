// Simulating a step when all ranks share a few workers, as the CPU runtime runs them: a unit that
// computes needs one of `workers` threads for its whole duration (an overlapped forward/backward
// pair is one unit, on one worker); a transfer or collective holds none (it waits on a timer or
// its peers). Units start in order of the time they become ready, the way the runtime's pool
// takes ready work first come, first served — except that a worker finishing a unit whose
// completion readies the next unit of the same stream runs that one at once, and otherwise runs
// next the first unit of another stream that completion readied, as the runtime's runner does
// (exec/runner.hpp). Readiness is semantics.hpp's, as in `simulate`,
// which gives every rank a device of its own instead.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include <weft/schedule/timeline.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

/// As `simulate` (the same options), with compute units competing for `workers` threads. With
/// `replicas` > 1 every rank runs `replicas` times over (expert parallelism, as the executor runs
/// it): the copies compete for the same workers, a copy's transfers go to the same copy of the
/// peer, and the copies of a collective start together, when the last of them is ready. Returns
/// copy 0's timeline; its makespan covers every copy.
template <time_type T>
basic_timeline<T> simulate_on_workers(const program& p, const basic_cost_model<T>& c,
                                      unsigned workers, basic_sim_options<T> opt = {},
                                      int replicas = 1) {
  c.check_chunks(p.source.model);
  // Its workers are the resource it shares; it has no rates for links or interference.
  if (c.contention.active())
    throw config_error(
        "simulate_on_workers: contention is not modelled on shared workers; "
        "clear the cost model's contention (or simulate with a device per rank)");
  const semantics g(p, {.replicas = replicas, .slot_barrier = opt.slot_barrier});
  readiness<> st(g);
  using item = std::pair<T, std::uint32_t>;  // (ready time, unit)
  struct events : detail::timed_events<T> {
    const semantics* g = nullptr;
    std::priority_queue<item, std::vector<item>, std::greater<>> ready_units;
    // The runtime's follow-on: a worker finishing a unit of compute runs the next unit of the
    // same stream at once, ahead of everything waiting, when that completion made it ready.
    // Else the first unit of another stream that completion readied is the worker's next,
    // after the runtime's cost per unit, ahead of everything waiting (no other worker wakes).
    std::uint32_t finishing_queue = npos, follow_on = npos, handoff = npos;
    T finishing_at{0};
    void ready(std::uint32_t u) {
      const T at = this->ready_at(*g, u);
      if (finishing_queue != npos && g->computes(u) && at <= finishing_at) {
        if (follow_on == npos && g->queue_of(u) == finishing_queue) {
          follow_on = u;
          return;
        }
        if (handoff == npos) {
          handoff = u;
          return;
        }
      }
      ready_units.push({at, u});
    }
  } ev;
  ev.g = &g;
  ev.arrive.assign(g.ops(), T{0});
  ev.finish.assign(g.ops(), T{-1});
  ev.latency = opt.event_latency;
  std::priority_queue<T, std::vector<T>, std::greater<>> free_at;
  // Every worker starts idle: the first unit each takes wakes it up.
  for (unsigned w = 0; w < (workers ? workers : 1); ++w)
    free_at.push(T{-std::numeric_limits<double>::infinity()});
  buffer<T> start(g.ops(), T{-1});
  buffer<std::uint8_t> done(g.ops(), 0);
  std::uint32_t finished = 0;
  const auto run = [&](std::uint32_t u, T begin) {
    const T end = begin + span_of(g, c, ev.arrive, u);
    g.each_member(u, [&](std::uint32_t x) {
      start[x] = begin;
      ev.finish[x] = end;
      done[x] = 1;
    });
    finished += g.member_count(u);
    return end;
  };
  st.begin(ev);
  while (!ev.ready_units.empty()) {
    auto [at, u] = ev.ready_units.top();
    ev.ready_units.pop();
    if (!g.computes(u)) {  // waits on a link or its peers, not on a worker
      run(u, at);
      st.complete_unit(u, ev);
      continue;
    }
    // A busy worker takes the unit when it is done, paying the runtime's cost per unit; an idle
    // one wakes up for it.
    const T free = free_at.top();
    T end = run(u, free >= at ? free + opt.dispatch_overhead : at + opt.wake_latency);
    free_at.pop();
    for (;;) {  // the worker's units, as long as each readies its next
      ev.finishing_queue = g.queue_of(u);
      ev.finishing_at = end;
      st.complete_unit(u, ev);
      ev.finishing_queue = npos;
      u = std::exchange(ev.follow_on, npos);
      const std::uint32_t h = std::exchange(ev.handoff, npos);
      if (u != npos) {
        if (h != npos) ev.ready_units.push({ev.ready_at(g, h), h});
        end = run(u, end);
      } else if (h != npos) {
        u = h;
        end = run(u, end + opt.dispatch_overhead);
      } else {
        break;
      }
    }
    free_at.push(end);
  }
  basic_timeline<T> t;
  detail::settle(g, ev, start, done, finished, t);
  return t;
}

}  // namespace weft
