// Lower bounds on the makespan of any plan of a problem, to judge a search's result by ("within
// x % of the bound"). Each holds for every plan the search can produce — every chunk's
// micro-batches in order, fused or split backwards, overlapped pairs no shorter than their
// longer half — under the same simulator:
//
// - critical path: one micro-batch alone, through every chunk and back (the simulator's own
//   makespan of it, fused or split, whichever is shorter): no micro-batch finishes sooner;
// - work: per rank, the earliest any of its steps can start (a forward has to reach it first),
//   plus the compute its steps hold (one compute stream per rank runs them one at a time), plus
//   what must follow its last step on other ranks (nothing when dW may come last);
// - in order: the rank of the first chunk runs every micro-batch's forward there in order, so
//   the last one starts after micro - 1 forwards, and then has its critical path to go;
// - memory: under a cap of L live units, a rank claims its k-th unit (at a forward's start) only
//   after its (k-1)-th and that forward's compute, and after its (k-L)-th was freed — a unit
//   lives at least its round trip alone (forward down the pipeline and backward back up to the
//   rank); from the k-th claim on, the rank still computes n - k units, and the last unit has the
//   rest of its micro-batch's path to go.
#pragma once

#include <algorithm>
#include <limits>

#include <weft/schedules/stage_ops.hpp>
#include <weft/search/evaluate.hpp>

namespace weft::search {

template <time_type T>
struct lower_bounds {
  T critical_path{0};
  T work{0};
  T in_order{0};
  T memory{0};
  /// The largest of them: no plan is faster.
  constexpr T best() const noexcept {
    return std::max(std::max(critical_path, memory), std::max(work, in_order));
  }
};

namespace detail {
/// Compute time of a step's pattern (its compute ops; an overlapped whole-block pair counts its
/// pair cost).
template <time_type T>
T compute_of(const basic_problem<T>& q, const gen::pattern& p) {
  T total{0};
  bool fwd_block = false, bwd_block = false;
  for (const op& o : p.ops) {
    if (stream_of(o.k) != stream_class::compute) continue;
    total += q.cost.of(o, q.model);
    fwd_block = fwd_block || (o.k == kind::block && o.ph == phase::F);
    bwd_block = bwd_block || (o.k == kind::block && o.ph == phase::B);
  }
  if (fwd_block && bwd_block) total = std::min(total, q.cost.pair());
  return total;
}

/// One micro-batch through every chunk and back, fused or split: the simulated run.
template <time_type T>
basic_timeline<T> alone(const basic_problem<T>& q, bool split, program& prog) {
  model_desc m = q.model;
  m.micro = 1;
  m.bidirectional = false;
  m.max_live = 0;
  gen::pipeline_builder b(m, q.overlap);
  const int C = m.chunks();
  for (int r = 0; r < m.ranks; ++r) {
    b.add_rank();
    for (int c = 0; c < C; ++c)
      if (m.rank_of(c) == r) b.forward(0, c);
    for (int c = C - 1; c >= 0; --c)
      if (m.rank_of(c) == r) {
        if (!split) {
          b.backward(0, c);
          continue;
        }
        b.backward_input(0, c);
      }
    if (split)
      for (int c = C - 1; c >= 0; --c)
        if (m.rank_of(c) == r) b.backward_weight(0, c);
  }
  prog = lower(b.take());
  return simulate(prog, q.cost);
}
}  // namespace detail

/// The bounds of problem `q`. `split`: plans may split backwards into dX and dW (then dW may be
/// a rank's last step, and nothing need follow it). Bidirectional models (DualPipe) get the
/// critical path and work bounds of their longer direction.
template <time_type T>
lower_bounds<T> bounds_of(const basic_problem<T>& q, bool split = true) {
  const model_desc& m = q.model;
  lower_bounds<T> out;
  program fused_prog, split_prog;
  const basic_timeline<T> fused = detail::alone(q, false, fused_prog);
  const basic_timeline<T> halves = split ? detail::alone(q, true, split_prog) : fused;
  out.critical_path = std::min(fused.makespan, halves.makespan);
  // A bidirectional model's micro-batches pass half the chunks: the simulation above passes all,
  // which is longer than either direction — use the work bound alone there.
  if (m.bidirectional) out.critical_path = T{0};

  const T f = detail::compute_of(q, gen::forward_pattern(m, q.overlap));
  const T b_fused = detail::compute_of(q, gen::backward_pattern(m, q.overlap, phase::B));
  const T b_split = detail::compute_of(q, gen::backward_pattern(m, q.overlap, phase::dX)) +
                    detail::compute_of(q, gen::backward_pattern(m, q.overlap, phase::dW));
  const T b = split ? std::min(b_fused, b_split) : b_fused;
  T unit = f + b;
  if (m.stages.has(kind::block)) unit = std::min(unit, q.cost.pair());  // pairs

  // Per rank: its first compute op's start alone, and (fused only) what follows its last.
  const int R = m.ranks;
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> head(static_cast<std::size_t>(R), inf), last_end(head);
  for (std::uint32_t i = 0; i < fused_prog.size(); ++i) {
    if (stream_of(fused_prog.at(i).k) != stream_class::compute) continue;
    const auto r = static_cast<std::size_t>(fused_prog.rank[i]);
    head[r] = std::min(head[r], fused.start[i].count());
  }
  for (std::uint32_t i = 0; i < fused_prog.size(); ++i) {
    const op& o = fused_prog.at(i);
    if (stream_of(o.k) != stream_class::compute || o.ph == phase::F) continue;
    const auto r = static_cast<std::size_t>(fused_prog.rank[i]);
    // The earliest a backward of rank r can end, alone: what follows it is at least the rest.
    last_end[r] = std::min(last_end[r], (fused.makespan - fused.finish[i]).count());
  }
  for (int r = 0; r < R; ++r) {
    int units_here = 0;
    for (int c = 0; c < m.chunks(); ++c)
      if (m.rank_of(c) == r)
        for (int mb = 0; mb < m.micro; ++mb) units_here += m.carries(mb, c) ? 1 : 0;
    const auto ri = static_cast<std::size_t>(r);
    const T tail = split || last_end[ri] == inf ? T{0} : T(last_end[ri]);
    const T w = T(head[ri] == inf ? 0.0 : head[ri]) + unit * static_cast<double>(units_here) + tail;
    out.work = std::max(out.work, w);
  }
  // A forward takes at least its compute (inside a whole-block pair, at least what the pair adds
  // to its backward).
  T forward_compute = f;
  if (m.stages.has(kind::block))
    forward_compute = std::min(f, std::max(T{0}, q.cost.pair() - b_fused));
  // Memory: per chunk, alone, when its forward starts and when its unit is freed (its last
  // backward op ends), fused or split, whichever frees sooner.
  if (m.max_live > 0) {
    const int C = m.chunks();
    std::vector<double> life(static_cast<std::size_t>(C), inf), rest(life);
    for (const auto* run : {&fused, &halves}) {
      const program& p = run == &fused ? fused_prog : (split ? split_prog : fused_prog);
      std::vector<double> first(static_cast<std::size_t>(C), inf),
          freed(static_cast<std::size_t>(C), 0.0);
      for (std::uint32_t i = 0; i < p.size(); ++i) {
        const op& o = p.at(i);
        if (!is_layer_stage(o.k)) continue;
        const auto c = static_cast<std::size_t>(o.chunk);
        if (o.ph == phase::F)
          first[c] = std::min(first[c], run->start[i].count());
        else
          freed[c] = std::max(freed[c], run->finish[i].count());
      }
      for (std::size_t c = 0; c < static_cast<std::size_t>(C); ++c) {
        life[c] = std::min(life[c], freed[c] - first[c]);
        rest[c] = std::min(rest[c], run->makespan.count() - first[c]);
      }
    }
    for (int r = 0; r < R; ++r) {
      double l = inf, after = inf;
      int n = 0;
      for (int c = 0; c < C; ++c)
        if (m.rank_of(c) == r) {
          l = std::min(l, life[static_cast<std::size_t>(c)]);
          after = std::min(after, rest[static_cast<std::size_t>(c)]);
          for (int mb = 0; mb < m.micro; ++mb) n += m.carries(mb, c) ? 1 : 0;
        }
      if (n == 0) continue;
      // The k-th claim: after the one before it and its forward's compute, and a lifetime
      // after the claim L before it; then the rank still computes the units from k on, and
      // the last unit has its own path to go.
      std::vector<double> claim(static_cast<std::size_t>(n));
      double lb = 0;
      for (int k = 0; k < n; ++k) {
        const auto ki = static_cast<std::size_t>(k);
        double c =
            k == 0 ? (head[static_cast<std::size_t>(r)] == inf ? 0.0
                                                               : head[static_cast<std::size_t>(r)])
                   : claim[ki - 1] + forward_compute.count();
        if (k >= m.max_live) c = std::max(c, claim[ki - static_cast<std::size_t>(m.max_live)] + l);
        claim[ki] = c;
        lb = std::max(lb, c + static_cast<double>(n - k) * unit.count());
      }
      lb = std::max(lb, claim.back() + after);
      out.memory = std::max(out.memory, T(lb));
    }
  }
  // The first chunk's rank forwards every micro-batch there, in order.
  if (!m.bidirectional)
    out.in_order = forward_compute * static_cast<double>(m.micro - 1) + out.critical_path;
  return out;
}

}  // namespace weft::search
