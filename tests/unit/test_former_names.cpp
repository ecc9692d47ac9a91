// The names renamed one release ago still compile and mean what their replacements mean, as
// CHANGELOG.md promises (deprecated: a trainer sees the warning and the new name).
#include <doctest/doctest.h>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask.hpp>
#include <weft/cp/plan.hpp>  // former header, forwards to cp/rounds.hpp
#include <weft/generators/controllable_memory.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/interleaved_zero_bubble.hpp>
#include <weft/generators/looped_bfs.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/timeline.hpp>      // former header, forwards to io/svg.hpp
#include <weft/schedule/memory.hpp>  // former header, forwards to schedule/live_activations.hpp
#include <weft/search/plan.hpp>      // former header, forwards to search/step_order.hpp
#include <weft/search/search.hpp>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace {

using namespace weft;

constexpr bool same(const schedule& a, const schedule& b) {
  return a.ops == b.ops && a.slot_end == b.slot_end && a.rank_begin == b.rank_begin;
}

TEST_CASE("a generator's former steps name builds the schedule its one name does") {
  const pipeline_params p{.ranks = 4, .micro = 8};
  const interleaved_params q = gen::with_chunks(p, 2);
  CHECK(same(gen::build_gpipe(p), gpipe(p)));
  CHECK(same(gen::build_one_f_one_b(p), one_f_one_b(p)));
  CHECK(same(gen::build_zb_h1(p), zb_h1(p)));
  CHECK(same(gen::build_zb_v(p), zb_v(p)));
  CHECK(same(gen::build_v_half(p), v_half(p)));
  CHECK(same(gen::build_v_min(p), v_min(p)));
  CHECK(same(gen::build_dualpipev(p), dualpipev(p)));
  CHECK(same(gen::build_dualpipe(p), dualpipe(p)));
  CHECK(same(gen::build_interleaved(q), interleaved(q)));
  CHECK(same(gen::build_looped_bfs(q), looped_bfs(q)));
  CHECK(same(gen::build_interleaved_zero_bubble(q), interleaved_zero_bubble(q)));
  // And the one name is what the steps return, at compile time as at run time.
  static_assert(same(gpipe(pipeline_params{.ranks = 2, .micro = 2}),
                     gen::gpipe(pipeline_params{.ranks = 2, .micro = 2})));
  CHECK(same(gpipe(p), gen::gpipe(p)));
}

TEST_CASE("search::plan and plan_of are search::step_order and step_order_of") {
  const schedule s = one_f_one_b({.ranks = 2, .micro = 4});
  const search::plan old = search::plan_of(s);
  const search::step_order now = search::step_order_of(s);
  CHECK(old == now);
  CHECK(same(search::to_schedule(old), search::to_schedule(now)));
  const model_desc m = s.model;
  CHECK(search::generator_plans(m).size() == search::generator_orders(m).size());
}

TEST_CASE("cp::cp_plan, plan_options, plan_rounds and plan_adaptive are the rounds' new names") {
  const cp::dense_mask m = cp::coarsen(cp::masks::causal(64), 64);
  cp::plan_options o;
  o.seed = 3;
  const cp::cp_plan old = cp::plan_rounds(cp::grid(m, cp::identity_order(64), 8), o);
  const cp::round_assignment now = cp::assign_rounds(cp::grid(m, cp::identity_order(64), 8), o);
  CHECK(old.rounds == now.rounds);
  CHECK(old.run == now.run);
  const cp::adaptive_plan a = cp::plan_adaptive(m, 8);
  CHECK(a.assignment.rounds == cp::adapt_layout(m, 8).assignment.rounds);
}

TEST_CASE("the former headers still give what they gave") {
  CHECK(peak_live_activations(one_f_one_b({.ranks = 2, .micro = 4})).size() == 2);
  CHECK(detail::xml_escape("<a&b>") == "&lt;a&amp;b&gt;");
}

}  // namespace
