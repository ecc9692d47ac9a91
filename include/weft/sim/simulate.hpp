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

struct timeline {
  buffer<double> start, finish;  ///< per op of the program; < 0 if it never ran
  double makespan = 0;
  /// On a deadlock, per rank the first op (in issue order) that never started, else empty.
  buffer<std::uint32_t> blocked;
  constexpr bool deadlocked() const noexcept { return !blocked.empty(); }
};

constexpr double cost_of(const program& p, const cost_model& c, std::uint32_t i) noexcept {
  if (p.partner[i] != program::none && !is_p2p(p.at(i).k)) return c.pair();
  return c.of(p.at(i).k, p.at(i).ph);
}

constexpr timeline simulate(const program& p, const cost_model& c) {
  const auto n = static_cast<std::uint32_t>(p.size());
  const auto Q = static_cast<std::uint32_t>(p.queue_begin.size() - 1);
  timeline t;
  t.start.assign(n, -1.0);
  t.finish.assign(n, -1.0);

  // Dependents of each op (reverse of `waits`), and how many events each op still waits for.
  buffer<std::uint32_t> dep_begin(n + 1, 0), deps(p.waits.size()), pending(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    pending[i] = p.wait_begin[i + 1] - p.wait_begin[i];
    for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
      ++dep_begin[p.waits[w] + 1];
  }
  for (std::uint32_t i = 0; i < n; ++i) dep_begin[i + 1] += dep_begin[i];
  {
    buffer<std::uint32_t> fill = dep_begin;
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
        deps[fill[p.waits[w]]++] = i;
  }
  buffer<std::uint32_t> head(Q), qpos(n);
  buffer<double> stream_free(Q, 0.0), ready_at(n, 0.0);
  for (std::uint32_t q = 0; q < Q; ++q) {
    head[q] = p.queue_begin[q];
    for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) qpos[p.queue[k]] = k;
  }
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
      ready_at[j] = ready_at[j] > t.finish[i] ? ready_at[j] : t.finish[i];
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
  if (done < n) {
    t.blocked.assign(static_cast<std::size_t>(p.ranks()), program::none);
    for (std::uint32_t q = 0; q < Q; ++q) {
      if (head[q] == p.queue_begin[q + 1]) continue;
      const std::uint32_t i = p.queue[head[q]];
      std::uint32_t& b = t.blocked[p.rank[i]];
      b = b < i ? b : i;
    }
  }
  return t;
}

}  // namespace weft
