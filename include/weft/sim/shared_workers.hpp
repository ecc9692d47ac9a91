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
/// With `replicas` > 1 every rank runs `replicas` times over (expert parallelism, as the
/// executor runs it): the copies compete for the same workers, a copy's transfers go to the
/// same copy of the peer, and the copies of an all-to-all start together, when the last of them
/// is ready. Returns copy 0's timeline.
inline timeline simulate_on_workers(const program& p, const cost_model& c, unsigned workers,
                                    sim_options opt = {}, int replicas = 1) {
  const auto n = static_cast<std::uint32_t>(p.size());
  const auto Q = static_cast<std::uint32_t>(p.queue_begin.size() - 1);
  const auto R = static_cast<std::uint32_t>(replicas > 1 ? replicas : 1);
  // Copy r of op i is i + r * n; of queue q, q + r * Q.
  std::vector<double> start(std::size_t{n} * R, -1.0), stream_free(std::size_t{Q} * R, 0.0),
      ready_at(std::size_t{n} * R, 0.0), when(std::size_t{n} * R, 0.0);
  timeline t;
  double makespan = 0;

  const detail::event_graph ev = detail::events_of(p, opt.slot_barrier);
  const detail::stream_heads sh = detail::heads_of(p);
  std::vector<std::uint32_t> pending, head;
  for (std::uint32_t r = 0; r < R; ++r) {
    pending.insert(pending.end(), ev.pending.begin(), ev.pending.end());
    head.insert(head.end(), sh.head.begin(), sh.head.end());
  }
  const auto queue_of = [&](std::uint32_t x) {
    const std::uint32_t i = x % n;
    return x / n * Q + program::queue_of(p.rank[i], p.stream[i]);
  };

  using item = std::pair<double, std::uint32_t>;  // (ready time, op copy)
  std::priority_queue<item, std::vector<item>, std::greater<>> ready;
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (unsigned w = 0; w < (workers ? workers : 1); ++w) free_at.push(0.0);
  std::vector<std::uint8_t> queued(std::size_t{n} * R, 0);
  std::vector<std::uint32_t> arrived(n, 0);  // per all-to-all: copies queued so far
  const auto offer = [&](std::uint32_t x) {  // queue `x` if it is at its stream's head and ready
    const std::uint32_t i = x % n;
    if (queued[x] || start[x] >= 0 || pending[x] != 0 || head[queue_of(x)] != sh.qpos[i]) return;
    queued[x] = 1;
    when[x] = std::max(ready_at[x], stream_free[queue_of(x)]);
    ready.push({when[x], x});
  };
  for (std::uint32_t r = 0; r < R; ++r)
    for (std::uint32_t q = 0; q < Q; ++q)
      if (p.queue_begin[q] < p.queue_begin[q + 1]) offer(p.queue[p.queue_begin[q]] + r * n);

  std::uint32_t done = 0;
  const auto finish = [&](std::uint32_t x, double begin, double end) {
    const std::uint32_t q = queue_of(x), i = x % n, base = x - i;
    start[x] = begin;
    if (x < n) {
      t.start[i] = begin;
      t.finish[i] = end;
    }
    makespan = std::max(makespan, end);
    stream_free[q] = end;
    ++done;
    if (++head[q] < p.queue_begin[q % Q + 1]) offer(p.queue[head[q]] + base);
    for (std::uint32_t d = ev.dep_begin[i]; d < ev.dep_begin[i + 1]; ++d) {
      const std::uint32_t j = ev.deps[d] + base;
      ready_at[j] = std::max(ready_at[j], end + opt.event_latency);
      if (--pending[j] == 0) offer(j);
    }
  };
  t.start.assign(n, -1.0);
  t.finish.assign(n, -1.0);
  while (!ready.empty()) {
    const auto [at, x] = ready.top();
    ready.pop();
    if (start[x] >= 0) continue;  // started with its transfer peer or its other copies
    const std::uint32_t i = x % n, base = x - i;
    const op& o = p.at(i);
    if (is_p2p(o.k)) {  // a transfer: waits for its peer, holds no worker
      const std::uint32_t j = p.partner[i] == program::none ? program::none : p.partner[i] + base;
      // Until its peer is queued too, the peer's turn will start both.
      if (j != program::none && !queued[j]) continue;
      const double begin = j == program::none ? at : std::max(at, when[j]);
      const double end = begin + c.of(o.k, o.ph);
      finish(x, begin, end);
      if (j != program::none && start[j] < 0) finish(j, begin, end);
      continue;
    }
    if (stream_of(o.k) == stream_class::comm) {  // a collective: waits on the link, no worker
      if (o.k == kind::dispatch || o.k == kind::combine) {
        if (++arrived[i] < R) continue;  // the last copy to arrive starts them all
        double begin = at;
        for (std::uint32_t r = 0; r < R; ++r) begin = std::max(begin, when[i + r * n]);
        for (std::uint32_t r = 0; r < R; ++r) finish(i + r * n, begin, begin + c.of(o.k, o.ph));
      } else {
        finish(x, at, at + c.of(o.k, o.ph));
      }
      continue;
    }
    const double worker = free_at.top();
    free_at.pop();
    const double begin = std::max(at, worker);
    const double end = begin + c.of(o.k, o.ph);
    free_at.push(end);
    finish(x, begin, end);
  }
  t.makespan = makespan;
  if (done < std::size_t{n} * R) {
    std::vector<std::uint32_t> first(head.begin(), head.begin() + Q);
    detail::report_blocked(p, first, t);
  }
  return t;
}

}  // namespace weft
