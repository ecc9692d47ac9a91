// Simulating a step when all ranks share a few workers, as the CPU runtime runs them: a compute
// op needs one of `workers` threads for its whole duration; a transfer or collective holds none
// (it waits on a timer or its peer). Ops start in order of the time they become ready, the way the
// runtime's pool takes ready streams first come, first served. This is what a measured in-process
// run is predicted with; `simulate` gives every rank a device of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include <weft/sim/simulate.hpp>

namespace weft {

/// As `simulate` (the same options), with compute ops competing for `workers` threads. Both ops of
/// an overlapped whole-block pair are separate tasks here, each at its own (kind, phase) cost.
inline timeline simulate_on_workers(const program& p, const cost_model& c, unsigned workers,
                                    sim_options opt = {}) {
  const auto n = static_cast<std::uint32_t>(p.size());
  const auto Q = static_cast<std::uint32_t>(p.queue_begin.size() - 1);
  timeline t;
  t.start.assign(n, -1.0);
  t.finish.assign(n, -1.0);

  detail::event_graph ev = detail::events_of(p, opt.slot_barrier);
  const buffer<std::uint32_t>&dep_begin = ev.dep_begin, &deps = ev.deps;
  buffer<std::uint32_t>& pending = ev.pending;
  detail::stream_heads sh = detail::heads_of(p);
  buffer<std::uint32_t>&head = sh.head, &qpos = sh.qpos;
  std::vector<double> stream_free(Q, 0.0), ready_at(n, 0.0);
  const auto queue_of = [&](std::uint32_t i) { return program::queue_of(p.rank[i], p.stream[i]); };

  using item = std::pair<double, std::uint32_t>;  // (ready time, op)
  std::priority_queue<item, std::vector<item>, std::greater<>> ready;
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (unsigned w = 0; w < (workers ? workers : 1); ++w) free_at.push(0.0);
  std::vector<std::uint8_t> queued(n, 0);
  const auto offer = [&](std::uint32_t i) {  // queue `i` if it is at its stream's head and ready
    if (queued[i] || t.start[i] >= 0 || pending[i] != 0 || head[queue_of(i)] != qpos[i]) return;
    queued[i] = 1;
    ready.push({std::max(ready_at[i], stream_free[queue_of(i)]), i});
  };
  for (std::uint32_t q = 0; q < Q; ++q)
    if (p.queue_begin[q] < p.queue_begin[q + 1]) offer(p.queue[p.queue_begin[q]]);

  std::uint32_t done = 0;
  const auto finish = [&](std::uint32_t i, double begin, double end) {
    const std::uint32_t q = queue_of(i);
    t.start[i] = begin;
    t.finish[i] = end;
    t.makespan = std::max(t.makespan, end);
    stream_free[q] = end;
    ++done;
    if (++head[q] < p.queue_begin[q + 1]) offer(p.queue[head[q]]);
    for (std::uint32_t d = dep_begin[i]; d < dep_begin[i + 1]; ++d) {
      const std::uint32_t j = deps[d];
      ready_at[j] = std::max(ready_at[j], end);
      if (--pending[j] == 0) offer(j);
    }
  };
  while (!ready.empty()) {
    const auto [when, i] = ready.top();
    ready.pop();
    if (t.start[i] >= 0) continue;  // started with its transfer peer
    const op& o = p.at(i);
    if (is_p2p(o.k)) {  // a transfer: waits for its peer, holds no worker
      const std::uint32_t j = p.partner[i];
      // Until its peer is queued too, the peer's turn will start both.
      if (j != program::none && !queued[j]) continue;
      const double begin =
          j == program::none ? when : std::max({when, ready_at[j], stream_free[queue_of(j)]});
      const double end = begin + c.of(o.k, o.ph);
      finish(i, begin, end);
      if (j != program::none && t.start[j] < 0) finish(j, begin, end);
      continue;
    }
    if (stream_of(o.k) == stream_class::comm) {  // a collective: waits on the link, no worker
      finish(i, when, when + c.of(o.k, o.ph));
      continue;
    }
    const double worker = free_at.top();
    free_at.pop();
    const double begin = std::max(when, worker);
    const double end = begin + c.of(o.k, o.ph);
    free_at.push(end);
    finish(i, begin, end);
  }
  if (done < n) detail::report_blocked(p, head, t);
  return t;
}

}  // namespace weft
