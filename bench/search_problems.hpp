// The schedule search's benchmark problems, one home for both benchmarks that judge it (the
// suite, and the exhaustive optima of small instances).
#pragma once

#include <weft/search/search.hpp>

namespace weft::bench {

/// The suite's MoE profile on `pp` ranks and `micro` micro-batches under a cap of `cap` units (a
/// V's unit is half a rank's share; 0: none): a V of DeepSeek-V3-like sub-stages
/// (`unit_cost_model::deepseek_v3_like`) with fb-overlap, each all-to-all `a2a` long — 1: twice
/// the preset's, as long as a forward sub-stage, half a backward one (a2a-heavy).
inline search::unit_problem moe_vee(int pp, int micro, int cap, double a2a = 1) {
  search::unit_problem q;
  q.model.ranks = pp;
  q.model.micro = micro;
  q.model.chunks_per_rank = 2;
  q.model.place = placement::vee;
  q.model.stages = stage_set::moe_with_shared();
  q.model.max_live = cap;
  q.overlap = overlap_options::all();
  q.cost = unit_cost_model::deepseek_v3_like();
  for (kind k : {kind::dispatch, kind::combine}) q.cost.set(k, phase::F, a2a).set(k, phase::B, a2a);
  return q;
}

}  // namespace weft::bench
