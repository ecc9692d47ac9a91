// What a simulated step tells: makespan, bubble, exposed communication (overall and per phase),
// stream utilisation, peak live activations. Definitions in docs/metrics.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <weft/config.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

/// Phases of a rank's step: warm-up until its first backward op starts, cool-down after its last
/// forward op ends, steady in between.
enum class step_phase : std::uint8_t { warmup, steady, cooldown };
inline constexpr int step_phase_count = 3;

template <time_type T>
struct basic_rank_metrics {
  T busy{0};          ///< time some compute stream of the rank is busy (a union)
  T idle{0};          ///< makespan - busy
  T comm{0};          ///< time some comm stream of the rank is busy (a union)
  T exposed_comm{0};  ///< comm time not covered by compute on the rank
  T exposed_by_phase[step_phase_count] = {};
  T all_to_all_by_phase[step_phase_count] = {};  ///< MoE dispatch/combine time, a union
  T all_to_all_exposed_by_phase[step_phase_count] = {};
  T phase_end[2] = {};                   ///< end of warm-up, end of steady phase
  T stream_busy[streams_per_rank] = {};  ///< per stream, the sum of its ops' durations
  int peak_activations = 0;
};

template <time_type T>
struct basic_step_metrics {
  using duration = T;
  T makespan{0};
  double bubble_ratio = 0;  ///< sum of idle / (ranks * makespan)
  T exposed_comm{0};        ///< over all ranks
  T exposed_by_phase[step_phase_count] = {};
  T all_to_all_by_phase[step_phase_count] = {};
  T all_to_all_exposed_by_phase[step_phase_count] = {};
  std::vector<basic_rank_metrics<T>> ranks;
};
using rank_metrics = basic_rank_metrics<seconds>;
using step_metrics = basic_step_metrics<seconds>;
using unit_step_metrics = basic_step_metrics<units>;

namespace detail {
template <class T>
using interval = std::pair<T, T>;

/// Sorts and merges `v` into disjoint intervals.
template <class T>
constexpr std::vector<interval<T>> merged(std::vector<interval<T>> v) {
  std::sort(v.begin(), v.end());
  std::vector<interval<T>> out;
  for (const interval<T>& x : v) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}
template <class T>
constexpr T length(const std::vector<interval<T>>& v) {
  T t{0};
  for (const interval<T>& x : v) t += x.second - x.first;
  return t;
}
/// Parts of disjoint `a` not covered by disjoint `b`.
template <class T>
constexpr std::vector<interval<T>> minus(const std::vector<interval<T>>& a,
                                         const std::vector<interval<T>>& b) {
  std::vector<interval<T>> out;
  std::size_t j = 0;
  for (interval<T> x : a) {
    while (j < b.size() && b[j].second <= x.first) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < x.second; ++k) {
      if (b[k].first > x.first) out.push_back({x.first, b[k].first});
      x.first = std::max(x.first, b[k].second);
      if (x.first >= x.second) break;
    }
    if (x.first < x.second) out.push_back(x);
  }
  return out;
}
template <class T>
constexpr T clipped(const std::vector<interval<T>>& v, T from, T to) {
  T t{0};
  for (const interval<T>& x : v)
    t += std::max(T{0}, std::min(x.second, to) - std::max(x.first, from));
  return t;
}

/// `measure`'s work, in constant evaluation and at run time.
template <time_type T>
constexpr basic_step_metrics<T> measured(const program& p, const basic_timeline<T>& t) {
  using interval = detail::interval<T>;
  basic_step_metrics<T> m;
  m.makespan = t.makespan;
  const int R = p.ranks();
  m.ranks.resize(static_cast<std::size_t>(R));
  std::vector<std::vector<interval>> compute(static_cast<std::size_t>(R)),
      comm(static_cast<std::size_t>(R)), a2a(static_cast<std::size_t>(R));
  std::vector<T> first_backward(static_cast<std::size_t>(R), t.makespan),
      last_forward(static_cast<std::size_t>(R), T{0});
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (!t.ran(i)) continue;
    const op& o = p.at(i);
    const std::size_t r = p.rank[i];
    const interval x{t.start[i], t.finish[i]};
    (stream_of(o.k) == stream_class::compute ? compute : comm)[r].push_back(x);
    if (o.k == kind::dispatch || o.k == kind::combine) a2a[r].push_back(x);
    m.ranks[r].stream_busy[p.stream[i]] += x.second - x.first;
    if (!is_layer_stage(o.k)) continue;
    if (o.ph == phase::F)
      last_forward[r] = std::max(last_forward[r], x.second);
    else
      first_backward[r] = std::min(first_backward[r], x.first);
  }
  const buffer<int> peak = peak_live_activations(p.source);
  T idle{0};
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    basic_rank_metrics<T>& rm = m.ranks[r];
    const auto busy = detail::merged(std::move(compute[r]));
    const auto talk = detail::merged(std::move(comm[r]));
    const auto exposed = detail::minus(talk, busy);
    rm.busy = detail::length(busy);
    rm.idle = t.makespan - rm.busy;
    rm.comm = detail::length(talk);
    rm.exposed_comm = detail::length(exposed);
    rm.phase_end[0] = std::min(first_backward[r], t.makespan);
    rm.phase_end[1] = std::max(last_forward[r], rm.phase_end[0]);
    const T bounds[4] = {T{0}, rm.phase_end[0], rm.phase_end[1], t.makespan};
    const auto all_to_all = detail::merged(std::move(a2a[r]));
    const auto a2a_exposed = detail::minus(all_to_all, busy);
    for (int ph = 0; ph < step_phase_count; ++ph) {
      rm.exposed_by_phase[ph] = detail::clipped(exposed, bounds[ph], bounds[ph + 1]);
      rm.all_to_all_by_phase[ph] = detail::clipped(all_to_all, bounds[ph], bounds[ph + 1]);
      rm.all_to_all_exposed_by_phase[ph] = detail::clipped(a2a_exposed, bounds[ph], bounds[ph + 1]);
      m.exposed_by_phase[ph] += rm.exposed_by_phase[ph];
      m.all_to_all_by_phase[ph] += rm.all_to_all_by_phase[ph];
      m.all_to_all_exposed_by_phase[ph] += rm.all_to_all_exposed_by_phase[ph];
    }
    rm.peak_activations = peak[r];
    idle += rm.idle;
    m.exposed_comm += rm.exposed_comm;
  }
  m.bubble_ratio = R > 0 && t.makespan > T{0} ? idle / (R * t.makespan) : 0;
  return m;
}

/// `measure` at run time (as `simulate_at_run_time`).
template <time_type T>
basic_step_metrics<T> measure_at_run_time(const program& p, const basic_timeline<T>& t) {
  return measured(p, t);
}
#ifdef WEFT_SEPARATE_COMPILATION
extern template basic_step_metrics<units> measure_at_run_time(const program&,
                                                              const basic_timeline<units>&);
extern template basic_step_metrics<seconds> measure_at_run_time(const program&,
                                                                const basic_timeline<seconds>&);
#endif
}  // namespace detail

/// The step's figures: makespan, bubble, per rank the phases' times, compute and exposed
/// communication (docs/metrics.md).
template <time_type T>
constexpr basic_step_metrics<T> measure(const program& p, const basic_timeline<T>& t) {
  if (std::is_constant_evaluated()) return detail::measured(p, t);
  return detail::measure_at_run_time(p, t);
}

}  // namespace weft
