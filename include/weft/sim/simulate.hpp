// The discrete-event simulator: runs a stream program over virtual time, every rank on a device
// of its own. When an op may start and what starts and finishes with it is semantics.hpp's
// answer; this file adds time: a unit starts when its last member arrives (an event adds
// `event_latency` to the wait it ends) and lasts its cost. Costs do not depend on contention,
// so processing units as they become ready gives the same times as a clock-ordered event
// queue, in time linear in ops and waits.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/cost.hpp>

namespace weft {

template <time_type T>
struct basic_sim_options {
  /// Each rank starts a slot only when its previous slot has finished: the host waits for every
  /// step, as a framework without overlap does (an all-to-all then blocks compute). Off: streams
  /// run independently, ordered only by their queues and events.
  bool slot_barrier = false;
  /// From an event firing to the op that waits for it starting: an event synchronisation on an
  /// accelerator, a thread waking up on the CPU runtime (`measured_event_latency` finds it).
  T event_latency{0};
  /// What a worker spends on each unit of compute besides its cost (taking it, starting it,
  /// recording it): the CPU runtime's `run_result::dispatch_gap`. Only `simulate_on_workers`
  /// has workers to charge it to.
  T dispatch_overhead{0};
  /// What a worker that had nothing to do takes from a unit of compute becoming ready to
  /// starting it (waking up): the CPU runtime's `run_measures::wake_gap`. Only
  /// `simulate_on_workers` has workers to charge it to.
  T wake_latency{0};
};
using sim_options = basic_sim_options<seconds>;
using unit_sim_options = basic_sim_options<units>;

/// How long a unit of work takes: an overlapped forward/backward pair its pair cost, any other
/// unit the longest of its members (a transfer's two ends, a collective's copies).
template <time_type T>
constexpr T cost_of(const semantics& g, const basic_cost_model<T>& c, std::uint32_t u) noexcept {
  if (g.kind_of(u) == unit_kind::pair) return c.pair();
  T t{0};
  g.each_member(u, [&](std::uint32_t x) {
    const op& o = g.at(x);
    const T own = c.of(o, g.model());
    t = t > own ? t : own;
  });
  return t;
}

/// How long unit `u` lasts from its start (when its last member arrived, `arrive`): its cost,
/// and for a transfer whose receive arrived after its send, before that the receive's
/// clear-to-send crossing the link (a rendezvous protocol sends nothing before the receiver
/// has a buffer ready; `cost_model::transfer_start`).
template <time_type T>
constexpr T span_of(const semantics& g, const basic_cost_model<T>& c, const buffer<T>& arrive,
                    std::uint32_t u) noexcept {
  if (g.kind_of(u) != unit_kind::transfer) return cost_of(g, c, u);
  T send_at{0}, recv_at{0};
  std::uint32_t r = u;
  g.each_member(u, [&](std::uint32_t x) {
    if (g.at(x).k == kind::recv) {
      recv_at = arrive[x];
      r = x;
    } else {
      send_at = arrive[x];
    }
  });
  const T begin = send_at > recv_at ? send_at : recv_at;
  return c.transfer_start(g.at(r), g.model(), send_at, recv_at) - begin + cost_of(g, c, u);
}

namespace detail {
/// Arrival times: each op copy arrives when the last thing it waits for completes (plus the
/// event latency when that crosses streams). Drivers add what decides when a ready unit starts.
template <time_type T>
struct timed_events : readiness_events {
  static constexpr bool timed = true;
  buffer<T> arrive;
  buffer<T> finish;
  T latency{0};
  constexpr void released(std::uint32_t from, std::uint32_t to, bool event) {
    const T at = event ? finish[from] + latency : finish[from];
    arrive[to] = arrive[to] > at ? arrive[to] : at;
  }
  constexpr T ready_at(const semantics& g, std::uint32_t u) const {
    T t{0};
    g.each_member(u, [&](std::uint32_t x) { t = t > arrive[x] ? t : arrive[x]; });
    return t;
  }
};

/// Copy 0's part of a run's times, and on a deadlock what each rank is stuck at.
template <time_type T, class Done>
constexpr void settle(const semantics& g, const timed_events<T>& ev, const buffer<T>& start,
                      const Done& done, std::uint32_t finished, basic_timeline<T>& t) {
  const std::uint32_t n = g.size();
  t.start.assign(n, T{-1});
  t.finish.assign(n, T{-1});
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!done[i]) continue;
    t.start[i] = start[i];
    t.finish[i] = ev.finish[i];
  }
  for (std::uint32_t x = 0; x < g.ops(); ++x)
    if (done[x] && ev.finish[x] > t.makespan) t.makespan = ev.finish[x];
  if (finished < g.ops()) t.blocked = stuck_ops(g, done);
}
}  // namespace detail

/// Simulates `p` with costs `c`; times come out in the costs' type (seconds or units).
template <time_type T>
constexpr basic_timeline<T> simulate(const program& p, const basic_cost_model<T>& c,
                                     basic_sim_options<T> opt = {}) {
  const semantics g(p, {.slot_barrier = opt.slot_barrier});
  readiness<> st(g);
  struct events : detail::timed_events<T> {
    buffer<std::uint32_t> ready_units;
    constexpr void ready(std::uint32_t u) { ready_units.push_back(u); }
  } ev;
  ev.arrive.assign(g.ops(), T{0});
  ev.finish.assign(g.ops(), T{-1});
  ev.latency = opt.event_latency;
  buffer<T> start(g.ops(), T{-1});
  buffer<std::uint8_t> done(g.ops(), 0);
  std::uint32_t finished = 0;
  st.begin(ev);
  while (!ev.ready_units.empty()) {
    const std::uint32_t u = ev.ready_units.back();
    ev.ready_units.pop_back();
    const T begin = ev.ready_at(g, u), end = begin + span_of(g, c, ev.arrive, u);
    g.each_member(u, [&](std::uint32_t x) {
      start[x] = begin;
      ev.finish[x] = end;
      done[x] = 1;
    });
    finished += g.member_count(u);
    st.complete_unit(u, ev);
  }
  basic_timeline<T> t;
  detail::settle(g, ev, start, done, finished, t);
  return t;
}

}  // namespace weft
