// What a simulated step tells: makespan, bubble, exposed communication (overall and per phase),
// stream utilisation, peak live activations. Definitions in docs/metrics.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <weft/schedule/memory.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

/// Phases of a rank's step: warm-up until its first backward op starts, cool-down after its last
/// forward op ends, steady in between.
enum class step_phase : std::uint8_t { warmup, steady, cooldown };
inline constexpr int step_phase_count = 3;

struct rank_metrics {
  double busy = 0;          ///< time some compute stream of the rank is busy (a union)
  double idle = 0;          ///< makespan - busy
  double comm = 0;          ///< time some comm stream of the rank is busy (a union)
  double exposed_comm = 0;  ///< comm time not covered by compute on the rank
  double exposed_by_phase[step_phase_count] = {};
  double all_to_all_by_phase[step_phase_count] = {};  ///< MoE dispatch/combine time, a union
  double all_to_all_exposed_by_phase[step_phase_count] = {};
  double phase_end[2] = {};                   ///< end of warm-up, end of steady phase
  double stream_busy[streams_per_rank] = {};  ///< per stream, the sum of its ops' durations
  int peak_activations = 0;
};

struct step_metrics {
  double makespan = 0;
  double bubble_ratio = 0;  ///< sum of idle / (ranks * makespan)
  double exposed_comm = 0;  ///< over all ranks
  double exposed_by_phase[step_phase_count] = {};
  double all_to_all_by_phase[step_phase_count] = {};
  double all_to_all_exposed_by_phase[step_phase_count] = {};
  std::vector<rank_metrics> ranks;
};

namespace detail {
using interval = std::pair<double, double>;

/// Sorts and merges `v` into disjoint intervals.
inline std::vector<interval> merged(std::vector<interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<interval> out;
  for (const interval& x : v) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}
inline double length(const std::vector<interval>& v) {
  double t = 0;
  for (const interval& x : v) t += x.second - x.first;
  return t;
}
/// Parts of disjoint `a` not covered by disjoint `b`.
inline std::vector<interval> minus(const std::vector<interval>& a, const std::vector<interval>& b) {
  std::vector<interval> out;
  std::size_t j = 0;
  for (interval x : a) {
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
inline double clipped(const std::vector<interval>& v, double from, double to) {
  double t = 0;
  for (const interval& x : v) t += std::max(0.0, std::min(x.second, to) - std::max(x.first, from));
  return t;
}
}  // namespace detail

inline step_metrics measure(const program& p, const timeline& t) {
  step_metrics m;
  m.makespan = t.makespan;
  const int R = p.ranks();
  m.ranks.resize(static_cast<std::size_t>(R));
  std::vector<std::vector<detail::interval>> compute(static_cast<std::size_t>(R)),
      comm(static_cast<std::size_t>(R)), a2a(static_cast<std::size_t>(R));
  std::vector<double> first_backward(static_cast<std::size_t>(R), t.makespan),
      last_forward(static_cast<std::size_t>(R), 0.0);
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (t.start[i] < 0) continue;
    const op& o = p.at(i);
    const std::size_t r = p.rank[i];
    const detail::interval x{t.start[i], t.finish[i]};
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
  double idle = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    rank_metrics& rm = m.ranks[r];
    const auto busy = detail::merged(std::move(compute[r]));
    const auto talk = detail::merged(std::move(comm[r]));
    const auto exposed = detail::minus(talk, busy);
    rm.busy = detail::length(busy);
    rm.idle = t.makespan - rm.busy;
    rm.comm = detail::length(talk);
    rm.exposed_comm = detail::length(exposed);
    rm.phase_end[0] = std::min(first_backward[r], t.makespan);
    rm.phase_end[1] = std::max(last_forward[r], rm.phase_end[0]);
    rm.exposed_by_phase[0] = detail::clipped(exposed, 0, rm.phase_end[0]);
    rm.exposed_by_phase[1] = detail::clipped(exposed, rm.phase_end[0], rm.phase_end[1]);
    rm.exposed_by_phase[2] = detail::clipped(exposed, rm.phase_end[1], t.makespan);
    const auto all_to_all = detail::merged(std::move(a2a[r]));
    const auto a2a_exposed = detail::minus(all_to_all, busy);
    const double bounds[4] = {0, rm.phase_end[0], rm.phase_end[1], t.makespan};
    for (int ph = 0; ph < step_phase_count; ++ph) {
      rm.all_to_all_by_phase[ph] = detail::clipped(all_to_all, bounds[ph], bounds[ph + 1]);
      rm.all_to_all_exposed_by_phase[ph] = detail::clipped(a2a_exposed, bounds[ph], bounds[ph + 1]);
      m.all_to_all_by_phase[ph] += rm.all_to_all_by_phase[ph];
      m.all_to_all_exposed_by_phase[ph] += rm.all_to_all_exposed_by_phase[ph];
    }
    rm.peak_activations = peak[r];
    idle += rm.idle;
    m.exposed_comm += rm.exposed_comm;
    for (int ph = 0; ph < step_phase_count; ++ph) m.exposed_by_phase[ph] += rm.exposed_by_phase[ph];
  }
  m.bubble_ratio = R > 0 && t.makespan > 0 ? idle / (R * t.makespan) : 0;
  return m;
}

}  // namespace weft
