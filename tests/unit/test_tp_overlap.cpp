// A tensor-parallel linear's overlaps (seed: tp-2d) as schedules: the checker proves them and
// names the op a wrong order breaks, the simulator times them as the ring and chunk arithmetic
// says, and two forward overlaps at once are refused.
#include <doctest/doctest.h>

#include <string>

#include <weft/schedule/text.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/tp/schedule.hpp>

#include "time_approx.hpp"

using namespace weft;

namespace {

constexpr tp_overlap every_overlap[] = {tp_overlap::none, tp_overlap::ag_matmul,
                                        tp_overlap::matmul_rs, tp_overlap::fused};

// The compiler proves each overlap legal, as a user's static_assert would.
static_assert(verify(tp::linear_schedule(tp_overlap::none, 1)));
static_assert(verify(tp::linear_schedule(tp_overlap::ag_matmul, 8)));
static_assert(verify(tp::linear_schedule(tp_overlap::matmul_rs, 2, true, true)));
static_assert(verify(tp::linear_schedule(tp_overlap::fused, 4)));

/// Where op `o` sits in `s`.
std::size_t position(const schedule& s, const op& o) {
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].same_work(o)) return i;
  FAIL("no ", to_string(o));
  return 0;
}

/// `s` with the ops at `a` and `b` swapped.
schedule swapped(schedule s, const op& a, const op& b) {
  const std::size_t i = position(s, a), j = position(s, b);
  const op t = s.ops[i];
  s.ops[i] = s.ops[j];
  s.ops[j] = t;
  return s;
}

/// Costs in units: a matmul piece of P costs `piece`, a ring step `step`, the whole
/// reduce-scatter `rs` (its pieces share it), backward twice the forward.
unit_cost_model linear_costs(const model_desc& m, double piece, double step, double rs) {
  unit_cost_model c;
  const double P = m.splits;
  c.set(kind::block, phase::F, units(piece * P)).set(kind::block, phase::B, units(2 * piece * P));
  const double ag = m.tp_ring() ? step * (P - 1) : step;
  c.set(kind::all_gather, phase::F, units(ag)).set(kind::reduce_scatter, phase::F, units(rs));
  c.set(kind::all_gather, phase::B, units(step)).set(kind::reduce_scatter, phase::B, units(rs));
  return c;
}

double forward_time(tp_overlap o, int pieces, double piece, double step, double rs) {
  const schedule s = tp::linear_schedule(o, pieces, false);
  const program p = lower(s);
  return simulate(p, linear_costs(s.model, piece, step, rs)).makespan.count();
}

}  // namespace

TEST_CASE("every overlap of a linear is legal for every piece count, forward and backward") {
  for (const tp_overlap o : every_overlap)
    for (int pieces : {1, 2, 3, 8})
      for (bool backward : {false, true})
        for (bool split : {false, true}) {
          if (o == tp_overlap::none && pieces > 1) continue;
          const std::string name = tp::name_of(o);
          CAPTURE(name);
          CAPTURE(pieces);
          const report r = check(tp::linear_schedule(o, pieces, backward, split && backward));
          CHECK_MESSAGE(r.ok(), (r.ok() ? std::string() : to_string(r.violations[0])));
        }
}

TEST_CASE("the checker names the op a wrong overlap breaks") {
  SUBCASE("a ring's piece multiplied before its step brought it") {
    const schedule s = swapped(tp::linear_schedule(tp_overlap::ag_matmul, 4),
                               make_op(kind::block, phase::F, 0, 0, 0, 1),
                               make_op(kind::block, phase::F, 0, 0, 0, 3));
    const violation v = diagnose(s);
    REQUIRE(v);
    CHECK(v.code == rule::order);
    CHECK(v.subject.same_work(make_op(kind::block, phase::F, 0, 0, 0, 3)));
    CHECK(v.other.same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 3)));
  }
  SUBCASE("a piece reduce-scattered in the slot of its own matmul") {
    schedule s = tp::linear_schedule(tp_overlap::matmul_rs, 2);
    // slot 1 holds piece 0 alone; put its reduce-scatter there too.
    const std::size_t rs = position(s, make_op(kind::reduce_scatter, phase::F, 0, 0, 0, 0));
    const std::size_t mm = position(s, make_op(kind::block, phase::F, 0, 0, 0, 0));
    schedule t(s.model);
    t.add_rank();
    for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) {
        if (i == rs) continue;
        t.ops.push_back(s.ops[i]);
        if (i == mm) t.ops.push_back(s.ops[rs]);
      }
      if (t.slot_end.empty() || t.ops.size() > t.slot_end.back())
        t.slot_end.push_back(static_cast<std::uint32_t>(t.ops.size()));
    }
    const violation v = diagnose(t);
    REQUIRE(v);
    CHECK(v.code == rule::slot);
    CHECK(v.what == fault::dependent_in_slot);
  }
  SUBCASE("a ring step left out") {
    schedule s = tp::linear_schedule(tp_overlap::fused, 3, false);
    schedule t(s.model);
    t.add_rank();
    for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i)
        if (!s.ops[i].same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 2)))
          t.ops.push_back(s.ops[i]);
      t.slot_end.push_back(static_cast<std::uint32_t>(t.ops.size()));
    }
    const violation v = diagnose(t);
    REQUIRE(v);
    CHECK(v.code == rule::complete);
    CHECK(v.what == fault::missing);
    CHECK(v.subject.same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 2)));
  }
  SUBCASE("a collective a linear does not have") {
    schedule s = tp::linear_schedule(tp_overlap::none, 1);
    s.ops.push_back(make_op(kind::all_reduce, phase::F, 0));
    s.slot_end.push_back(static_cast<std::uint32_t>(s.ops.size()));
    const violation v = diagnose(s);
    REQUIRE(v);
    CHECK(v.what == fault::outside_model);
  }
}

TEST_CASE("a linear's model is checked") {
  model_desc m = tp::linear_model(tp_overlap::none, 2);
  CHECK(validate(m) == model_error::tp_pieces);
  m = tp::linear_model(tp_overlap::ag_matmul, 4);
  CHECK(validate(m) == model_error::none);
  m.layers = 2;
  CHECK(validate(m) == model_error::tp_needs_linear);
  m = tp::linear_model(tp_overlap::fused, 2);
  m.stages = stage_set::dense();
  CHECK(validate(m) == model_error::tp_needs_linear);
  CHECK_THROWS_AS(tp::linear_schedule(tp_overlap::none, tp::linear_groups{0, 2}), config_error);
}

TEST_CASE("two forward overlaps at once are a configuration error") {
  CHECK(tp::resolve({}) == tp_overlap::none);
  CHECK(tp::resolve({.ag_matmul = true}) == tp_overlap::ag_matmul);
  CHECK(tp::resolve({.matmul_rs = true}) == tp_overlap::matmul_rs);
  CHECK(tp::resolve({.fused = true}) == tp_overlap::fused);
  CHECK_THROWS_WITH_AS(tp::resolve({.ag_matmul = true, .matmul_rs = true}),
                       doctest::Contains("at most one forward overlap"), config_error);
  CHECK_THROWS_AS(tp::resolve({.matmul_rs = true, .fused = true}), config_error);
  CHECK_THROWS_AS(tp::resolve({.ag_matmul = true, .fused = true}), config_error);
}

TEST_CASE("pieces follow the groups the overlap cuts along") {
  const tp::linear_groups g{.gather = 8, .scatter = 2};
  CHECK(tp::pieces_for(tp_overlap::none, g) == 1);
  CHECK(tp::pieces_for(tp_overlap::ag_matmul, g) == 8);
  CHECK(tp::pieces_for(tp_overlap::matmul_rs, g) == 2);
  CHECK(tp::pieces_for(tp_overlap::fused, g) == 8);
}

TEST_CASE("simulated overlaps: a ring hides its steps behind the pieces, chunks hide the scatter") {
  // n members, a step a, a whole matmul n c, a whole reduce-scatter r. By hand:
  //  none:       (n - 1) a + n c + r (all in a row);
  //  ag-matmul:  each piece j >= 1 waits for max(its step, piece j - 1): with a <= c that is
  //              n c, then r;
  //  matmul-rs:  the gather whole, then the pieces back to back, the last piece's scatter r / n
  //              plus its latency share after them (latency 0 here): (n - 1) a + n c + r / n.
  const int n = 4;
  const double a = 1, c = 2, r = 3;
  CHECK(forward_time(tp_overlap::none, 1, n * c, (n - 1) * a, r) == doctest::Approx(3 + 8 + 3));
  CHECK(forward_time(tp_overlap::ag_matmul, n, c, a, r) == doctest::Approx(n * c + r));
  CHECK(forward_time(tp_overlap::matmul_rs, n, c, (n - 1) * a, r) ==
        doctest::Approx((n - 1) * a + n * c + r / n));
  CHECK(forward_time(tp_overlap::fused, n, c, a, r) == doctest::Approx(n * c + r / n));
  // A step longer than a piece: the ring sets the pace, a + (n - 1) a ... the last piece after
  // the last step: (n - 1) a' + c, then r.
  const double slow = 5;
  CHECK(forward_time(tp_overlap::ag_matmul, n, c, slow, r) ==
        doctest::Approx((n - 1) * slow + c + r));
}
