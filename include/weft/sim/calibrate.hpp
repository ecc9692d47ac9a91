// Calibrating the cost model from a real run: every compute (kind, phase) costs what it took on
// average in a measured timeline. What a run cannot tell apart from waiting — communication,
// whose measured time includes waiting for the partner — keeps the link model's cost.
#pragma once

#include <cstdint>

#include <weft/sim/cost.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

/// `base` with the compute costs replaced by their mean durations in `measured` (a timeline of
/// `p`, as the executor records it); (kind, phase) pairs that did not run keep `base`'s cost.
inline cost_model calibrated(const program& p, const timeline& measured, cost_model base) {
  double sum[kind_count][phase_count] = {};
  std::uint32_t count[kind_count][phase_count] = {};
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const op& o = p.at(i);
    if (stream_of(o.k) != stream_class::compute || measured.start[i] < 0) continue;
    const int k = static_cast<int>(o.k), ph = static_cast<int>(o.ph);
    sum[k][ph] += measured.finish[i] - measured.start[i];
    ++count[k][ph];
  }
  for (int k = 0; k < kind_count; ++k)
    for (int ph = 0; ph < phase_count; ++ph)
      if (count[k][ph] > 0) base.time[k][ph] = sum[k][ph] / count[k][ph];
  return base;
}

}  // namespace weft
