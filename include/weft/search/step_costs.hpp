// What one step of a plan costs under a problem's cost model — a chunk's forward, fused
// backward, dX, dW, or an overlapped forward/backward pair, built from the generators' own
// sub-stage patterns — and what it needs from another chunk, with that transfer's cost. The one
// derivation the list scheduler (step lengths, inputs), the lower bounds (step lengths and
// compute work) and the step-by-step estimate (lengths, inputs; step_timing.hpp) share.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <weft/core/op.hpp>
#include <weft/core/time.hpp>
#include <weft/generators/stage_ops.hpp>
#include <weft/search/evaluate.hpp>

namespace weft::search {

/// A step's pattern measured two ways: its length as plans build it (its slots one after
/// another, a slot as long as its longest op, a slot holding a whole-block forward and backward
/// at the pair's cost) and its compute work (its compute ops' sum: what the rank's compute
/// stream spends on it whatever overlaps).
template <time_type T>
struct step_cost {
  T length{0}, work{0};
};

/// Pattern `p`'s step with its side 0 on chunk `chunk0` and side 1 (an overlapped pair's
/// backward) on `chunk1`: what differs between chunks is a whole block's cost per chunk
/// (`cost_model::chunks`), and a pair of whole blocks costs `pair_of` its halves.
template <time_type T>
step_cost<T> cost_of_step(const basic_problem<T>& q, const gen::pattern& p, int chunk0 = 0,
                          int chunk1 = 0) {
  step_cost<T> out;
  std::uint32_t b = 0;
  for (const std::uint32_t e : p.slot_end) {
    T slot{0};
    std::optional<op> fwd_block, bwd_block;
    for (std::uint32_t i = b; i < e; ++i) {
      op o = p.ops[i];
      o.chunk = static_cast<std::uint8_t>(o.mb == 0 ? chunk0 : chunk1);  // its side's chunk
      const T t = q.cost.of(o, q.model);
      if (o.k == kind::block && o.ph == phase::F) fwd_block = o;
      if (o.k == kind::block && o.ph == phase::B) bwd_block = o;
      slot = std::max(slot, t);
      if (stream_of(o.k) == stream_class::compute) out.work += t;
    }
    if (fwd_block && bwd_block) slot = q.cost.pair_of(*fwd_block, *bwd_block);
    out.length += slot;
    b = e;
  }
  return out;
}

/// A pipeline transfer's cost from chunk `from` to chunk `to` of micro-batch `mb` (none on one
/// rank): what a step waits for beyond the step it needs.
template <time_type T>
T hop(const basic_problem<T>& q, int mb, int from, int to, phase ph) {
  const model_desc& m = q.model;
  if (m.rank_of(from) == m.rank_of(to)) return T{0};
  return q.cost.of(make_op(kind::send, ph, mb, from, 0, 0, 0), m);
}

/// What each step needs from another chunk, for every (micro-batch, chunk) of a problem: a
/// forward (`phase::F`) the previous chunk's forward of its micro-batch, a backward or dX
/// (`phase::B`) the next chunk's backward (or dX), and that step's transfer (`hop`). Indices
/// are (mb, chunk)'s `at`; computed once, as the list scheduler and `step_timing` ask for them
/// once a step.
class step_inputs {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  struct input {
    std::size_t from = none;  ///< `at` of the step it needs; none at the path's end
    double hop = 0;           ///< T's count
  };

  template <time_type T>
  explicit step_inputs(const basic_problem<T>& q)
      : chunks_(static_cast<std::size_t>(q.model.chunks())) {
    const model_desc& m = q.model;
    const std::size_t n = static_cast<std::size_t>(m.micro) * chunks_;
    f_.resize(n);
    b_.resize(n);
    owner_.assign(n, -1);
    f_out_.assign(n, 0.0);
    b_out_.assign(n, 0.0);
    for (int mb = 0; mb < m.micro; ++mb)
      for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
        owner_[at(mb, c)] = m.rank_of(c);
        if (const int from = m.prev_chunk(mb, c); from >= 0) {
          f_[at(mb, c)] = {at(mb, from), hop(q, mb, from, c, phase::F).count()};
          f_out_[at(mb, from)] = f_[at(mb, c)].hop;
        }
        if (const int from = m.next_chunk(mb, c); from >= 0) {
          b_[at(mb, c)] = {at(mb, from), hop(q, mb, from, c, phase::B).count()};
          b_out_[at(mb, from)] = b_[at(mb, c)].hop;
        }
      }
  }

  std::size_t at(int mb, int c) const {
    return static_cast<std::size_t>(mb) * chunks_ + static_cast<std::size_t>(c);
  }
  /// What (mb, chunk) `k`'s forward, and its backward, need.
  const input& forward(std::size_t k) const { return f_[k]; }
  const input& backward(std::size_t k) const { return b_[k]; }
  /// The transfer that carries (mb, chunk) `k`'s forward output, and its backward's, to the step
  /// that needs it (T's count; 0 on one rank or at the path's end).
  double forward_out(std::size_t k) const { return f_out_[k]; }
  double backward_out(std::size_t k) const { return b_out_[k]; }
  /// The rank of (mb, chunk) `k`; -1 when the chunk is not on mb's path.
  int owner(std::size_t k) const { return owner_[k]; }
  /// When `in` has arrived, `done` holding when each step ended (+infinity while it has not).
  static double arrival(const input& in, const std::vector<double>& done) {
    return in.from == none ? 0.0 : done[in.from] + in.hop;
  }

 private:
  std::size_t chunks_;
  std::vector<input> f_, b_;
  std::vector<double> f_out_, b_out_;
  std::vector<int> owner_;
};

/// Every step of problem `q`'s chunks (as if every chunk cost the same): F, fused B, the split
/// backward's halves I (dX) and W (dW), and the overlapped pair FB.
template <time_type T>
struct step_costs {
  step_cost<T> f, b, i, w, fb;

  /// With costs per chunk, every step at the cheapest chunk's cost (`cost_model::floor`): what
  /// the bounds need to stay bounds, and a fair guess for the list scheduler.
  explicit step_costs(const basic_problem<T>& problem) : step_costs(problem, floored(problem)) {}

 private:
  step_costs(const basic_problem<T>&, const basic_problem<T>& q)
      : f(cost_of_step(q, gen::forward_pattern(q.model, q.overlap))),
        b(cost_of_step(q, gen::backward_pattern(q.model, q.overlap, phase::B))),
        i(cost_of_step(q, gen::backward_pattern(q.model, q.overlap, phase::dX))),
        w(cost_of_step(q, gen::backward_pattern(q.model, q.overlap, phase::dW))),
        fb(cost_of_step(q, gen::overlap_pattern(q.model, q.overlap))) {}
  static basic_problem<T> floored(const basic_problem<T>& q) {
    basic_problem<T> out = q;
    out.cost = q.cost.floor();
    return out;
  }
};

}  // namespace weft::search
