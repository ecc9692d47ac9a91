// The discrete-event simulator: runs a stream program over virtual time, every rank on a device
// of its own. When an op may start and what starts and finishes with it is semantics.hpp's
// answer; this file adds time: a unit starts when its last member arrives (an event adds
// `event_latency` to the wait it ends) and lasts its cost. Without contention costs do not
// depend on what else runs, so processing units as they become ready gives the same times as a
// clock-ordered event queue, in time linear in ops and waits; with it (the cost model's
// `contention`), the clock-ordered simulator of contended.hpp drains each unit at its rate.
#pragma once

#include <cstdint>
#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/contended.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/unit_time.hpp>

namespace weft {

namespace detail {
/// `simulate`'s work, in constant evaluation and at run time.
template <time_type T>
constexpr basic_timeline<T> simulated(const program& p, const basic_cost_model<T>& c,
                                      const basic_sim_options<T>& opt) {
  c.check_chunks(p.source.model);
  if (c.contention.active()) return simulate_contended(p, c, opt);
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

/// `simulate` at run time: a function, not a constexpr one, so that g++ does not try to
/// evaluate a call with constant arguments at compile time; with WEFT_SEPARATE_COMPILATION
/// compiled once into weft::compiled for both time types.
template <time_type T>
basic_timeline<T> simulate_at_run_time(const program& p, const basic_cost_model<T>& c,
                                       const basic_sim_options<T>& opt) {
  return simulated(p, c, opt);
}
#ifdef WEFT_SEPARATE_COMPILATION
extern template basic_timeline<units> simulate_at_run_time(const program&,
                                                           const basic_cost_model<units>&,
                                                           const basic_sim_options<units>&);
extern template basic_timeline<seconds> simulate_at_run_time(const program&,
                                                             const basic_cost_model<seconds>&,
                                                             const basic_sim_options<seconds>&);
#endif
}  // namespace detail

/// Simulates `p` with costs `c`; times come out in the costs' type (seconds or units).
template <time_type T>
constexpr basic_timeline<T> simulate(const program& p, const basic_cost_model<T>& c,
                                     basic_sim_options<T> opt = {}) {
  if (std::is_constant_evaluated()) return detail::simulated(p, c, opt);
  return detail::simulate_at_run_time(p, c, opt);
}

}  // namespace weft
