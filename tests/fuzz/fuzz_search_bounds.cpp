// libFuzzer harness: the search's lower bounds are bounds. The input describes a small problem
// (ranks, micro-batches, a loop or a V, whole blocks or MoE sub-stages, costs with overlapped
// pairs, transfers, a memory cap); no bound may exceed any plan the search judges legal — a
// generator's, the best found — nor the exhaustive optimum where that is small enough to find.
// A pair shorter than its longer half is outside what the bounds assume: it must be refused.
#include <cstddef>
#include <cstdint>

#include <weft/core/error.hpp>
#include <weft/search/exact.hpp>
#include <weft/search/search.hpp>

#include "fuzz_input.hpp"

namespace {

/// A cost in [lo, lo + 4), in steps of 1/64.
double cost(weft::fuzz::choices& c, double lo) { return lo + c.byte() / 64.0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft;
  using namespace weft::search;
  fuzz::choices c{data, size};
  const std::uint8_t shape = c.byte();
  const bool vee = shape & 1, moe = shape & 2, split = !(shape & 4);
  const int pp = 2 + (shape >> 3) % 2;
  const int micro = 1 + c.byte() % 5;
  unit_problem q;
  q.model = {.ranks = pp,
             .chunks_per_rank = vee ? 2 : 1 + c.byte() % 2,
             .place = vee ? placement::vee : placement::loop,
             .micro = micro,
             .max_live = c.byte() % 2 == 0 ? 0 : 1 + c.byte() % 8};
  if (moe) {
    q.model.stages = stage_set::moe_with_shared();
    q.overlap = c.byte() % 2 == 0 ? overlap_options::all() : overlap_options::none();
    q.cost = unit_cost_model::deepseek_v3_like();
    const double a2a = cost(c, 0), p2p = cost(c, 0);
    for (kind k : {kind::dispatch, kind::combine})
      q.cost.set(k, phase::F, a2a).set(k, phase::B, a2a);
    for (kind k : {kind::send, kind::recv}) q.cost.set(k, phase::F, p2p).set(k, phase::B, p2p);
  } else {
    const double F = cost(c, 0.25), W = cost(c, 0.125), B = W + cost(c, 0.125);
    // FB anywhere from 0 to F + B + 1: below the longer half it must be refused.
    const double FB = (F + B + 1) * c.byte() / 255.0;
    q.cost = unit_cost_model::pipeline({.F = F, .B = B, .W = W, .FB = FB, .P2P = cost(c, 0)})
                 .scaled_compute(1.0 / q.model.chunks_per_rank);
    if (c.byte() % 2 == 0)
      q.cost.set(kind::block, phase::dX,
                 q.cost.of(kind::block, phase::B) * (0.25 + c.byte() / 128.0));
  }
  if (validate(q.model) != model_error::none) return 0;
  const bool short_pair = !moe && q.cost.pair() < std::max(q.cost.of(kind::block, phase::F),
                                                           q.cost.of(kind::block, phase::B));
  lower_bounds<units> b;
  try {
    b = bounds_of(q, split);
  } catch (const config_error&) {
    if (!short_pair) __builtin_trap();  // refused, yet within the assumption
    return 0;
  }
  if (short_pair) __builtin_trap();  // outside the bounds' assumption, yet bounded
  const double bound = b.best().count();
  const search_result<units> r =
      find_schedule(q, {.budget_s = 5, .max_evaluations = 80, .seed = c.byte(), .split = split});
  constexpr double slack = 1e-9;
  for (const auto& g : r.generators)
    if (g.result && bound > g.result->makespan.count() + slack) __builtin_trap();
  if (r.best && bound > r.best->makespan.count() + slack) __builtin_trap();
  if (pp == 2 && micro <= 3) {
    const bool pair =
        moe ? q.overlap.pair_forward_backward
            : q.cost.pair() < q.cost.of(kind::block, phase::F) + q.cost.of(kind::block, phase::B);
    const auto e = exact_schedule(q, split, pair, 4000);
    if (e && e->best && bound > e->best->makespan.count() + slack) __builtin_trap();
  }
  return 0;
}
