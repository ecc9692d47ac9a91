// Calibrating the cost model from a real run: every (kind, phase) costs what it took on average.
// A compute op's time is its span in the timeline; a comm op's span also holds the wait for its
// late peers, so it takes the span from the moment every party had started to the moment every
// party had it (what the executor reports as `comm_span`), or keeps the link model's cost when
// that was not measured.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/cost.hpp>

namespace weft {

/// `base` with the compute costs replaced by their mean durations in `measured` (a timeline of
/// `p`, as the executor records it) and, given `comm_span` (per op), the comm costs by its
/// means. (kind, phase) pairs that did not run keep `base`'s cost. A table's time is of a
/// layer's whole sub-stage (cost.hpp): an op of one of n AMPipe splits or pieces counts n times
/// its duration, so the calibrated table gives each op its mean back. With sites (`base.
/// site_ranks`), transfers keep `base`'s costs: one mean cannot stand for two links, and an
/// emulated link's costs are the link model's.
///
/// Given `cpu` (per op copy, as the CPU runtime's `run_measures::cpu`, replica 0's first — the
/// ones the timeline holds, and the ones used), a compute op costs its CPU
/// time instead of its span: its work at full rate, for a simulation that models the cores it
/// shared (`sim_options::cores`) to slow it down again.
inline cost_model calibrated(const program& p, const timeline& measured, cost_model base,
                             std::span<const seconds> comm_span = {},
                             std::span<const seconds> cpu = {}) {
  const bool work = p.size() > 0 && !cpu.empty() && cpu.size() % p.size() == 0;
  seconds sum[kind_count][phase_count] = {};
  std::uint32_t count[kind_count][phase_count] = {};
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const op& o = p.at(i);
    if (!measured.ran(i)) continue;
    const bool compute = stream_of(o.k) == stream_class::compute;
    if (!compute && comm_span.size() != p.size()) continue;
    if (is_p2p(o.k) && base.site_ranks > 0) continue;
    const int k = static_cast<int>(o.k), ph = static_cast<int>(o.ph);
    const double parts = is_p2p(o.k) ? 1 : p.source.model.shares_of(o.k, o.ph);
    const seconds took = !compute ? comm_span[i] : work ? cpu[i] : measured.duration_of(i);
    sum[k][ph] += took * parts;
    ++count[k][ph];
  }
  for (int k = 0; k < kind_count; ++k)
    for (int ph = 0; ph < phase_count; ++ph)
      if (count[k][ph] > 0) base.time[k][ph] = sum[k][ph] / static_cast<double>(count[k][ph]);
  return base;
}

/// The mean time from the last event a comm op waits for to the op starting, when that event
/// was what held it back: how long the runtime takes to react to an event (`sim_options::
/// event_latency`). Comm ops, because their streams rarely wait for a free worker; `posted` is
/// when each op was started on its stream (the executor's `run_result::posted`; a transfer's
/// start in the timeline waits for its peer too). 0 if none waited.
inline seconds measured_event_latency(const program& p, const timeline& measured,
                                      std::span<const seconds> posted) {
  if (posted.size() != p.size() || measured.finish.size() != p.size())
    throw config_error("measured_event_latency: " + std::to_string(posted.size()) +
                       " posting times and a timeline of " +
                       std::to_string(measured.finish.size()) + " ops for a program of " +
                       std::to_string(p.size()));
  std::vector<seconds> lag;
  for (std::uint32_t q = 0; q + 1 < p.queue_begin.size(); ++q) {
    seconds prev{0};  // when the op before on the stream finished
    for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
      const std::uint32_t i = p.queue[k];
      if (posted[i] < seconds{0}) break;
      seconds ready{-1};
      for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
        ready = std::max(ready, measured.finish[p.waits[w]]);
      if (stream_of(p.at(i).k) == stream_class::comm && ready > prev)
        lag.push_back(std::max(seconds{0}, posted[i] - ready));
      prev = measured.finish[i];
    }
  }
  // The mean, not the median: a step adds these up along its critical path, and what an
  // oversubscribed core adds lives in the tail a median would hide.
  seconds sum{0};
  for (const seconds x : lag) sum += x;
  return lag.empty() ? seconds{0} : sum / static_cast<double>(lag.size());
}

}  // namespace weft
