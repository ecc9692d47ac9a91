// What one step of a plan costs under a problem's cost model — a chunk's forward, fused
// backward, dX, dW, or an overlapped forward/backward pair, built from the generators' own
// sub-stage patterns. The one derivation the list scheduler (step lengths) and the lower bounds
// (step lengths and compute work) share.
#pragma once

#include <algorithm>
#include <cstdint>

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

template <time_type T>
step_cost<T> cost_of_step(const basic_problem<T>& q, const gen::pattern& p) {
  step_cost<T> out;
  std::uint32_t b = 0;
  for (const std::uint32_t e : p.slot_end) {
    T slot{0};
    bool fwd_block = false, bwd_block = false;
    for (std::uint32_t i = b; i < e; ++i) {
      const op& o = p.ops[i];
      const T t = q.cost.of(o, q.model);
      fwd_block = fwd_block || (o.k == kind::block && o.ph == phase::F);
      bwd_block = bwd_block || (o.k == kind::block && o.ph == phase::B);
      slot = std::max(slot, t);
      if (stream_of(o.k) == stream_class::compute) out.work += t;
    }
    if (fwd_block && bwd_block) slot = q.cost.pair();
    out.length += slot;
    b = e;
  }
  return out;
}

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
