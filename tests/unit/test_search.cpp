// The schedule search: plans and their schedules, the judge, the list scheduler, the bounds
// (against values worked out by hand), the search's promises (legal, under the cap, never worse
// than a generator, the same plan for the same seed) and the exact optimum of small problems.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/heap.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/looped_bfs.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/search/exact.hpp>
#include <weft/search/placements.hpp>
#include <weft/search/search.hpp>
#include <weft/search/step_timing.hpp>

using namespace weft;
using namespace weft::search;

// Sanitizers replace malloc (and answer mallopt themselves).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEFT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define WEFT_SANITIZED 1
#endif
#endif
#ifndef WEFT_SANITIZED
#define WEFT_SANITIZED 0
#endif

namespace {

/// pp ranks, one chunk each (or a V of two), micro micro-batches, whole blocks; the costs of a
/// rank's share (F, B, W), a pipeline transfer P2P; a memory cap.
unit_problem problem_of(int pp, int micro, bool vee, double F, double B, double W, double P2P,
                        int cap = 0) {
  unit_problem q;
  q.model = {.ranks = pp,
             .chunks_per_rank = vee ? 2 : 1,
             .place = vee ? placement::vee : placement::loop,
             .micro = micro,
             .max_live = cap};
  q.cost = unit_cost_model::pipeline({.F = F, .B = B, .W = W, .P2P = P2P})
               .scaled_compute(1.0 / q.model.chunks_per_rank);
  return q;
}

/// pp ranks in a V, micro micro-batches of DeepSeek-V3-like MoE sub-stages with fb-overlap,
/// every all-to-all 1; cap 2·pp units (1F1B's).
unit_problem moe_vee(int pp, int micro) {
  unit_problem q;
  q.model = {.ranks = pp,
             .chunks_per_rank = 2,
             .place = placement::vee,
             .micro = micro,
             .stages = stage_set::moe_with_shared(),
             .max_live = 2 * pp};
  q.overlap = overlap_options::all();
  q.cost = unit_cost_model::deepseek_v3_like();
  for (kind k : {kind::dispatch, kind::combine}) q.cost.set(k, phase::F, 1).set(k, phase::B, 1);
  return q;
}

}  // namespace

TEST_CASE("a generator's schedule is a plan, and the plan builds the same schedule") {
  const schedule s[] = {one_f_one_b({.ranks = 4, .micro = 8}), zb_h1({.ranks = 4, .micro = 8}),
                        dualpipev({.ranks = 4, .micro = 10})};
  for (const schedule& x : s) {
    const step_order p = step_order_of(x);
    const schedule back = to_schedule(p);
    CHECK(back.ops == x.ops);
    CHECK(back.slot_end == x.slot_end);
    CHECK(back.rank_begin == x.rank_begin);
  }
  // DualPipeV's steady phase is overlapped pairs.
  const step_order dv = step_order_of(dualpipev({.ranks = 4, .micro = 10}));
  int pairs = 0;
  for (const auto& r : dv.ranks)
    for (const step& st : r) pairs += st.a == action::FB ? 1 : 0;
  CHECK(pairs > 0);
}

TEST_CASE("PyTorch's idle steps are dropped from a plan: the order stays") {
  // Looped BFS on 2 ranks: rank 0 idles 2 steps after its forwards, rank 1 one before them.
  const schedule s = looped_bfs({.ranks = 2, .micro = 4, .chunks = 2});
  const step_order p = step_order_of(s);
  REQUIRE(p.ranks.size() == 2);
  CHECK(p.ranks[0].size() == 16);
  CHECK(p.ranks[1].size() == 16);
  const schedule back = to_schedule(p);
  CHECK(back.ops == s.ops);  // the same ops in the same order, without the empty slots
  CHECK(back.slot_end.size() + 3 == s.slot_end.size());
  CHECK(check(back).ok());
}

TEST_CASE("a schedule of sub-stages is not a plan, and says which slot") {
  const schedule s = one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe()});
  try {
    (void)step_order_of(s);
    FAIL("a sub-stage schedule should be refused");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) ==
          "weft: search: rank 0, slot 0 (attn/F mb=0) is not a pipeline-level step (a chunk's "
          "forward, backward, dX or dW of whole blocks, or a forward and a backward overlapped)");
  }
}

TEST_CASE("a plan is judged legal or not by the checker, memory cap included") {
  unit_problem q = problem_of(2, 2, false, 1, 2, 1, 0);
  step_order p = step_order_of(one_f_one_b({.ranks = 2, .micro = 2}));
  const auto ok = evaluate(q, p);
  REQUIRE(ok);
  // 1F1B's (p - 1)(F + B) + m (F + B) on 2 ranks, F 1, B 2.
  CHECK(ok->makespan.count() == doctest::Approx(9));
  CHECK(ok->peak_live == 2);

  std::string why;
  step_order backwards = p;
  std::swap(backwards.ranks[1][0], backwards.ranks[1][1]);  // B0 before F0 on rank 1
  CHECK_FALSE(evaluate(q, backwards, &why));
  CHECK(why.find("rule 2") != std::string::npos);

  q.model.max_live = 1;  // rank 0 holds two micro-batches in 1F1B
  CHECK_FALSE(evaluate(q, p, &why));
  CHECK(why.find("rule 5 (memory)") != std::string::npos);
}

TEST_CASE("bounds: critical path, work, in order and memory, worked by hand") {
  // pp 4, micro 8, F 1, B 2 (dX 1, dW 1), free transfers.
  const unit_problem q = problem_of(4, 8, false, 1, 2, 1, 0);
  const lower_bounds<units> b = bounds_of(q);
  // One micro-batch: 4 forwards, 4 dX back, the last dW: 9 (fused: 4 + 4 x 2 = 12).
  CHECK(b.critical_path.count() == doctest::Approx(9));
  CHECK(bounds_of(q, false).critical_path.count() == doctest::Approx(12));
  // The last rank starts after 3 forwards and computes 8 x (1 + 2).
  CHECK(b.work.count() == doctest::Approx(27));
  // Rank 0 forwards micro-batches 0..6 first, then the last one's path: 7 + 9.
  CHECK(b.in_order.count() == doctest::Approx(16));
  CHECK(b.memory.count() == 0);  // no cap
  CHECK(b.best().count() == doctest::Approx(27));
  // Fused backwards only: the first rank's last backward is the step's end, and the last rank's
  // last backward has 3 more backwards of 2 after it.
  CHECK(bounds_of(q, false).work.count() == doctest::Approx(3 + 24 + 6));

  // A cap of 2 units: rank 0's unit lives 9 alone (its dW ends at 9), so its claims come at
  // 0, 1 (a forward later), 9, 10, 18, 19, 27, 28 and the last unit has 9 to go: 37.
  const unit_problem capped = problem_of(4, 8, false, 1, 2, 1, 0, 2);
  CHECK(bounds_of(capped).memory.count() == doctest::Approx(37));

  // Transfers of 0.5: the last rank starts after 3 forwards and 3 transfers.
  const unit_problem slow = problem_of(4, 8, false, 1, 2, 1, 0.5);
  CHECK(bounds_of(slow).work.count() == doctest::Approx(4.5 + 24));
  CHECK(bounds_of(slow).critical_path.count() == doctest::Approx(9 + 6 * 0.5));
}

TEST_CASE("the critical path holds when a plan fuses one chunk's backward and splits another's") {
  // pp 2 in a V (rank 0: chunks 0 and 3; rank 1: chunks 1 and 2), one micro-batch of
  // DeepSeek-V3-like MoE sub-stages, every all-to-all 1, transfers 0.2. Forward: 4 chunks of
  // attention 1, dispatch 1 (the shared expert's 0.5 beside it), experts 1, combine 1, and 2
  // transfers: 16.4. Back to chunk 0 by dX: 3 chunks of combine 1, experts' dX 1, dispatch 1,
  // attention's dX 1, and 2 transfers: 28.8. Chunk 0 then takes 5 either way: fused (its dW
  // beside the dispatch) or dX and dW computed in turn (2.5 + 2.5). A fused run alone (every
  // chunk fused) and a split one (every dW last) both take longer.
  const unit_problem q = moe_vee(2, 1);
  const lower_bounds<units> b = bounds_of(q);
  CHECK(b.critical_path.count() == doctest::Approx(33.8));
  const auto e = exact_schedule(q, true, false);
  REQUIRE(e);
  REQUIRE(e->best);
  CHECK(e->best->makespan.count() == doctest::Approx(33.8));
  CHECK(find_schedule(q, {.max_evaluations = 3000}).best->makespan.count() ==
        doctest::Approx(33.8));
}

TEST_CASE("one-rank relaxation: its optimum, worked by hand") {
  // Two micro-batches, forward 1, dX 1, dW 1 (fused 2); a backward can start 2 after its forward.
  one_rank_relaxation x;
  x.n = 2;
  x.cap = 1;
  x.f = x.i = x.w = 1;
  x.b = 2;
  x.d = 2;
  // One unit at a time: F0 0-1, B0 3-5, F1 5-6, B1 8-10.
  one_rank_result y = solve(x);
  CHECK(y.makespan == doctest::Approx(10));
  CHECK(y.start_f == std::vector<double>{0, 5});
  CHECK(y.start_b == std::vector<double>{3, 8});
  // Two units: F0, F1, then dX0 3-4, dX1 4-5 and the two dW: 7.
  x.cap = 2;
  CHECK(solve(x).makespan == doctest::Approx(7));
  // With 3 to go after the last dX (the path above): 5 + 3.
  x.q = 3;
  CHECK(solve(x).makespan == doctest::Approx(8));
  // The second forward cannot start before 4 (the rank above sends it then): 4 + 3 steps.
  x.q = 0;
  x.d = 0;
  x.release_f = {0, 4};
  CHECK(solve(x).makespan == doctest::Approx(7));
  // Fused backwards only, a forward and a backward overlapped in 2: F0 0-1, F1 with B0 1-3,
  // B1 3-5 (rather than 1 + 1 + 2 + 2).
  one_rank_relaxation z;
  z.n = z.cap = 2;
  z.split = false;
  z.f = 1;
  z.b = z.pair = 2;
  CHECK(solve(z).makespan == doctest::Approx(5));
  z.pair = std::numeric_limits<double>::infinity();
  CHECK(solve(z).makespan == doctest::Approx(6));
}

TEST_CASE("a V's rank, relaxed: its optimum, worked by hand") {
  // One micro-batch: a's forward 0-1; b's 2 later (the pipeline below) at 2-3; b's dX 1 after
  // that at 3-4, its dW 4-5 while a's gradient comes back (2 after b's dX starts); a's dX 5-6,
  // its dW 6-7.
  vee_rank_relaxation x;
  x.n = 1;
  x.f = x.i = x.w = 1;
  x.b = 2;
  x.down = 2;
  x.turn = 1;
  x.up = 2;
  CHECK(solve(x) == doctest::Approx(7));
  // With 3 to go after a's backward starts: 5 + 3.
  x.q = 3;
  CHECK(solve(x) == doctest::Approx(8));
  // A micro-batch holds a unit of each chunk at once: under a cap of 1 nothing fits.
  x.cap = 1;
  CHECK(solve(x) == std::numeric_limits<double>::infinity());
}

TEST_CASE("a V's relaxation visits only the states a cap lets it reach") {
  // One micro-batch, counted by hand as (fa, fb, xb, xa) and the dW w may hold: (0,0,0,0) w 0;
  // (1,0,0,0) w 0; (1,1,0,0) w 0; (1,1,1,0) w 0-1; (1,1,1,1) w 0-2: 8. Under a cap of 1 two
  // forwards need a dW done: (1,1,0,0) none, (1,1,1,0) w 1, (1,1,1,1) w 1-2: 5.
  constexpr std::size_t any = std::numeric_limits<std::size_t>::max();
  CHECK(vee_states::count(1, 0, any) == 8);
  CHECK(vee_states::count(1, 1, any) == 5);
  CHECK(vee_states(1, 0).size() == 8);
  CHECK(vee_states(1, 1).size() == 5);
  // Counting stops once past the limit it is given.
  CHECK(vee_states::count(64, 0, 1000) > 1000);
  CHECK(vee_states::count(64, 0, 1000) < 100'000);
  // The cap keeps 64 micro-batches under a cap of 32 within the limit; without a cap they are
  // beyond it, and the V's one-rank bound is left to the others.
  CHECK(vee_states::count(64, 32, any) <= max_vee_rank_states);
  CHECK(vee_states::count(64, 0, any) > max_vee_rank_states);
  unit_problem open = moe_vee(4, 64);
  open.model.max_live = 0;
  CHECK(bounds_of(open).one_rank.count() == 0);
}

TEST_CASE("a V beyond 32 micro-batches gets its one-rank bound under a cap") {
  // pp 8, 48 micro-batches of MoE sub-stages under a cap of 16 (1F1B's memory): the relaxation
  // sees the wait for each rank's first forward of its second chunk, which the work bound does
  // not; and it holds against every plan the generators and a short search make.
  const unit_problem q = moe_vee(8, 48);
  const auto r = find_schedule(q, {.max_evaluations = 30});
  REQUIRE(r.best);
  CHECK(r.bound.one_rank > r.bound.work);
  CHECK(r.bound.one_rank.count() <= r.best->makespan.count() + 1e-9);
  for (const auto& g : r.generators)
    if (g.result) CHECK(r.bound.one_rank.count() <= g.result->makespan.count() + 1e-9);
}

TEST_CASE("the one-rank bound holds (never above the optimum or a plan found) and is tighter") {
  // Against the exhaustive optimum of small problems, with caps and transfers.
  const unit_problem tiny[] = {
      problem_of(2, 3, false, 1, 2, 1, 0.5), problem_of(2, 3, false, 1, 2, 1, 1, 1),
      problem_of(2, 3, false, 1, 2, 1, 1.5, 2), problem_of(2, 3, false, 1, 3, 1.5, 0.5, 2)};
  for (const unit_problem& q : tiny) {
    const auto e = exact_schedule(q, true, false);
    REQUIRE(e);
    REQUIRE(e->best);
    CHECK(bounds_of(q).one_rank.count() <= e->best->makespan.count() + 1e-9);
    CHECK(bounds_of(q).one_rank.count() > 0);
  }
  // Larger ones, against the plan the search finds.
  const unit_problem larger[] = {
      problem_of(4, 8, false, 1, 2, 1, 1.5, 6), problem_of(4, 16, false, 1, 2, 1, 1.5, 6),
      problem_of(4, 8, false, 1, 3, 2, 0, 6), problem_of(8, 16, false, 1, 2, 1, 1.5, 12)};
  for (const unit_problem& q : larger) {
    const auto r = find_schedule(q, {.max_evaluations = 3000});
    REQUIRE(r.best);
    CHECK(r.bound.one_rank.count() <= r.best->makespan.count() + 1e-9);
  }
  // Transfers of 1.5 under a cap of 6 (the docs' example): a rank's memory, work and the round
  // trips together say more than any of them alone.
  const lower_bounds<units> b = bounds_of(larger[0]);
  CHECK(b.one_rank > b.memory);
  CHECK(b.one_rank > b.work);
  CHECK(b.one_rank > b.critical_path);
  // Sub-stages in a loop: 0.
  unit_problem moe_loop = problem_of(4, 8, false, 1, 2, 1, 0, 8);
  moe_loop.model.stages = stage_set::moe_with_shared();
  CHECK(bounds_of(moe_loop).one_rank.count() == 0);
  // A V of MoE sub-stages (the suite's first MoE row): the rank of chunks 0 and 7 waits for its
  // first forward of chunk 7 with only 7 units to fill the wait, which the work bound misses.
  const unit_problem moe = moe_vee(4, 8);
  const lower_bounds<units> v = bounds_of(moe);
  CHECK(v.one_rank > v.work);
  CHECK(v.one_rank > v.memory);
}

TEST_CASE("the bounds hold under a table where a dX costs more than the whole backward") {
  // pp 2, one micro-batch, F 1, fused B 2, dX 2.4: fused all the way, 1 + 1 + 2 + 2 = 6; a chain
  // of dX would take longer, and is no bound.
  unit_problem q = problem_of(2, 1, false, 1, 2, 1, 0);
  q.cost.set(kind::block, phase::dX, 2.4);
  const auto e = exact_schedule(q, true, false);
  REQUIRE(e);
  REQUIRE(e->best);
  CHECK(e->best->makespan.count() == doctest::Approx(6));
  CHECK(bounds_of(q).best().count() == doctest::Approx(6));
}

TEST_CASE("every bound holds on random problems: never above a plan found") {
  // Loops and Vs, whole blocks or MoE sub-stages, random costs (a dX at times dearer than its
  // whole backward), transfers and caps; the search's best plan is an upper bound on the optimum.
  std::mt19937 g(5);
  const auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(g);
  };
  int checked = 0;
  for (int it = 0; it < 24; ++it) {
    const bool vee = g() % 2 == 0, moe = g() % 2 == 0;
    const int pp = 2 + static_cast<int>(g() % 3), micro = 2 + static_cast<int>(g() % 6);
    unit_problem q;
    q.model = {.ranks = pp,
               .chunks_per_rank = vee ? 2 : 1,
               .place = vee ? placement::vee : placement::loop,
               .micro = micro,
               .max_live = g() % 2 == 0 ? 0 : (vee ? 2 : 1) * pp + static_cast<int>(g() % 4)};
    if (moe) {
      q.model.stages = stage_set::moe_with_shared();
      q.overlap = g() % 2 == 0 ? overlap_options::all() : overlap_options::none();
      q.cost = unit_cost_model::deepseek_v3_like();
      const double a2a = uniform(0.1, 2), p2p = uniform(0, 2);
      for (kind k : {kind::dispatch, kind::combine})
        q.cost.set(k, phase::F, a2a).set(k, phase::B, a2a);
      for (kind k : {kind::send, kind::recv}) q.cost.set(k, phase::F, p2p).set(k, phase::B, p2p);
    } else {
      const double F = uniform(0.5, 2), W = uniform(0.2, 2), B = W + uniform(0.5, 3);
      q.cost = unit_cost_model::pipeline({.F = F, .B = B, .W = W, .P2P = uniform(0, 2)})
                   .scaled_compute(vee ? 0.5 : 1.0);
      if (g() % 2 == 0)
        q.cost.set(kind::block, phase::dX, uniform(0.3, 1.5) * q.cost.of(kind::block, phase::B));
    }
    const auto r = find_schedule(q, {.max_evaluations = 1000, .seed = 3});
    if (!r.best) continue;
    ++checked;
    CAPTURE(it);
    CHECK(r.bound.best().count() <= r.best->makespan.count() + 1e-9);
  }
  CHECK(checked >= 20);
}

TEST_CASE("costs per chunk: every bound holds on random uneven stages, pairs included") {
  // Chunks of different costs (an embedding on the first, a head on the last, uneven layers),
  // some with communication a pair hides: the bounds, computed at the cheapest chunk's costs and
  // with the critical path at each chunk's own, stay below every plan found.
  std::mt19937 g(11);
  const auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(g);
  };
  for (int it = 0; it < 16; ++it) {
    const bool vee = g() % 2 == 0;
    const int pp = 2 + static_cast<int>(g() % 3), micro = 2 + static_cast<int>(g() % 5);
    unit_problem q = problem_of(pp, micro, vee, 1, 2, 1, uniform(0, 1));
    for (int c = 0; c < q.model.chunks(); ++c) {
      const double F = uniform(0.3, 2), W = uniform(0, 1.5), B = W + uniform(0.3, 2);
      q.cost.chunks.push_back(
          {units(F), units(B), units(W), units(uniform(0, F)), units(uniform(0, B))});
    }
    const auto r = find_schedule(q, {.max_evaluations = 600, .seed = 2});
    REQUIRE(r.best);
    CAPTURE(it);
    CHECK(r.bound.best().count() <= r.best->makespan.count() + 1e-9);
    for (const auto& gen : r.generators)
      if (gen.result) CHECK(r.bound.best().count() <= gen.result->makespan.count() + 1e-9);
  }
}

TEST_CASE("a V's bounds with overlapped pairs: never above the optimum or a plan found") {
  // pp 2, 4 micro-batches, a rank's share F 1, B 2, W 1 and a pair 2.5 (the fuzzed case):
  // DualPipeV pairs its steady phase, and the V's one-rank bound, which left pairs out, was
  // above its makespan.
  unit_problem q = problem_of(2, 4, true, 1, 2, 1, 0);
  q.cost.fb_pair = 2.5 / 2;  // per chunk, as scaled_compute gives the rest
  const search_result<units> r = find_schedule(q, {.max_evaluations = 2000});
  REQUIRE(r.best);
  for (const auto& row : r.generators)
    if (row.result) CHECK(r.bound.best().count() <= row.result->makespan.count() + 1e-9);
  CHECK(r.bound.best().count() <= r.best->makespan.count() + 1e-9);
  // Random Vs of whole blocks with pairs (FB between the longer half and F + B). On one rank,
  // against the exhaustive optimum (the relaxation is then the problem: the bound is exact);
  // on 2-3 ranks with transfers and caps, against the plans the search finds.
  std::mt19937 g(11);
  const auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(g);
  };
  const auto random_vee = [&](int pp, int micro, double p2p, int cap) {
    const double F = uniform(0.5, 2), W = uniform(0.2, 1.5), B = W + uniform(0.3, 2.5);
    unit_problem v = problem_of(pp, micro, true, F, B, W, p2p, cap);
    v.cost.fb_pair = uniform(std::max(F, B), F + B) / 2;
    return v;
  };
  for (int it = 0; it < 6; ++it) {
    CAPTURE(it);
    const bool split = it % 3 == 1;
    const unit_problem v = random_vee(1, it % 3 == 2 ? 3 : 2, 0, it % 2 == 0 ? 0 : 3);
    const auto e = exact_schedule(v, split, true, 300'000);
    REQUIRE(e);
    REQUIRE(e->best);
    CHECK(bounds_of(v, split).best().count() <= e->best->makespan.count() + 1e-9);
    CHECK(bounds_of(v, split).one_rank.count() == doctest::Approx(e->best->makespan.count()));
  }
  int searched = 0;
  for (int it = 0; it < 30; ++it) {
    CAPTURE(it);
    const int pp = 2 + static_cast<int>(g() % 2), micro = 2 + static_cast<int>(g() % 5);
    const unit_problem v = random_vee(pp, micro, uniform(0, 1.5),
                                      g() % 2 == 0 ? 0 : 2 * pp + static_cast<int>(g() % 3));
    const auto found = find_schedule(v, {.max_evaluations = 400, .seed = 2});
    if (!found.best) continue;
    ++searched;
    CHECK(found.bound.best().count() <= found.best->makespan.count() + 1e-9);
  }
  CHECK(searched >= 25);
  // A chunk of two layers pairs layer by layer (a pair unit each): with free transfers every
  // time doubles, and so must every bound (a pair priced once per chunk made them looser).
  for (const bool vee : {true, false}) {
    unit_problem one = problem_of(2, 4, vee, 1, 2, 1, 0, vee ? 6 : 3);
    one.cost.fb_pair = 2.5 / (vee ? 2 : 1);
    unit_problem two = one;
    two.model.layers = 2;
    const lower_bounds<units> b1 = bounds_of(one), b2 = bounds_of(two);
    CAPTURE(vee);
    CHECK(b2.one_rank.count() == doctest::Approx(2 * b1.one_rank.count()));
    CHECK(b2.work.count() == doctest::Approx(2 * b1.work.count()));
    CHECK(b2.best().count() == doctest::Approx(2 * b1.best().count()));
  }
  // A pair shorter than its longer half is outside what the bounds assume: refused.
  unit_problem fast = problem_of(2, 4, true, 1, 2, 1, 0);
  fast.cost.fb_pair = 1.5 / 2;
  CHECK_THROWS_WITH_AS(bounds_of(fast),
                       "weft: search: an overlapped forward/backward pair (0.75) shorter than the "
                       "longer of its halves (1) is outside what the bounds assume: no overlap "
                       "ends before both halves would alone",
                       config_error);
  CHECK_THROWS_AS(find_schedule(fast, {.max_evaluations = 10}), config_error);
}

TEST_CASE("a search without split backwards judges no generator that splits them") {
  // Found by fuzzing: 3 ranks, 1 micro-batch of MoE sub-stages with fb-overlap, free
  // all-to-alls, fused backwards only. ZB-H1 splits its backwards and ended sooner than the
  // fused-only bounds (17.5 against 22.5): judged, it was a plan outside the problem asked.
  unit_problem q;
  q.model = {.ranks = 3, .micro = 1, .stages = stage_set::moe_with_shared()};
  q.overlap = overlap_options::all();
  q.cost = unit_cost_model::deepseek_v3_like();
  for (kind k : {kind::dispatch, kind::combine}) q.cost.set(k, phase::F, 0).set(k, phase::B, 0);
  const auto r = find_schedule(q, {.max_evaluations = 80, .split = false});
  REQUIRE(r.best);
  CHECK(r.bound.best().count() <= r.best->makespan.count() + 1e-9);
  bool saw = false;
  for (const auto& g : r.generators)
    if (g.name == "zb-h1") {
      saw = true;
      CHECK_FALSE(g.result);
      CHECK(g.why.find("splits backwards") != std::string::npos);
    } else {
      CHECK(g.result);
    }
  CHECK(saw);
  // With split backwards allowed it is judged, and the bounds (split) hold for it.
  const auto both = find_schedule(q, {.max_evaluations = 80});
  for (const auto& g : both.generators) {
    REQUIRE(g.result);
    CHECK(both.bound.best().count() <= g.result->makespan.count() + 1e-9);
  }
}

TEST_CASE("a cap above what a rank can hold is no cap: the policy grid stays small") {
  // Every level up to 128, then a ladder: a cap of 2^30 was a grid of 2^34 policies, built
  // before the budget started (out of memory).
  CHECK(search::detail::policy_levels(3) == std::vector<int>{3, 2, 1});
  const std::vector<int> huge = search::detail::policy_levels(1 << 30);
  CHECK(huge.front() == 1 << 30);
  CHECK(huge.back() == 1);
  CHECK(huge.size() < 500);
  for (std::size_t i = 1; i < huge.size(); ++i) CHECK(huge[i] < huge[i - 1]);
  // pp 2, 2 micro-batches: a rank holds 2 units at most, so a cap of 2^30 is no cap at all.
  const auto capped = find_schedule(problem_of(2, 2, false, 1, 2, 1, 0, 1 << 30),
                                    {.max_evaluations = 300, .seed = 4});
  const auto free =
      find_schedule(problem_of(2, 2, false, 1, 2, 1, 0), {.max_evaluations = 300, .seed = 4});
  REQUIRE(capped.best);
  REQUIRE(free.best);
  CHECK(capped.best->makespan == free.best->makespan);
  CHECK(capped.best->makespan.count() == doctest::Approx(7));  // (p - 1) F + m (F + B)
}

TEST_CASE("the list scheduler: zero bubble where the work bound allows it, under its limit") {
  const unit_problem q = problem_of(4, 8, false, 1, 2, 1, 0);
  // 1F1B's warm-up depth (4 - rank), dW deferred into the waits: ZB-H1's idea.
  const auto p = list_schedule(
      q, {.live_limit = 4, .split = true, .inflight = 4, .stagger = 1, .forward_first = true});
  REQUIRE(p);
  const auto s = evaluate(q, *p);
  REQUIRE(s);
  CHECK(s->makespan.count() == doctest::Approx(27));  // the work bound: (p - 1) F + m (F + B)
  CHECK(s->peak_live <= 4);
  // Fused, it cannot beat 1F1B: (p - 1)(F + B) + m (F + B) = 33.
  const auto f = list_schedule(q, {.live_limit = 4, .split = false});
  REQUIRE(f);
  CHECK(evaluate(q, *f)->makespan.count() == doctest::Approx(33));
  // A V with one unit per rank cannot finish: the second chunk would need a second.
  CHECK_FALSE(list_schedule(problem_of(4, 8, true, 1, 2, 1, 0), {.live_limit = 1}));
}

TEST_CASE("a plan's step-by-step estimate, worked by hand") {
  // GPipe on 2 ranks, 2 micro-batches, F 1, B 2, transfers 0.5: rank 0 forwards in [0, 1],
  // [1, 2]; rank 1 in [1.5, 2.5], [2.5, 3.5], then backwards in [3.5, 5.5], [5.5, 7.5]; rank 0's
  // backwards wait for theirs and the transfer: [6, 8], [8, 10].
  const unit_problem q = problem_of(2, 2, false, 1, 2, 1, 0.5);
  const auto s = [](action a, int mb) { return step{a, static_cast<std::uint16_t>(mb), 0, 0, 0}; };
  step_order p{q.model, q.overlap, {}};
  p.ranks = {{s(action::F, 0), s(action::F, 1), s(action::B, 0), s(action::B, 1)},
             {s(action::F, 0), s(action::F, 1), s(action::B, 0), s(action::B, 1)}};
  for (step& x : p.ranks[1]) x.chunk = 1;
  step_timing<units> t(q);
  CHECK(t(p) == doctest::Approx(10));
  REQUIRE(t.keep());
  CHECK(t(p) == doctest::Approx(10));  // whole again, the plan kept or not
  CHECK(t(p, {4, 4}) == doctest::Approx(10));
  // Split backwards, each dW right after its dX (dX 1, dW 1: B = dX + dW): rank 1's dX of
  // micro-batch 0 ends at 4.5, rank 0's waits for it and the transfer, [5, 6], its dW [6, 7];
  // rank 1's second dX ends at 6.5 (after its first dW), rank 0's in [7, 8], its dW [8, 9].
  step_order split = p;
  for (auto& steps : split.ranks) {
    std::vector<step> v;
    for (const step& x : steps) {
      if (x.a != action::B) {
        v.push_back(x);
        continue;
      }
      v.push_back({action::I, x.mb, x.chunk, 0, 0});
      v.push_back({action::W, x.mb, x.chunk, 0, 0});
    }
    steps = v;
  }
  CHECK(t(split) == doctest::Approx(9));
  // Rank 0's second forward waiting for its first backward, which waits for rank 1's backward of
  // micro-batch 0, which waits for rank 1's forward of micro-batch 1: it never comes.
  step_order stuck = p;
  std::swap(stuck.ranks[0][1], stuck.ranks[0][2]);
  CHECK_FALSE(t(stuck));
  // Over a cap of one live unit; a step of the other rank's chunk; a micro-batch the model has not.
  unit_problem capped = q;
  capped.model.max_live = 1;
  CHECK_FALSE(step_timing<units>(capped)(p));
  step_order foreign = p;
  foreign.ranks[0][0].chunk = 1;
  CHECK_FALSE(t(foreign));
  step_order unknown = p;
  unknown.ranks[0][3].mb = 7;
  CHECK_FALSE(t(unknown));
  CHECK_FALSE(t.keep());  // the last plan had no estimate: nothing to keep
}

TEST_CASE("the estimate is the simulator's makespan where blocks are whole") {
  // Every step then is one op on its rank's compute stream and waits only for the steps it
  // needs: the simulator's timing is the estimate's, whatever the order. Random orders, as the
  // local search makes them, from every generator's plan.
  std::mt19937_64 rng(5);
  // Transfers too, each leaving when its rank's sends before it have (they share a stream);
  // and chunks of their own costs, overlapped pairs at `pair_of` their halves.
  unit_problem uneven = problem_of(3, 6, true, 1, 2, 1, 0.4);
  for (int c = 0; c < uneven.model.chunks(); ++c)
    uneven.cost.chunks.push_back({units(0.5 + 0.25 * c), units(1.5 + 0.5 * (c % 3)),
                                  units(0.5 + 0.125 * c), units(0.25), units(0.5)});
  for (const unit_problem& q :
       {problem_of(4, 8, false, 1, 2, 1, 0), problem_of(4, 8, true, 1, 2.5, 1.2, 0),
        problem_of(3, 6, false, 1, 3, 1.5, 0), problem_of(4, 8, false, 1, 2, 1, 1.5),
        problem_of(3, 6, true, 1, 2, 1, 0.7), uneven}) {
    step_timing<units> t(q);
    int checked = 0;
    for (const generator_order& g : generator_orders(q.model, q.overlap)) {
      if (!g.p) continue;
      step_order p = *g.p;
      for (int k = 0; k < 200; ++k) {
        step_order x = p;
        const std::optional<search::detail::changed> ch =
            search::detail::move(x, rng, true, !q.cost.chunks.empty());
        if (!ch || !search::detail::in_order(x)) continue;
        const std::optional<scored<units>> sim = evaluate(q, x);
        const std::optional<double> est = t(x);
        REQUIRE(bool(sim) == bool(est));
        if (!sim) continue;
        CHECK(*est == doctest::Approx(sim->makespan.count()));
        ++checked;
        p = x;
      }
    }
    CHECK(checked > 100);
  }
}

TEST_CASE("an estimate from the plan kept is the whole plan's estimate, move after move") {
  // What a move changes is timed again and the rest kept: the same figure as timing the whole
  // plan, on a capped MoE V (pairs, splits, transfers), a cross-DC loop and DualPipe's two
  // directions; one move in eight a ruin and recreate, which changes every rank.
  std::mt19937_64 rng(9);
  unit_problem two_ways = problem_of(4, 8, true, 1, 2, 1, 0.5);
  two_ways.model.bidirectional = true;
  for (const unit_problem& q :
       {moe_vee(4, 16), problem_of(4, 8, false, 1, 2, 1, 1.5, 6), two_ways}) {
    const std::vector<list_policy> policies = search::detail::policy_grid(
        q.model, q.model.max_live > 0 ? q.model.max_live : q.model.micro * 2, true, true);
    step_timing<units> whole(q), kept(q);
    std::optional<step_order> now;
    for (const generator_order& g : generator_orders(q.model, q.overlap))
      if (g.p && !now) {
        const step_order p = search::detail::forwards_deferred(*g.p, q.model.max_live);
        if (whole(p)) now = p;
      }
    REQUIRE(now);
    REQUIRE(kept(*now));
    REQUIRE(kept.keep());
    double cost = *whole(*now);
    int checked = 0, accepted = 0;
    std::vector<std::size_t> same(now->ranks.size());
    for (int k = 0; k < 3000; ++k) {
      step_order x = *now;
      if (k % 8 == 0) {
        const double cut = std::uniform_real_distribution<double>(0, 1)(rng);
        for (std::size_t r = 0; r < same.size(); ++r)
          same[r] = static_cast<std::size_t>(cut * static_cast<double>(x.ranks[r].size()));
        const std::optional<step_order> again = list_schedule(
            q, policies[static_cast<std::size_t>(k / 8) % policies.size()], &*now, same);
        if (!again) continue;
        x = *again;
      } else {
        const std::optional<search::detail::changed> ch = search::detail::move(x, rng, true, true);
        if (!ch || !search::detail::in_order(x.model, x.ranks[ch->rank])) continue;
        for (std::size_t r = 0; r < same.size(); ++r) same[r] = x.ranks[r].size();
        same[ch->rank] = ch->from;
      }
      const std::optional<double> a = whole(x), b = kept(x, same);
      REQUIRE(bool(a) == bool(b));
      ++checked;
      if (!a) continue;
      CHECK(*b == doctest::Approx(*a));
      if (*b <= cost + 2) {  // wander, as late acceptance does
        REQUIRE(kept.keep());
        now = x;
        cost = *b;
        ++accepted;
      }
    }
    CHECK(checked > 500);
    CHECK(accepted > 100);
  }
}

TEST_CASE("an overlapped pair whose backward needs its own forward is out of order") {
  const unit_problem q = problem_of(2, 2, false, 1, 2, 1, 0);
  step_order p{q.model, q.overlap, {}};
  // Rank 1 (the last chunk) pairs micro-batch 0's forward with its own backward.
  p.ranks = {{}, {{action::FB, 0, 1, 0, 1}}};
  CHECK_FALSE(search::detail::in_order(p.model, p.ranks[1]));
  p.ranks[1] = {{action::F, 0, 1, 0, 0}, {action::FB, 1, 1, 0, 1}};
  CHECK(search::detail::in_order(p.model, p.ranks[1]));
}

TEST_CASE("the local search estimates plans step by step and judges the promising ones") {
  const unit_problem q = moe_vee(4, 16);
  const search_result<units> r = find_schedule(q, {.budget_s = 60, .max_evaluations = 400});
  REQUIRE(r.best);
  CHECK(r.estimated > r.evaluations);  // most moves screened by their estimate
  CHECK(r.estimated <= 400 * search_options::estimates_per_evaluation);
  // A cap on estimates of its own ends the search by itself (a walk's starts are estimated
  // before the cap is looked at: a few over it at most).
  const search_result<units> capped =
      find_schedule(q, {.budget_s = 60, .max_evaluations = 1u << 30, .max_estimates = 200});
  CHECK(capped.estimated >= 200);
  CHECK(capped.estimated <= 200 + 8);
  // Timed on shared workers, plans are judged one by one: nothing is estimated.
  unit_problem shared = problem_of(2, 4, false, 1, 2, 1, 0.5);
  shared.workers = 1;
  CHECK(find_schedule(shared, {.budget_s = 60, .max_evaluations = 50}).estimated == 0);
}

TEST_CASE("plans are estimated only where the estimate times what the simulator does") {
  const unit_problem q = problem_of(2, 4, false, 1, 2, 1, 0.5);
  CHECK(estimable(q));
  const auto without = [&](auto&& change) {
    unit_problem x = q;
    change(x);
    return !estimable(x) &&
           find_schedule(x, {.budget_s = 60, .max_evaluations = 30}).estimated == 0;
  };
  CHECK(without([](unit_problem& x) { x.workers = 2; }));
  CHECK(without([](unit_problem& x) { x.cost.contention.compute_slowdown = 0.189; }));
  CHECK(without([](unit_problem& x) { x.sim.slot_barrier = true; }));
  CHECK(without([](unit_problem& x) { x.sim.event_latency = units(0.1); }));
  CHECK(without([](unit_problem& x) { x.model.waits = transfer_wait::host; }));
  CHECK(without([](unit_problem& x) { x.model.loss = loss_reduce::blocking; }));
}

TEST_CASE("the search: legal, under the cap, never worse than a generator, same seed same plan") {
  struct row {
    unit_problem q;
    bool strictly_better;  // worked out: the generators leave room the search can take
  };
  const row rows[] = {
      // F < B with dW half of B, memory twice 1F1B's, which ZB-H1 does not use: the work bound
      // 3 + 8 x 4 = 35 is within reach.
      {problem_of(4, 8, false, 1, 3, 1.5, 0, 8), true},
      {problem_of(4, 8, false, 1, 2, 1, 0, 4), false},  // ZB-H1 is at the bound already
      {problem_of(2, 8, true, 1, 2, 1, 0.25), false},
  };
  for (const row& r : rows) {
    const search_options opt{.budget_s = 60, .max_evaluations = 3000, .seed = 7};
    const search_result<units> a = find_schedule(r.q, opt);
    REQUIRE(a.best);
    const auto gen = a.best_generator();
    REQUIRE(gen);
    CHECK(a.best->makespan <= gen->makespan);
    if (r.strictly_better) CHECK(a.best->makespan < gen->makespan);
    CHECK(a.best->makespan >= a.bound.best());
    // Legal as built, and under the cap.
    CHECK_NOTHROW((void)lower(to_schedule(a.best->p)));
    if (r.q.model.max_live > 0) CHECK(a.best->peak_live <= r.q.model.max_live);
    // Deterministic for a seed.
    const search_result<units> b = find_schedule(r.q, opt);
    REQUIRE(b.best);
    CHECK(b.best->p == a.best->p);
    CHECK(b.evaluations == a.evaluations);
  }
  // The first row reaches its work bound.
  const search_result<units> w =
      find_schedule(rows[0].q, {.budget_s = 60, .max_evaluations = 3000});
  CHECK(w.best->makespan.count() == doctest::Approx(35));
}

TEST_CASE("the search says when nothing fits the cap") {
  // A V needs at least two units a rank (its two chunks); one fits nothing.
  const search_result<units> r =
      find_schedule(problem_of(2, 4, true, 1, 2, 1, 0, 1), {.budget_s = 5});
  CHECK_FALSE(r.best);
  for (const auto& g : r.generators) CHECK_FALSE(g.result);
}

TEST_CASE("exact optimum of small problems, and the search reaches it") {
  // pp 2, micro 2: (p - 1) F + m (F + B) = 7; pp 2, micro 3, transfers 0.5: the last rank
  // starts at 1.5 and computes 9.
  const struct {
    unit_problem q;
    double optimum;
  } cases[] = {{problem_of(2, 2, false, 1, 2, 1, 0), 7},
               {problem_of(2, 3, false, 1, 2, 1, 0.5), 10.5}};
  for (const auto& c : cases) {
    const auto e = exact_schedule(c.q, true, false);
    REQUIRE(e);
    REQUIRE(e->best);
    CHECK(e->best->makespan.count() == doctest::Approx(c.optimum));
    const auto s = find_schedule(c.q, {.budget_s = 60, .max_evaluations = 2000});
    CHECK(s.best->makespan.count() == doctest::Approx(c.optimum));
  }
  // Too many combinations: refused rather than run for ever.
  CHECK_FALSE(exact_schedule(problem_of(4, 8, false, 1, 2, 1, 0), true, false, 1000));
}

TEST_CASE("a generator's plan over the cap is kept up to it and finished by the list scheduler") {
  // What a rank's steps hold, by hand: F0.0 and F1.0 hold 2; B0.0 frees one (1); F2.0 with
  // B1.0 holds 2 before its backward frees one (1); B2.0 frees the last. Under a cap of 2 all
  // five fit; under 1 the second forward does not (1 step kept).
  step_order p;
  p.ranks = {{{action::F, 0, 0},
              {action::F, 1, 0},
              {action::B, 0, 0},
              {action::FB, 2, 0, 1, 0},
              {action::B, 2, 0}}};
  CHECK(search::detail::steps_within(p, 2) == std::vector<std::size_t>{5});
  CHECK(search::detail::steps_within(p, 1) == std::vector<std::size_t>{1});
  // pp 8, 16 micro-batches of MoE sub-stages under ZB-V's cap of 16: DualPipeV's pairs hold 17
  // and are refused; kept up to the cap and finished by a pairing policy of the list
  // scheduler, it beats ZB-V (369.6) by more than 3 %.
  const unit_problem q = moe_vee(8, 16);
  const search_result<units> r = find_schedule(q, {.max_evaluations = 4});
  const auto zbv = r.best_generator();
  REQUIRE(zbv);
  std::optional<step_order> dualpipev;
  for (const generator_order& g : generator_orders(q.model, q.overlap))
    if (g.name == "dualpipev") dualpipev = g.p;
  REQUIRE(dualpipev);
  CHECK_FALSE(evaluate(q, *dualpipev));
  const std::vector<std::size_t> keep = search::detail::steps_within(*dualpipev, 16);
  double finished = 0;
  for (const list_policy& pol : search::detail::policy_grid(q.model, 16, true, true)) {
    if (!pol.pair) continue;
    if (const auto f = list_schedule(q, pol, &*dualpipev, keep))
      if (const auto s = evaluate(q, *f)) {
        CHECK(s->peak_live <= 16);
        if (finished == 0 || s->makespan.count() < finished) finished = s->makespan.count();
      }
  }
  CHECK(finished > 0);
  CHECK(finished < 0.97 * zbv->makespan.count());
  CHECK(finished >= r.bound.best().count());
  // Without split backwards, DualPipeV (its edges split) is outside the problem: it is neither
  // judged nor made to fit, and no plan found splits.
  const search_result<units> fused = find_schedule(q, {.max_evaluations = 300, .split = false});
  REQUIRE(fused.best);
  CHECK(fused.found_by.find("dualpipev") == std::string::npos);
  CHECK_FALSE(search::detail::splits_backwards(fused.best->p));
}

namespace {
step_order one_rank(std::vector<step> steps) {
  step_order p;
  p.ranks = {std::move(steps)};
  return p;
}
}  // namespace

TEST_CASE("a forward over the cap is held back to the next backward") {
  using search::detail::forwards_deferred;
  // Under a cap of 2, worked by hand: F0.0 and F1.0 hold 2; F2.0 (with B0.0) would make 3, so
  // B0.0 runs alone (1) and F2.0 waits; it fits beside the next pair's backward B1.0 (2, then
  // 1), and that pair's F3.0 waits in turn, for B2.0 (2, then 1); B3.0 frees the last.
  CHECK(forwards_deferred(one_rank({{action::F, 0, 0},
                                    {action::F, 1, 0},
                                    {action::FB, 2, 0, 0, 0},
                                    {action::FB, 3, 0, 1, 0},
                                    {action::B, 2, 0},
                                    {action::B, 3, 0}}),
                          2)
            .ranks[0] == std::vector<step>{{action::F, 0, 0},
                                           {action::F, 1, 0},
                                           {action::B, 0, 0},
                                           {action::FB, 2, 0, 1, 0},
                                           {action::FB, 3, 0, 2, 0},
                                           {action::B, 3, 0}});
  // Its own micro-batch's backward needs it: the held forward runs first. Cap 1: F0.0 holds 1,
  // F1.0 (with B0.0) waits, B0.0 frees (0), then F1.0 and B1.0.
  CHECK(forwards_deferred(
            one_rank({{action::F, 0, 0}, {action::FB, 1, 0, 0, 0}, {action::B, 1, 0}}), 1)
            .ranks[0] ==
        std::vector<step>{
            {action::F, 0, 0}, {action::B, 0, 0}, {action::F, 1, 0}, {action::B, 1, 0}});
  // No room for a pair: the backward alone, then the forward — GPipe's order made 1F1B's. A dX
  // frees nothing and a dW one, passing through as they are.
  CHECK(forwards_deferred(one_rank({{action::F, 0, 0},
                                    {action::F, 1, 0},
                                    {action::F, 2, 0},
                                    {action::I, 0, 0},
                                    {action::W, 0, 0},
                                    {action::B, 1, 0},
                                    {action::B, 2, 0}}),
                          1)
            .ranks[0] == std::vector<step>{{action::F, 0, 0},
                                           {action::I, 0, 0},
                                           {action::W, 0, 0},
                                           {action::F, 1, 0},
                                           {action::B, 1, 0},
                                           {action::F, 2, 0},
                                           {action::B, 2, 0}});
  // A backward or a dX needs its own (micro-batch, chunk)'s forward: a held one goes first, with
  // every forward held before it. On a V rank under a cap of 1, F0.1 waits and goes before B0.1;
  // F1.0 and F1.1 wait, and B1.1 needs F1.1, held behind F1.0: both go first — the plan as it
  // was, over the cap (the checker refuses it). The same for a dX: under a cap of 2, F1.0 and
  // F1.1 wait until I1.1.
  const step_order vee = one_rank({{action::F, 0, 0},
                                   {action::F, 0, 1},
                                   {action::B, 0, 1},
                                   {action::F, 1, 0},
                                   {action::F, 1, 1},
                                   {action::B, 1, 1},
                                   {action::B, 0, 0},
                                   {action::B, 1, 0}});
  CHECK(forwards_deferred(vee, 1) == vee);
  const step_order split = one_rank({{action::F, 0, 0},
                                     {action::F, 0, 1},
                                     {action::F, 1, 0},
                                     {action::I, 0, 1},
                                     {action::F, 1, 1},
                                     {action::I, 1, 1},
                                     {action::W, 0, 1},
                                     {action::W, 1, 1},
                                     {action::I, 0, 0},
                                     {action::W, 0, 0},
                                     {action::I, 1, 0},
                                     {action::W, 1, 0}});
  CHECK(forwards_deferred(split, 2).ranks[0] == std::vector<step>{{action::F, 0, 0},
                                                                  {action::F, 0, 1},
                                                                  {action::I, 0, 1},
                                                                  {action::F, 1, 0},
                                                                  {action::F, 1, 1},
                                                                  {action::I, 1, 1},
                                                                  {action::W, 0, 1},
                                                                  {action::W, 1, 1},
                                                                  {action::I, 0, 0},
                                                                  {action::W, 0, 0},
                                                                  {action::I, 1, 0},
                                                                  {action::W, 1, 0}});
  // No cap (0): nothing moves.
  CHECK(forwards_deferred(vee, 0) == vee);
  // Within the cap, nothing moves.
  const step_order fits =
      one_rank({{action::F, 0, 0}, {action::FB, 1, 0, 0, 0}, {action::B, 1, 0}});
  CHECK(forwards_deferred(fits, 2) == fits);

  // pp 8, 16 micro-batches of MoE sub-stages under ZB-V's cap of 16: DualPipeV (17) is refused;
  // its forwards held back keep every steady pair overlapped one unit lower. The fifth plan the
  // search judges (after ZB-V, V-Half, V-Min and DualPipeV) and the best of them, more than 5 %
  // below ZB-V; legal, within the cap.
  const unit_problem q = moe_vee(8, 16);
  const search_result<units> r = find_schedule(q, {.max_evaluations = 5});
  REQUIRE(r.best);
  CHECK(r.found_by == "dualpipev, forwards deferred under the cap");
  CHECK(r.best->peak_live <= 16);
  const auto zbv = r.best_generator();
  REQUIRE(zbv);
  CHECK(r.best->makespan.count() < 0.95 * zbv->makespan.count());
  CHECK(r.best->makespan.count() >= r.bound.best().count());
}

TEST_CASE("holding forwards back keeps every step, each chunk's order, and never adds memory") {
  // Random ranks of one or two chunks, in order (each chunk's forwards, backwards and dW in
  // micro-batch order, a backward after its forward, a dW after its dX), under random caps.
  // Whatever the cap, the steps are the same (a pair's halves counted apart), the forwards in
  // the same order, still in order per chunk, and before each step that frees a unit no more
  // live units than before that same step of the original: forwards only move later.
  using search::detail::forwards_deferred;
  std::mt19937 rng(7);
  const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  struct parts {
    std::vector<std::pair<int, int>> f, b, i, w;  // (mb, chunk) of each kind, in order
    std::vector<int> before_free;                 // live units before each step that frees
  };
  const auto parts_of = [](const std::vector<step>& v) {
    parts x;
    int live = 0;
    for (const step& t : v) {
      const live_change c = live_change_of(t.a);
      if (c.frees > 0) x.before_free.push_back(live + c.claims);
      live += c.claims - c.frees;
      if (t.a == action::F || t.a == action::FB) x.f.push_back({t.mb, t.chunk});
      if (t.a == action::B) x.b.push_back({t.mb, t.chunk});
      if (t.a == action::FB) x.b.push_back({t.bmb, t.bchunk});
      if (t.a == action::I) x.i.push_back({t.mb, t.chunk});
      if (t.a == action::W) x.w.push_back({t.mb, t.chunk});
    }
    return x;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const int chunks = 1 + pick(2), micro = 1 + pick(6);
    std::vector<int> next_f(chunks, 0), next_b(chunks, 0);
    std::vector<std::vector<int>> undone_w(chunks);  // dX done, dW not yet
    std::vector<step> v;
    for (;;) {
      std::vector<int> can_f, can_b, can_w;
      for (int c = 0; c < chunks; ++c) {
        if (next_f[c] < micro) can_f.push_back(c);
        if (next_b[c] < next_f[c]) can_b.push_back(c);
        if (!undone_w[c].empty()) can_w.push_back(c);
      }
      if (can_f.empty() && can_b.empty() && can_w.empty()) break;
      const int what = pick(4);
      const auto u16 = [](int x) { return static_cast<std::uint16_t>(x); };
      const auto pick_of = [&](const std::vector<int>& from) {
        return from[static_cast<std::size_t>(pick(static_cast<int>(from.size())))];
      };
      if (what == 0 && !can_f.empty()) {
        const int c = pick_of(can_f);
        v.push_back({action::F, u16(next_f[c]++), u16(c)});
      } else if (what == 1 && !can_b.empty()) {
        const int c = pick_of(can_b);
        if (pick(2)) {
          v.push_back({action::B, u16(next_b[c]++), u16(c)});
        } else {
          undone_w[c].push_back(next_b[c]);
          v.push_back({action::I, u16(next_b[c]++), u16(c)});
        }
      } else if (what == 2 && !can_w.empty()) {
        const int c = pick_of(can_w);
        v.push_back({action::W, u16(undone_w[c].front()), u16(c)});
        undone_w[c].erase(undone_w[c].begin());
      } else if (what == 3 && !can_f.empty() && !can_b.empty()) {
        // A pair: a forward beside another micro-batch's backward (of any chunk) — not one that
        // needs the pair's forward (the same micro-batch's backward of an earlier chunk).
        const int fc = pick_of(can_f);
        const int bc = pick_of(can_b);
        if (next_f[fc] == next_b[bc] && fc >= bc) continue;
        v.push_back({action::FB, u16(next_f[fc]++), u16(fc), u16(next_b[bc]++), u16(bc)});
      }
    }
    step_order in = one_rank(v);
    in.model = {.ranks = 1, .chunks_per_rank = chunks, .micro = micro};
    REQUIRE(search::detail::in_order(in));
    const int cap = 1 + pick(micro * chunks);  // 0 is none: its own case, above
    const step_order out = forwards_deferred(in, cap);
    REQUIRE(out.ranks.size() == 1);
    CHECK(search::detail::in_order(out));
    const parts a = parts_of(in.ranks[0]), b = parts_of(out.ranks[0]);
    CHECK(a.f == b.f);
    CHECK(a.b == b.b);
    CHECK(a.i == b.i);
    CHECK(a.w == b.w);
    REQUIRE(a.before_free.size() == b.before_free.size());
    for (std::size_t k = 0; k < a.before_free.size(); ++k)
      CHECK(b.before_free[k] <= a.before_free[k]);
    const int peak =
        a.before_free.empty() ? 0 : *std::max_element(a.before_free.begin(), a.before_free.end());
    if (peak <= cap) CHECK(out == in);
  }
}

TEST_CASE("a searching program may keep freed heap memory for the next plan") {
  // Beyond what this asks of mallopt (1 GiB, within its int): refused, nothing set.
  CHECK_FALSE(keep_freed_heap(std::size_t{2} << 30));
#if defined(__GLIBC__)
#if __GLIBC_PREREQ(2, 33) && !WEFT_SANITIZED && SIZE_MAX > 0xffffffffu
  // What it changes, seen through mallinfo2 (the bytes mmapped, and the heap's free top): with
  // glibc's thresholds set back to its defaults (128 KiB each, fixed), a block of 16 MiB is
  // mmapped; kept, it comes from the heap, and once freed the heap keeps it. (The allocator of
  // this whole test process keeps freed memory from here on: harmless.)
  constexpr std::size_t block = std::size_t{16} << 20;
  REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
  REQUIRE(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1);
  const std::size_t mapped = mallinfo2().hblkhd;
  void* a = std::malloc(block);
  REQUIRE(a);
  CHECK(mallinfo2().hblkhd >= mapped + block);
  std::free(a);
  CHECK(keep_freed_heap());
  const std::size_t mapped_kept = mallinfo2().hblkhd;
  void* b = std::malloc(block);
  REQUIRE(b);
  CHECK(mallinfo2().hblkhd == mapped_kept);
  std::free(b);
  CHECK(mallinfo2().keepcost >= block);
#endif
#else
  CHECK_FALSE(keep_freed_heap());
#endif
}

TEST_CASE("a plan at the lower bound ends the search: it is optimal") {
  // ZB-H1 reaches the work bound 27 (pp 4, micro 8, F 1 B 2 W 1, cap 4): GPipe (over the cap),
  // 1F1B and ZB-H1 are judged, and nothing after them.
  const search_result<units> r =
      find_schedule(problem_of(4, 8, false, 1, 2, 1, 0, 4), {.budget_s = 60});
  REQUIRE(r.best);
  CHECK(r.best->makespan.count() == doctest::Approx(27));
  CHECK(r.found_by == "zb-h1");
  CHECK(r.evaluations == 3);
}

TEST_CASE("plans can be timed on shared workers, as the CPU runtime runs them") {
  unit_problem q = problem_of(2, 4, false, 1, 2, 1, 0);
  const step_order p = step_order_of(one_f_one_b({.ranks = 2, .micro = 4}));
  // A device per rank: 1F1B's (p - 1)(F + B) + m (F + B) = 15.
  CHECK(evaluate(q, p)->makespan.count() == doctest::Approx(15));
  // One worker for both ranks runs all 2 x 4 x 3 of their work one unit at a time.
  q.workers = 1;
  CHECK(evaluate(q, p)->makespan.count() >= 24 - 1e-9);
  const search_result<units> r = find_schedule(q, {.budget_s = 60, .max_evaluations = 300});
  REQUIRE(r.best);
  CHECK(r.best->makespan.count() >= 24 - 1e-9);
}

TEST_CASE("every generator that applies, as plans of the model") {
  const model_desc loop{.ranks = 4, .micro = 8, .max_live = 4};
  const auto g = generator_orders(loop);
  REQUIRE(g.size() == 3);
  CHECK(g[0].name == "gpipe");
  CHECK(g[2].name == "zb-h1");
  REQUIRE(g[2].p);
  CHECK(g[2].p->model == loop);
  // ZB-V and DualPipeV need micro >= 2 pp and say so; V-Half and V-Min take any.
  const auto v =
      generator_orders({.ranks = 4, .chunks_per_rank = 2, .place = placement::vee, .micro = 4});
  REQUIRE(v.size() == 4);
  for (const auto& x : v) {
    CAPTURE(x.name);
    if (x.name == "v-half" || x.name == "v-min") {
      CHECK(x.p);
      continue;
    }
    CHECK_FALSE(x.p);
    CHECK(x.why.find("micro must be >= 2 * ranks") != std::string::npos);
  }
}

TEST_CASE("a problem too large to search is refused, by name") {
  // 64 ranks x 8193 micro-batches: 2 x 8193 x 64 = 1048704 steps, over 2^20.
  try {
    (void)find_schedule(problem_of(64, 8193, false, 1, 2, 1, 0), {.budget_s = 1});
    FAIL("a search of a million-step plan should be refused");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()).rfind("weft: search: 1048704 steps (a forward and a backward per "
                                      "micro-batch and chunk) is over the search's limit of "
                                      "1048576",
                                      0) == 0);
  }
  // The limit is a count: pp 4 x 8 micro-batches are 64 steps.
  const unit_problem q = problem_of(4, 8, false, 1, 2, 1, 0);
  CHECK_THROWS_AS((void)find_schedule(q, {.max_evaluations = 5, .max_steps = 63}), config_error);
  CHECK(find_schedule(q, {.max_evaluations = 5, .max_steps = 64}).best);
  // One run's work per op copy fits one program, not the plans a search makes.
  unit_problem measured = q;
  measured.sim.work.assign(64, units(1));
  CHECK_THROWS_WITH_AS((void)find_schedule(measured, {.max_evaluations = 5}),
                       "weft: search: sim_options::work is one run's work per op copy, not a "
                       "plan's; give the cost model instead (calibrated from the run)",
                       config_error);
}

TEST_CASE("over every placement: a V beats the loop's optimum, each bound its own problem's") {
  // pp 4, 8 micro-batches, a rank's share F 1, B 2 (W 1 of it). One chunk a rank: work 8 x 3 =
  // 24 a rank, and the last rank cannot start before three forwards, 27 — which ZB-H1 reaches.
  // A V's chunks are halves: the last rank starts after 3 half forwards, and ZB-V's 25.5 is
  // below the loop's bound (the measurement of ZB-V on this problem).
  search::unit_problem asked;
  asked.model = {.ranks = 4, .micro = 8};
  const unit_cost_model share = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
  std::vector<search::unit_problem> problems;
  for (const model_desc& m : search::placements_to_try(asked.model)) {
    search::unit_problem q = asked;
    q.model = m;
    q.cost = share.per_chunk_of(m);
    problems.push_back(q);
  }
  REQUIRE(problems.size() == 5);  // loops of 1 to 4 chunks a rank, and a V
  CHECK(problems.back().model.place == placement::vee);
  const auto r = search::find_over_placements(problems, {.budget_s = 60, .seed = 1});
  REQUIRE(r.best);
  const auto& loop1 = r.searched.front().result;
  REQUIRE(loop1.best);
  CHECK(loop1.bound.best().count() == doctest::Approx(27));
  CHECK(loop1.best->makespan.count() == doctest::Approx(27));
  CHECK(r.best_search().result.best->makespan.count() <= 25.5 + 1e-9);
  const model_desc& placed = r.best_search().problem.model;
  CHECK_FALSE((placed.place == placement::loop && placed.chunks_per_rank == 1));
  units least = r.searched.front().result.bound.best();
  for (const auto& s : r.searched) least = std::min(least, s.result.bound.best());
  CHECK(r.bound == least);
  CHECK(r.bound <= r.best_search().result.best->makespan);
}

TEST_CASE("a memory cap over every placement is the same bytes in each placement's units") {
  const model_desc m{.ranks = 4, .micro = 8, .max_live = 3};
  const std::vector<model_desc> all = search::placements_to_try(m, 2);
  REQUIRE(all.size() == 3);
  CHECK(all[0].max_live == 3);
  CHECK(all[1].max_live == 6);
  CHECK(all[2].max_live == 6);  // a V: two chunks a rank
  CHECK_THROWS_AS(search::placements_to_try(m, 0), config_error);
  model_desc two = m;
  two.chunks_per_rank = 2;
  CHECK_THROWS_AS(search::placements_to_try(two), config_error);
  CHECK_THROWS_AS(search::find_over_placements(std::vector<search::unit_problem>{}), config_error);
}
