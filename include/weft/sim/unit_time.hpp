// What the event simulators share: the options of a run, how long a unit of work takes at
// full rate, and op copies' arrival times from the one readiness semantics.
#pragma once

#include <cstdint>
#include <vector>

#include <weft/core/buffer.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/cost.hpp>

namespace weft {

/// The largest co-run slowdown (`basic_sim_options::co_run_slowdown`) a simulation takes and a
/// fit returns: a unit a hundred and one times as long beside another is a broken measurement.
inline constexpr double max_co_run_slowdown = 100;

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
  /// `simulate_on_workers` has workers to charge it to; there it replaces the event latency of
  /// a unit of compute, since the runtime marks a unit ready when the op it waited for
  /// completes, and the wake-up it measures from then holds the event's crossing.
  T wake_latency{0};
  /// The cores the CPU runtime's threads share (`simulate_on_workers` only): with n units of
  /// compute running and m of communication in flight, each unit of compute runs at
  /// min(1, cores / (n + background_load + comm_load m)) of its full rate. 0: as many cores as
  /// threads, and the two loads count for nothing.
  unsigned cores = 0;
  /// The cores' worth of CPU the runtime's other threads (its comm worker, timer and host) take
  /// at all times, and per unit of communication in flight: the work they do for it. The CPU
  /// runtime measures the latter (`run_measures::comm_cores`).
  double background_load = 0, comm_load = 0;
  /// While two or more units of compute run, each takes 1 + this as long (`simulate_on_workers`
  /// only): what two compute threads take from each other beyond the cores (caches, memory
  /// bandwidth, hyper-threads). The CPU runtime's `co_run_slowdown` reads it off a run.
  double co_run_slowdown = 0;
  /// With contention: record where ops ran below full rate (`timeline::slowed`, which the SVG
  /// veils). Off, a contended run is about an eighth faster.
  bool record_slowed = false;
  /// Per op copy (replica r of op i at r × ops + i, `semantics::copy`), the work of its unit of
  /// compute at full rate, as a run measured it op by op (`sim_options_from` gives the CPU
  /// runtime's): `simulate_on_workers` then costs a unit of compute here rather than at its
  /// (kind, phase)'s mean, so the copies of one op differ as they did, and a collective after
  /// them waits for the slowest. Empty: every unit at the cost model's; an entry of 0 or less (a
  /// unit the run did not measure) keeps the cost model's too. A size other than every copy's is
  /// refused.
  std::vector<T> work{};
};
using sim_options = basic_sim_options<seconds>;
using unit_sim_options = basic_sim_options<units>;

/// How long a unit of work takes: an overlapped forward/backward pair its pair cost, any other
/// unit the longest of its members (a transfer's two ends, a collective's copies).
template <time_type T>
constexpr T cost_of(const semantics& g, const basic_cost_model<T>& c, std::uint32_t u) noexcept {
  if (g.kind_of(u) == unit_kind::pair) {
    if (c.chunks.empty()) return c.pair();
    std::uint32_t f = npos, b = npos;
    g.each_member(u, [&](std::uint32_t x) { (g.at(x).ph == phase::F ? f : b) = x; });
    return f == npos || b == npos ? c.pair() : c.pair_of(g.at(f), g.at(b));
  }
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

}  // namespace weft
