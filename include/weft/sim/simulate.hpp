// The discrete-event simulator: runs a stream program over virtual time. Each stream executes
// its ops in issue order; an op starts when the op before it on its stream has finished and the
// events it waits for have fired; a transfer starts when both its send and its receive have
// reached the head of their streams and completes on both at once; an overlapped whole-block
// pair starts and ends together, costing F&B. Costs do not depend on contention, so processing
// ops as their last event fires gives the same times as a clock-ordered event queue, in time
// linear in ops and waits.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/program.hpp>

namespace weft {

struct sim_options {
  /// Each rank starts a slot only when its previous slot has finished: the host waits for every
  /// step, as a framework without overlap does (an all-to-all then blocks compute). Off: streams
  /// run independently, ordered only by their queues and events.
  bool slot_barrier = false;
  /// From an event firing to the op that waits for it starting: an event synchronisation on an
  /// accelerator, a thread waking up on the CPU runtime (`measured_event_latency` finds it).
  double event_latency = 0;
};

struct timeline {
  buffer<double> start, finish;  ///< per op of the program; < 0 if it never ran
  double makespan = 0;
  /// On a deadlock, per rank the first op (in issue order) that never started, else empty.
  buffer<std::uint32_t> blocked;
  constexpr bool deadlocked() const noexcept { return !blocked.empty(); }
};

namespace detail {
/// What each op waits for, reversed: the ops every op releases (`deps`, per op from
/// `dep_begin`) and how many events each op still waits for. The events are the program's waits
/// and, with a slot barrier, every op of the rank's previous non-empty slot.
struct event_graph {
  buffer<std::uint32_t> dep_begin, deps, pending;
};
constexpr event_graph events_of(const program& p, bool slot_barrier) {
  const auto n = static_cast<std::uint32_t>(p.size());
  const schedule& s = p.source;
  const auto for_each_event = [&](auto&& fn) {  // walked twice: to count, then to fill
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w) fn(p.waits[w], i);
    if (!slot_barrier) return;
    for (int r = 0; r < s.ranks(); ++r) {
      std::uint32_t prev_b = 0, prev_e = 0;
      for (std::uint32_t g = s.first_slot(r); g < s.end_slot(r); ++g) {
        const std::uint32_t b = s.first_op(g), e = s.slot_end[g];
        if (b == e) continue;
        for (std::uint32_t i = b; i < e; ++i)
          for (std::uint32_t j = prev_b; j < prev_e; ++j) fn(j, i);
        prev_b = b;
        prev_e = e;
      }
    }
  };
  event_graph g{buffer<std::uint32_t>(n + 1, 0), {}, buffer<std::uint32_t>(n, 0)};
  for_each_event([&](std::uint32_t from, std::uint32_t to) {
    ++g.pending[to];
    ++g.dep_begin[from + 1];
  });
  for (std::uint32_t i = 0; i < n; ++i) g.dep_begin[i + 1] += g.dep_begin[i];
  g.deps.resize(g.dep_begin[n]);
  buffer<std::uint32_t> fill = g.dep_begin;
  for_each_event([&](std::uint32_t from, std::uint32_t to) { g.deps[fill[from]++] = to; });
  return g;
}

/// Per (rank, stream) the position of its next op in `program::queue`, and per op its position.
struct stream_heads {
  buffer<std::uint32_t> head, qpos;
};
constexpr stream_heads heads_of(const program& p) {
  const auto Q = static_cast<std::uint32_t>(p.queue_begin.size() - 1);
  stream_heads h{buffer<std::uint32_t>(Q), buffer<std::uint32_t>(p.size())};
  for (std::uint32_t q = 0; q < Q; ++q) {
    h.head[q] = p.queue_begin[q];
    for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) h.qpos[p.queue[k]] = k;
  }
  return h;
}

/// After a run that could not finish: per rank, the first op (in issue order) at the head of one
/// of its streams — what that rank is stuck at.
template <class Heads>
constexpr void report_blocked(const program& p, const Heads& head, timeline& t) {
  t.blocked.assign(static_cast<std::size_t>(p.ranks()), program::none);
  for (std::uint32_t q = 0; q + 1 < p.queue_begin.size(); ++q) {
    if (head[q] == p.queue_begin[q + 1]) continue;
    const std::uint32_t i = p.queue[head[q]];
    std::uint32_t& b = t.blocked[p.rank[i]];
    b = b < i ? b : i;
  }
}
}  // namespace detail

constexpr double cost_of(const program& p, const cost_model& c, std::uint32_t i) noexcept {
  if (p.partner[i] != program::none && !is_p2p(p.at(i).k)) return c.pair();
  return c.of(p.at(i).k, p.at(i).ph);
}

constexpr timeline simulate(const program& p, const cost_model& c, sim_options opt = {}) {
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
  buffer<double> stream_free(Q, 0.0), ready_at(n, 0.0);
  const auto queue_of = [&](std::uint32_t i) { return program::queue_of(p.rank[i], p.stream[i]); };
  const auto can_start = [&](std::uint32_t i) {
    return t.start[i] < 0 && pending[i] == 0 && head[queue_of(i)] == qpos[i];
  };

  buffer<std::uint32_t> work;  // ops that may have become startable
  for (std::uint32_t q = 0; q < Q; ++q)
    if (p.queue_begin[q] < p.queue_begin[q + 1]) work.push_back(p.queue[p.queue_begin[q]]);
  std::uint32_t done = 0;
  const auto run = [&](std::uint32_t i, double begin) {
    const std::uint32_t q = queue_of(i);
    t.start[i] = begin;
    t.finish[i] = begin + cost_of(p, c, i);
    t.makespan = t.finish[i] > t.makespan ? t.finish[i] : t.makespan;
    stream_free[q] = t.finish[i];
    ++done;
    if (++head[q] < p.queue_begin[q + 1]) work.push_back(p.queue[head[q]]);
    for (std::uint32_t d = dep_begin[i]; d < dep_begin[i + 1]; ++d) {
      const std::uint32_t j = deps[d];
      const double at = t.finish[i] + opt.event_latency;
      ready_at[j] = ready_at[j] > at ? ready_at[j] : at;
      if (--pending[j] == 0) work.push_back(j);
    }
  };
  while (!work.empty()) {
    const std::uint32_t i = work.back();
    work.pop_back();
    if (!can_start(i)) continue;
    const double mine =
        ready_at[i] > stream_free[queue_of(i)] ? ready_at[i] : stream_free[queue_of(i)];
    const std::uint32_t j = p.partner[i];
    if (j == program::none) {
      run(i, mine);
      continue;
    }
    if (!can_start(j)) continue;  // the partner's turn will come
    const double theirs =
        ready_at[j] > stream_free[queue_of(j)] ? ready_at[j] : stream_free[queue_of(j)];
    const double begin = mine > theirs ? mine : theirs;
    run(i, begin);
    run(j, begin);
  }
  if (done < n) detail::report_blocked(p, head, t);
  return t;
}

}  // namespace weft
