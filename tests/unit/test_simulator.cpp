// The simulator: published bubble formulas with zero communication cost, the hiding claims of
// MindSpeed's moe-fb-overlap note, deadlock reports, and the metrics' definitions on small cases.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/shared_workers.hpp>

#include "time_approx.hpp"

using namespace weft;

namespace {

template <time_type T>
basic_step_metrics<T> run(const schedule& s, const basic_cost_model<T>& c,
                          basic_sim_options<T> o = {}) {
  const program p = lower(s);
  const basic_timeline<T> t = simulate(p, c, o);
  REQUIRE(!t.deadlocked());
  return measure(p, t);
}

units max_idle(const unit_step_metrics& m) {
  units x = 0;
  for (const auto& r : m.ranks) x = std::max(x, r.idle);
  return x;
}

}  // namespace

TEST_CASE("1F1B and ZB-H1 bubbles: (PP-1)(F+B) for any costs, (PP-1)(F+B-2W) for W <= B/2") {
  for (const double F : {1.0, 2.0})
    for (const double B : {1.0, 2.0, 3.0})
      for (const double W : {0.0, 0.5, 1.0})
        for (const int P : {2, 4, 8}) {
          CAPTURE(F);
          CAPTURE(B);
          CAPTURE(W);
          CAPTURE(P);
          const unit_cost_model c = unit_cost_model::pipeline({.F = F, .B = B, .W = W});
          const pipeline_params p{.ranks = P, .micro = 3 * P};
          for (const auto& r : run(one_f_one_b(p), c).ranks)
            CHECK(r.idle == doctest::Approx((P - 1) * (F + B)));
          if (W > B - W) continue;  // ZB-H1's dW fills bubbles of the size of a dX pass
          for (const auto& r : run(zb_h1(p), c).ranks)
            CHECK(r.idle == doctest::Approx((P - 1) * (F + B - 2 * W)));
        }
}

TEST_CASE("DualPipe and DualPipeV bubbles: (PP/2-1)(F&B+B-3W), where the formula is exact") {
  // Exact when a forward costs what an input-gradient pass costs (F = B - W) and an overlapped
  // pair costs between max(F, B) and F + B (docs/metrics.md shows the other cases).
  struct costs {
    double F, B, W;
  };
  for (const costs& k : {costs{1, 2, 1}, {2, 3, 1}, {1, 1, 0}, {2, 2, 0}, {1.5, 2.5, 1}}) {
    const double F = k.F, B = k.B, W = k.W;  // clang 14 cannot capture structured bindings
    for (const double FB : {B, (B + F + B) / 2, F + B})
      for (const int P : {4, 8}) {
        CAPTURE(F);
        CAPTURE(B);
        CAPTURE(W);
        CAPTURE(FB);
        CAPTURE(P);
        const unit_cost_model c = unit_cost_model::pipeline({.F = F, .B = B, .W = W, .FB = FB});
        const pipeline_params p{.ranks = P, .micro = 4 * P};
        CHECK(max_idle(run(dualpipe(p), c)) == doctest::Approx((P / 2 - 1) * (FB + B - 3 * W)));
        // DualPipeV runs PP = 2P stages on P ranks.
        CHECK(max_idle(run(dualpipev(p), c)) == doctest::Approx((P - 1) * (FB + B - 3 * W)));
      }
  }
}

TEST_CASE("DualPipe's formula is not exact when a forward costs more or less than dX") {
  const unit_cost_model c =
      unit_cost_model::pipeline({.F = 2, .B = 2, .W = 1, .FB = 3});  // F = 2, dX = 1
  const double formula = (8 / 2 - 1) * (3 + 2 - 3 * 1);
  CHECK(max_idle(run(dualpipe({.ranks = 8, .micro = 32}), c)) > formula);
}

TEST_CASE("interleaved 1F1B: bubble fraction (p-1)/(v m) for equal costs") {
  for (const int P : {2, 4, 8})
    for (const int V : {1, 2, 4})
      for (const int M : {P, 2 * P, 4 * P}) {
        CAPTURE(P);
        CAPTURE(V);
        CAPTURE(M);
        // A chunk is 1/V of a rank's layers: it costs 1/V of a stage.
        const unit_cost_model c =
            unit_cost_model::pipeline({.F = 1.0 / V, .B = 1.0 / V, .W = 0.5 / V});
        const unit_step_metrics m = run(interleaved({.ranks = P, .micro = M, .chunks = V}), c);
        const double ideal = M * 2.0;
        for (const auto& r : m.ranks) CHECK(r.idle / ideal == doctest::Approx((P - 1.0) / (V * M)));
      }
}

TEST_CASE("fb-overlap hides the all-to-all as MindSpeed's note claims (slot-barrier execution)") {
  const unit_cost_model c = unit_cost_model::deepseek_v3_like();
  const unit_sim_options host_waits{.slot_barrier = true};
  for (const stage_set st : {stage_set::moe(), stage_set::moe_with_shared()}) {
    const interleaved_params base{
        .ranks = 4, .micro = 16, .chunks = 2, .layers = 2, .stages = st, .extra_warmup = true};
    interleaved_params with = base;
    with.overlap = overlap_options::all();
    const unit_step_metrics off = run(interleaved(base), c, host_waits);
    const unit_step_metrics on = run(interleaved(with), c, host_waits);
    constexpr int warmup = 0, steady = 1, cooldown = 2;
    for (const int ph : {warmup, steady, cooldown}) {
      CAPTURE(ph);
      // Off: every all-to-all is exposed.
      CHECK(off.all_to_all_exposed_by_phase[ph] == testing::approx(off.all_to_all_by_phase[ph]));
    }
    // On: the steady phase hides all of it; warm-up and cool-down hide at least half with a
    // shared expert (the forward's combine has no compute of its micro-batch to hide behind).
    CHECK(on.all_to_all_by_phase[steady] > 0);
    CHECK(on.all_to_all_exposed_by_phase[steady] == doctest::Approx(0));
    if (st == stage_set::moe_with_shared())
      for (const int ph : {warmup, cooldown})
        CHECK(on.all_to_all_exposed_by_phase[ph] <= 0.5 * on.all_to_all_by_phase[ph] + 1e-9);
    CHECK(on.makespan < off.makespan);
  }
}

TEST_CASE("a deadlocked program names the blocked op of every rank") {
  program p = lower(one_f_one_b({.ranks = 2, .micro = 2}));
  // Make rank 0's first op wait for rank 1's last op, which needs it: a cycle.
  const std::uint32_t first = p.queue[p.queue_begin[program::queue_of(0, 0)]];
  const std::uint32_t last = p.queue[p.queue_begin[program::queue_of(1, 0) + 1] - 1];
  paged<std::uint32_t> waits;
  paged<std::uint32_t> begin(p.size() + 1, 0);
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    begin[i] = static_cast<std::uint32_t>(waits.size());
    for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
      waits.push_back(p.waits[w]);
    if (i == first) waits.push_back(last);
  }
  begin[p.size()] = static_cast<std::uint32_t>(waits.size());
  p.waits = waits;
  p.wait_begin = begin;
  const unit_timeline t = simulate(p, unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}));
  REQUIRE(t.deadlocked());
  CHECK(t.blocked[0] == first);
  CHECK(t.blocked[1] != weft::npos);
}

TEST_CASE("metrics on a two-rank pipeline with communication") {
  // 1F1B on 2 ranks, 1 micro-batch: F0 | send | F1 B1 | send | B0, with a transfer of 0.5.
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 0.5});
  const program p = lower(one_f_one_b({.ranks = 2, .micro = 1}));
  const unit_timeline t = simulate(p, c);
  const unit_step_metrics m = measure(p, t);
  CHECK(m.makespan == doctest::Approx(1 + 0.5 + 1 + 2 + 0.5 + 2));
  CHECK(m.ranks[0].busy == doctest::Approx(3));
  CHECK(m.ranks[0].idle == doctest::Approx(4));
  CHECK(m.bubble_ratio == doctest::Approx(8.0 / (2 * 7)));
  // Each rank's two transfers are exposed: nothing computes while they run.
  CHECK(m.ranks[0].exposed_comm == doctest::Approx(1));
  CHECK(m.exposed_comm == doctest::Approx(2));
  CHECK(m.ranks[1].peak_activations == 1);
}

TEST_CASE("lowering refuses an illegal schedule with the rule") {
  schedule s = one_f_one_b({.ranks = 2, .micro = 2});
  std::swap(s.ops[0], s.ops[2]);  // rank 0 runs a backward before its forward
  CHECK_THROWS_WITH_AS(lower(s),
                       doctest::Contains("weft: lower: the schedule is not legal: rule"),
                       config_error);
}

TEST_CASE("the alpha-beta model and its collectives") {
  const link_model l{.alpha = seconds(1e-5), .beta = seconds(1e-9)};  // 10 us, 1 GB/s
  CHECK(collective::p2p(l, 1e6) == doctest::Approx(1e-5 + 1e-3));
  CHECK(collective::ring_all_gather(l, 4, 1e6) == doctest::Approx(3e-5 + 0.75e-3));
  CHECK(collective::ring_reduce_scatter(l, 4, 1e6) == doctest::Approx(3e-5 + 0.75e-3));
  CHECK(collective::ring_all_reduce(l, 4, 1e6) == doctest::Approx(6e-5 + 1.5e-3));
  CHECK(collective::pairwise_all_to_all(l, 8, 8e6) == doctest::Approx(7e-5 + 7e-3));
  // Across data centres, 5 ms per 1000 km of fibre on top of the base latency.
  CHECK(link_model::cross_dc(1000).alpha == doctest::Approx(10e-6 + 5e-3));
  CHECK(link_model::cross_dc(0).alpha == testing::approx(link_model::inter_node().alpha));
  // 960 km with a convergence ratio of 128 (the cross-DC note's runs): 4.8 ms more, 25 GB/s / 128.
  const link_model xdc = link_model::cross_dc(960, 128);
  CHECK(xdc.alpha == doctest::Approx(10e-6 + 4.8e-3));
  CHECK(collective::p2p(xdc, 25e9 / 128) == doctest::Approx(10e-6 + 4.8e-3 + 1.0));
  CHECK(link_model::cross_dc(960).beta == link_model::inter_node().beta);

  cost_model c;
  c.set_flops(kind::attn, phase::F, 2e12, 1e15).set_comm(link_model::inter_node(), 8, 64e6, 16e6);
  CHECK(c.of(kind::attn, phase::F) == doctest::Approx(2e-3));
  CHECK(c.of(kind::dispatch, phase::B) ==
        testing::approx(collective::pairwise_all_to_all(link_model::inter_node(), 8, 64e6)));
  CHECK(c.of(kind::recv, phase::F) ==
        testing::approx(collective::p2p(link_model::inter_node(), 16e6)));
}

TEST_CASE("a slower cross-data-centre link shows up as exposed pipeline communication") {
  const pipeline_params p{.ranks = 4, .micro = 8};
  using std::chrono_literals::operator""ms;
  cost_model near = cost_model::pipeline({.F = 1ms, .B = 2ms, .W = 1ms});
  near.set_comm(link_model::inter_node(), 1, 0, 16e6);
  cost_model far = near;
  far.set_comm(link_model::cross_dc(1000), 1, 0, 16e6);
  const step_metrics a = run(one_f_one_b(p), near), b = run(one_f_one_b(p), far);
  CHECK(b.makespan > a.makespan);
  CHECK(b.exposed_comm > a.exposed_comm);
}

TEST_CASE(
    "ranks sharing workers: one worker serialises all compute, enough workers change nothing") {
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .FB = 2.5});
  for (const schedule& s :
       {one_f_one_b({.ranks = 4, .micro = 8}), dualpipev({.ranks = 4, .micro = 8})}) {
    const program p = lower(s);
    units work = 0;
    // An overlapped forward/backward pair is one piece of work at the pair's cost.
    for (std::uint32_t i = 0; i < p.size(); ++i)
      if (stream_of(p.at(i).k) == stream_class::compute)
        work += p.partner[i] != weft::npos ? c.pair() / 2 : c.of(p.at(i).k, p.at(i).ph);
    CHECK(simulate_on_workers(p, c, 1).makespan == testing::approx(work));
    // The runtime's cost per unit of compute lands on the one worker at most once per unit (a
    // follow-on, readied by the unit before it on its stream, starts as that one completes).
    std::uint32_t unit_count = 0;
    for (std::uint32_t i = 0; i < p.size(); ++i)
      if (stream_of(p.at(i).k) == stream_class::compute)
        unit_count += p.partner[i] == weft::npos || i < p.partner[i] ? 1u : 0u;
    const units charged = simulate_on_workers(p, c, 1, {.dispatch_overhead = 0.25}).makespan;
    CHECK(charged >= work - 1e-9);
    CHECK(charged <= work + 0.25 * unit_count + 1e-9);
    const unit_timeline plenty = simulate_on_workers(p, c, 64);
    CHECK_FALSE(plenty.deadlocked());
    // With a worker for every stream, sharing changes nothing: the same as a device per rank,
    // pairs included (one meaning of a pair in both simulators).
    CHECK(plenty.makespan == testing::approx(simulate(p, c).makespan));
    for (std::uint32_t i = 0; i < p.size(); ++i) {
      CHECK(plenty.start[i] == testing::approx(simulate(p, c).start[i]));
      if (p.partner[i] != weft::npos) CHECK(plenty.start[i] == plenty.start[p.partner[i]]);
    }
    const units two = simulate_on_workers(p, c, 2).makespan;
    CHECK(two <= work + 1e-9);
    CHECK(two >= plenty.makespan - 1e-9);
  }
}

TEST_CASE("ranks sharing workers: a unit readied by the one before it on its stream follows on") {
  // One rank, forward only, 10 layers in a chain: on one compute lane every layer follows on
  // (the worker pays the runtime's cost per unit once); alternating lanes, none can.
  const auto chain = [](bool alternate) {
    schedule s(model_desc{.ranks = 1, .micro = 1, .layers = 10, .backward = false});
    s.add_rank();
    for (int l = 0; l < 10; ++l)
      s.add_slot(make_op(kind::block, phase::F, 0, 0, l, 0, alternate ? l % 2 : 0));
    return lower(s);
  };
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
  // A busy worker pays the runtime's cost per unit before the next; an idle one wakes up.
  const unit_sim_options charged{.dispatch_overhead = 0.25, .wake_latency = 0.5};
  CHECK(simulate_on_workers(chain(false), c, 1, charged).makespan == doctest::Approx(10 + 0.5));
  CHECK(simulate_on_workers(chain(true), c, 1, charged).makespan ==
        doctest::Approx(10 + 0.5 + 9 * 0.25));
  // Two workers, alternating lanes: each unit is readied by the one before it on the other
  // stream, and the worker that finished that one takes it (the other one never wakes).
  CHECK(simulate_on_workers(chain(true), c, 2, charged).makespan ==
        doctest::Approx(10 + 0.5 + 9 * 0.25));
  // Waiting work does not get ahead of a follow-on: two micro-batches' chains on two lanes of
  // one rank, issued interleaved, run one after the other on one worker (first come, first
  // served alone would alternate them).
  schedule two(model_desc{.ranks = 1, .micro = 2, .layers = 4, .backward = false});
  two.add_rank();
  for (int l = 0; l < 4; ++l)
    for (int m = 0; m < 2; ++m) two.add_slot(make_op(kind::block, phase::F, m, 0, l, 0, m));
  const program q = lower(two);
  const unit_timeline t = simulate_on_workers(q, c, 1);
  for (std::uint32_t i = 0; i < q.size(); ++i)
    for (std::uint32_t j = 0; j < q.size(); ++j)
      if (q.at(i).mb == 0 && q.at(j).mb == 1) CHECK(t.finish[i] <= t.start[j] + 1e-9);
}

TEST_CASE("ranks sharing workers: a unit whose input arrived long before still follows on") {
  // 1F1B on two ranks, two micro-batches, transfers of 0.5, one worker: rank 1's F1 has had its
  // receive since 2.5, and it is B0's completion (at 5) that readies it — so it follows on,
  // paying no cost per unit, however early the receive was seen. (Settling units out of time
  // order saw the receive last and charged a dispatch.)
  const program q = lower(one_f_one_b({.ranks = 2, .micro = 2, .transfers = true}));
  const unit_cost_model t = unit_cost_model::pipeline({.F = 1, .B = 2, .P2P = 0.5});
  const unit_timeline at = simulate_on_workers(q, t, 1, {.dispatch_overhead = 0.125});
  units b0_end{-1}, f1_start{-1};
  for (std::uint32_t i = 0; i < q.size(); ++i) {
    const op& o = q.at(i);
    if (q.rank[i] != 1 || o.k != kind::block) continue;
    if (o.ph == phase::B && o.mb == 0) b0_end = at.finish[i];
    if (o.ph == phase::F && o.mb == 1) f1_start = at.start[i];
  }
  REQUIRE(b0_end > units(0));
  CHECK(f1_start == testing::approx(b0_end));
}

TEST_CASE("ranks sharing workers: an all-to-all waits on the link, holding no worker") {
  const unit_cost_model c =
      unit_cost_model::pipeline({.F = 2, .B = 4, .W = 2, .P2P = 0.2, .A2A = 0.5});
  const program p = lower(dualpipev({.ranks = 2,
                                     .micro = 4,
                                     .stages = stage_set::moe_with_shared(),
                                     .overlap = overlap_options::all()}));
  units compute = 0, a2a = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const op& o = p.at(i);
    if (stream_of(o.k) == stream_class::compute) compute += c.of(o.k, o.ph);
    if (o.k == kind::dispatch || o.k == kind::combine) a2a += c.of(o.k, o.ph);
  }
  const units one = simulate_on_workers(p, c, 1).makespan;
  CHECK(one >= compute - 1e-9);
  CHECK(one < compute + a2a - 1e-9);  // all-to-alls ran beside compute on the one worker
}

TEST_CASE("a cost model calibrated from a timeline takes each compute op's mean duration") {
  const cost_model truth = unit_cost_model::deepseek_v3_like().at(seconds(1e-3));
  const program p = lower(
      one_f_one_b({.ranks = 2, .micro = 4, .layers = 2, .stages = stage_set::moe_with_shared()}));
  const timeline t = simulate(p, truth);
  const cost_model got = calibrated(p, t, cost_model{});
  for (const kind k : {kind::attn, kind::mlp, kind::shared})
    for (const phase ph : {phase::F, phase::B})
      CHECK(got.of(k, ph) == testing::approx(truth.of(k, ph)));
  CHECK(got.of(kind::dispatch, phase::F) == seconds(0));  // comm keeps the base's cost
  CHECK(got.of(kind::attn, phase::dW) == seconds(0));     // not in the schedule: the base's
}

TEST_CASE(
    "event latency: every cross-stream wait on the critical path costs it once, or a wake-up") {
  // GPipe, 2 ranks, 1 micro-batch: F -> send -> recv -> F -> B -> send -> recv -> B; the sends
  // wait for compute and the computes for receives: four events, one after the other.
  const program p = lower(gpipe({.ranks = 2, .micro = 1}));
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 0.25});
  const units base = simulate(p, c).makespan, L = 0.125;
  CHECK(simulate(p, c, {.event_latency = L}).makespan == testing::approx(base + 4 * L));
  // On the CPU runtime's workers a unit of compute is ready when its receive completes, and an
  // idle worker's wake-up (measured from then) holds the event's crossing: the two sends pay
  // the event latency, the three computes that find the worker idle (rank 0's first forward,
  // rank 1's forward, rank 0's backward) its wake-up; rank 1's backward follows its forward.
  const units W = 0.0625;
  CHECK(simulate_on_workers(p, c, 1, {.event_latency = L}).makespan ==
        testing::approx(base + 2 * L));
  CHECK(simulate_on_workers(p, c, 1, {.event_latency = L, .wake_latency = W}).makespan ==
        testing::approx(base + 2 * L + 3 * W));
}

TEST_CASE("calibration keeps a base's transfer costs when there are two link classes") {
  // Every op of a 2-rank 1F1B measured at 3 s, every comm span 3 s: one link class, the
  // transfers' mean (3 s) replaces the base's 0.5 s; with sites, the base's stays.
  const program p = lower(one_f_one_b({.ranks = 2, .micro = 2, .transfers = true}));
  timeline t;
  t.start.assign(p.size(), seconds(0));
  t.finish.assign(p.size(), seconds(3));
  const std::vector<seconds> span(p.size(), seconds(3));
  cost_model base;
  base.set(kind::send, phase::F, seconds(0.5));
  CHECK(calibrated(p, t, base, span).of(kind::send, phase::F) == testing::approx(seconds(3)));
  base.site_ranks = 1;
  CHECK(calibrated(p, t, base, span).of(kind::send, phase::F) == testing::approx(seconds(0.5)));
  CHECK(calibrated(p, t, base, span).of(kind::block, phase::F) == testing::approx(seconds(3)));
}

TEST_CASE("the event latency of a timeline is found again from it") {
  const program p = lower(dualpipev({.ranks = 2,
                                     .micro = 4,
                                     .stages = stage_set::moe_with_shared(),
                                     .overlap = overlap_options::all()}));
  const cost_model c = unit_cost_model::deepseek_v3_like().at(seconds(1));
  const timeline t0 = simulate(p, c);
  CHECK(measured_event_latency(p, t0, {t0.start.begin(), t0.start.end()}) == seconds(0));
  const timeline t = simulate(p, c, {.event_latency = seconds(0.03)});
  CHECK(measured_event_latency(p, t, {t.start.begin(), t.start.end()}) == doctest::Approx(0.03));
  const std::string mismatch = "measured_event_latency: 0 posting times and a timeline of " +
                               std::to_string(p.size()) + " ops for a program of " +
                               std::to_string(p.size());
  CHECK_THROWS_WITH_AS(measured_event_latency(p, t, {}), mismatch.c_str(), config_error);
}

TEST_CASE("the cores of the shared-worker simulator: units running at once share them") {
  // One rank, F then B (1 and 2), twice over (two replicas) on two workers: side by side.
  const program p = lower(one_f_one_b({.ranks = 1, .micro = 1}));
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2});
  CHECK(simulate_on_workers(p, c, 2, {}, 2).makespan == testing::approx(units(3)));
  // Two cores, nothing else on them: each unit has one.
  CHECK(simulate_on_workers(p, c, 2, {.cores = 2}, 2).makespan == testing::approx(units(3)));
  // One core's worth taken by the runtime's other threads: the two units share the rest, 2 / 3
  // of a core each, so F takes 1.5 and B 3.
  CHECK(simulate_on_workers(p, c, 2, {.cores = 2, .background_load = 1}, 2).makespan ==
        testing::approx(units(4.5)));
  // One worker: one unit at a time, and 2 cores for it and the background — at full rate.
  CHECK(simulate_on_workers(p, c, 1, {.cores = 2, .background_load = 1}, 2).makespan ==
        testing::approx(units(6)));
  // A unit starting while another runs slows it from then on. 1F1B on two ranks, two
  // micro-batches, transfers of 0.5 (no worker held): rank 0 runs F0 (0 to 1) and F1 from 1,
  // alone at full rate until rank 1's F0 starts at 1.5; then both at 2 / 3. Rank 0's F1 has 0.5
  // left, which takes 0.75: it ends at 2.25, when rank 1's F0 has done 0.5; alone again (rank 0
  // waits for B0), rank 1's F0 ends at 2.75.
  const program q = lower(one_f_one_b({.ranks = 2, .micro = 2, .transfers = true}));
  const unit_cost_model t = unit_cost_model::pipeline({.F = 1, .B = 2, .P2P = 0.5});
  const unit_timeline at = simulate_on_workers(q, t, 2, {.cores = 2, .background_load = 1});
  int seen = 0;
  for (std::uint32_t i = 0; i < q.size(); ++i) {
    const op& o = q.at(i);
    if (o.k != kind::block || o.ph != phase::F) continue;
    if (q.rank[i] == 0 && o.mb == 1) {
      CHECK(at.finish[i] == testing::approx(units(2.25)));
      ++seen;
    }
    if (q.rank[i] == 1 && o.mb == 0) {
      CHECK(at.start[i] == testing::approx(units(1.5)));
      CHECK(at.finish[i] == testing::approx(units(2.75)));
      ++seen;
    }
  }
  CHECK(seen == 2);
  // The runtime's threads working for a transfer in flight (2 cores' worth each here, nothing
  // otherwise). Rank 0's F1 runs from 1 beside the transfer of F0 (to 1.5): at 2 / (1 + 2), a
  // third done; then at full rate beside rank 1's F0 (2 units, 2 cores): it ends at 1.5 + 2 / 3.
  // Rank 1's F0, two thirds done by then, goes on beside the transfer of F1 at 2 / 3: its last
  // third takes 0.5, and it ends at 2 1/6 + 1/2 = 2 2/3.
  const unit_timeline busy = simulate_on_workers(q, t, 2, {.cores = 2, .comm_load = 2});
  seen = 0;
  for (std::uint32_t i = 0; i < q.size(); ++i) {
    const op& o = q.at(i);
    if (o.k != kind::block || o.ph != phase::F) continue;
    if (q.rank[i] == 0 && o.mb == 1) {
      CHECK(busy.finish[i] == testing::approx(units(1.5 + 2.0 / 3)));
      ++seen;
    }
    if (q.rank[i] == 1 && o.mb == 0) {
      CHECK(busy.finish[i] == testing::approx(units(2 + 2.0 / 3)));
      ++seen;
    }
  }
  CHECK(seen == 2);
  CHECK_THROWS_WITH_AS(simulate_on_workers(p, c, 2, {.cores = 2, .background_load = -1}),
                       "simulate_on_workers: background_load is a number of cores in [0, 1e6]",
                       config_error);
  CHECK_THROWS_WITH_AS(
      simulate_on_workers(p, c, 2,
                          {.cores = 2, .comm_load = std::numeric_limits<double>::quiet_NaN()}),
      "simulate_on_workers: comm_load is a number of cores in [0, 1e6]", config_error);
}

TEST_CASE("units of compute side by side slow each other by the co-run slowdown") {
  // One rank, F then B (1 and 2), two replicas on two workers: side by side throughout, each
  // half as long again; on one worker never side by side.
  const program p = lower(one_f_one_b({.ranks = 1, .micro = 1}));
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2});
  CHECK(simulate_on_workers(p, c, 2, {.co_run_slowdown = 0.5}, 2).makespan ==
        testing::approx(units(4.5)));
  CHECK(simulate_on_workers(p, c, 1, {.co_run_slowdown = 0.5}, 2).makespan ==
        testing::approx(units(6)));
  CHECK_THROWS_WITH_AS(simulate_on_workers(p, c, 2, {.co_run_slowdown = -0.5}),
                       "simulate_on_workers: co_run_slowdown is a fraction in [0, 100]",
                       config_error);
}

TEST_CASE("replicas in the shared-worker simulator: copies share workers, all-to-alls meet") {
  const unit_cost_model c = unit_cost_model::deepseek_v3_like();
  const program p =
      lower(one_f_one_b({.ranks = 2, .micro = 4, .stages = stage_set::moe_with_shared()}));
  // Plenty of workers: the copies run side by side, as one copy does.
  CHECK(simulate_on_workers(p, c, 64, {}, 3).makespan ==
        testing::approx(simulate_on_workers(p, c, 64).makespan));
  // One worker: every copy's compute runs on it, one after the other.
  units compute = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i)
    if (stream_of(p.at(i).k) == stream_class::compute) compute += c.of(p.at(i).k, p.at(i).ph);
  const unit_timeline one = simulate_on_workers(p, c, 1, {}, 2);
  CHECK(one.makespan >= 2 * compute - 1e-9);
  CHECK_FALSE(one.deadlocked());
}

TEST_CASE("each op copy at its own work: the copies of an all-to-all wait for the slowest") {
  // One rank, one micro-batch, MoE stages, two replicas on two workers, communication free:
  // the copies run side by side and meet at every all-to-all. Every unit of compute costs 1.
  const program p = lower(one_f_one_b({.ranks = 1, .micro = 1, .stages = stage_set::moe()}));
  const auto costing = [](double attn_forward) {
    unit_cost_model c;
    for (int k = 0; k < kind_count; ++k)
      for (int ph = 0; ph < phase_count; ++ph)
        if (stream_of(static_cast<kind>(k)) == stream_class::compute)
          c.set(static_cast<kind>(k), static_cast<phase>(ph), units(1));
    return c.set(kind::attn, phase::F, units(attn_forward));
  };
  // Replica 1's attention forward measured 3, replica 0's 1: their mean is 2.
  std::vector<units> work(2 * p.size());
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const op& o = p.at(i);
    if (stream_of(o.k) != stream_class::compute) continue;
    const bool attn_forward = o.k == kind::attn && o.ph == phase::F;
    work[i] = units(1);
    work[p.size() + i] = units(attn_forward ? 3 : 1);
  }
  unit_sim_options own;
  own.work = work;
  // The dispatch after it waits for replica 1's: as if both had taken 3, not their mean 2.
  const units got = simulate_on_workers(p, costing(2), 2, own, 2).makespan;
  CHECK(got == testing::approx(simulate_on_workers(p, costing(3), 2, {}, 2).makespan));
  CHECK(got > simulate_on_workers(p, costing(2), 2, {}, 2).makespan + units(0.5));
  // A copy whose work was not measured (0) costs the model's: replica 1's attention at 2, the
  // slower of the two, as if both had taken 2.
  unit_sim_options unmeasured = own;
  for (std::uint32_t i = 0; i < p.size(); ++i)
    if (p.at(i).k == kind::attn && p.at(i).ph == phase::F) unmeasured.work[p.size() + i] = units(0);
  CHECK(simulate_on_workers(p, costing(2), 2, unmeasured, 2).makespan ==
        testing::approx(simulate_on_workers(p, costing(2), 2, {}, 2).makespan));
  // On one worker the copies take turns and it never idles (a copy waiting at an all-to-all
  // leaves the worker to the other): the step is every copy's work, 1 + 3 for the forward
  // attention and 1 for each other unit of compute of both replicas.
  units others = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i)
    if (stream_of(p.at(i).k) == stream_class::compute &&
        !(p.at(i).k == kind::attn && p.at(i).ph == phase::F))
      others += units(2);
  CHECK(simulate_on_workers(p, costing(2), 1, own, 2).makespan ==
        testing::approx(others + units(4)));
  // Work for some other number of op copies is refused.
  own.work.resize(p.size());
  CHECK_THROWS_WITH_AS(simulate_on_workers(p, costing(2), 2, own, 2),
                       ("simulate_on_workers: work is given for " + std::to_string(p.size()) +
                        " op copies; the program has " + std::to_string(2 * p.size()) + " (" +
                        std::to_string(p.size()) + " ops × 2 replicas)")
                           .c_str(),
                       config_error);
}

// The bubble formulas of docs/schedules.md, with B the full backward (dX + dW) and W its dW part.
// Bubble: a rank's idle time, the makespan less its work (every rank does the same work here).
TEST_CASE("bubbles as docs/schedules.md derives them: 1F1B, ZB-H1, ZB-V") {
  for (int P = 2; P <= 6; ++P) {
    CAPTURE(P);
    const int M = 2 * P + 2;
    for (const auto& [F, dX, W] :
         {std::array{1.0, 1.0, 1.0}, std::array{2.0, 1.5, 0.5}, std::array{1.0, 2.0, 1.0}}) {
      const double B = dX + W;
      const unit_cost_model c = unit_cost_model::pipeline({.F = F, .B = B, .W = W});
      const units one = simulate(lower(one_f_one_b({.ranks = P, .micro = M})), c).makespan;
      CHECK(one - M * (F + B) == doctest::Approx((P - 1) * (F + B)));
      // ZB-H1 when a dW fits the gaps it fills (W <= F, W <= dX): DeepSeek's ZB1P figure.
      const units h1 = simulate(lower(zb_h1({.ranks = P, .micro = M})), c).makespan;
      CHECK(h1 - M * (F + B) == doctest::Approx((P - 1) * (F + B - 2 * W)));
    }
    // ZB-V with F = dX = W: the last rank waits (P-1)F for micro-batch 0, then is never idle.
    const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
    const units v = simulate(lower(zb_v({.ranks = P, .micro = M})), c).makespan;
    CHECK(v - 2 * M * (1 + 2) == doctest::Approx((P - 1) * 1.0));
  }
}

TEST_CASE("lowering without the check still refuses what has no program") {
  schedule twice = one_f_one_b({.ranks = 1, .micro = 1});
  twice.add_slot(twice.ops[0]);
  CHECK_THROWS_WITH_AS(lower_unchecked(twice),
                       "weft: lower: block/F mb=0 is outside the model or repeated", config_error);
  // Two sends on one channel received in the other order: FIFO pairs the wrong payloads.
  const model_desc m{.ranks = 2, .micro = 2, .backward = false};
  const schedule crossed =
      with_model(ranks(slots(block(F, mb{0}), block(F, mb{1}), send(F, mb{0}), send(F, mb{1})),
                       slots(recv(F, mb{1}, chunk{1}), recv(F, mb{0}, chunk{1}, lane{1}),
                             block(F, mb{0}, chunk{1}), block(F, mb{1}, chunk{1}))),
                 m);
  CHECK_THROWS_WITH_AS(lower_unchecked(crossed),
                       "weft: lower: send/F mb=0 is paired in FIFO order with recv/F mb=1 "
                       "chunk=1, which carries other data",
                       config_error);
}

TEST_CASE("one unit of time: named pipeline costs, unit-free tables scaled to seconds") {
  // A chunk of 2 MoE layers: per layer half the chunk's F, split evenly between attention and
  // experts, the shared expert an eighth of the layer on top.
  const unit_cost_model u =
      unit_cost_model::pipeline({.F = 4, .B = 8, .W = 2, .P2P = 0.5, .A2A = 0.25, .layers = 2});
  CHECK(u.of(kind::block, phase::F) == 2);
  CHECK(u.of(kind::attn, phase::F) == 1);
  CHECK(u.of(kind::mlp, phase::dX) == doctest::Approx((8 - 2) / 2.0 / 2));
  CHECK(u.of(kind::shared, phase::dW) == doctest::Approx(2 / 2.0 / 8));
  CHECK(u.of(kind::dispatch, phase::B) == 0.25);
  CHECK(u.of(kind::recv, phase::F) == 0.5);
  CHECK(u.pair() == 2 + 4);  // no FB given: F + B of a layer
  // A millisecond per unit: the same table in seconds, and the same step a thousandth as long.
  const cost_model s = u.at(seconds(1e-3));
  CHECK(s.of(kind::attn, phase::F) == testing::approx(seconds(1e-3)));
  CHECK(s.fb_pair < seconds(0));  // "F + B" stays "F + B"
  CHECK(s.pair() == testing::approx(seconds(6e-3)));
  const program p = lower(one_f_one_b({.ranks = 2, .micro = 3}));
  CHECK(simulate(p, s).makespan.count() == doctest::Approx(simulate(p, u).makespan.count() * 1e-3));
  // Seconds from std::chrono's other units.
  using namespace std::chrono_literals;
  const cost_model c = cost_model::pipeline({.F = 1500us, .B = 3ms, .W = 1ms});
  CHECK(c.of(kind::block, phase::F) == testing::approx(seconds(1.5e-3)));
}

TEST_CASE("costs per chunk: stages that differ, and pairs that hide a half's communication") {
  // 1F1B, 2 ranks, 2 micro-batches: chunk 0 F 1, B 2; chunk 1 F 2, B 3. By hand: rank 0 F0
  // [0, 1], F1 [1, 2]; rank 1 F0 [1, 3], B0 [3, 6], F1 [6, 8], B1 [8, 11]; rank 0 B0 [6, 8],
  // B1 [11, 13].
  const program p = lower(one_f_one_b({.ranks = 2, .micro = 2}));
  unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2});
  c.chunks.push_back({units(1), units(2), units(0)});
  c.chunks.push_back({units(2), units(3), units(0)});
  CHECK(simulate(p, c).makespan == units(13));
  CHECK(simulate_contended(p, c).makespan == units(13));
  // A pair hides each half's communication behind the other's compute, never below either half:
  // F 3 (1 of it an all-to-all) with B 4 (2): computes 2 + 2, hides both: 4.
  const op f = make_op(kind::block, phase::F, 0, 0), b = make_op(kind::block, phase::B, 0, 1);
  unit_cost_model pair;
  pair.chunks.push_back({units(3), units(4), units(1), units(1), units(2)});
  pair.chunks.push_back({units(3), units(4), units(1), units(1), units(2)});
  CHECK(pair.pair_of(f, b) == units(4));
  // B's communication 3: it computes 1, F's 1 hides behind it; B's 3 behind F's compute 2
  // leaves 1: 2 + 1 + 0 + 1 = 4, again never below B alone.
  pair.chunks[1].comm_B = units(3);
  CHECK(pair.pair_of(f, b) == units(4));
  // All communication: nothing hides it.
  pair.chunks[0] = {units(2), units(1), units(0), units(2), units(0)};
  pair.chunks[1] = {units(2), units(1), units(0), units(0), units(1)};
  CHECK(pair.pair_of(f, b) == units(3));
  // Interference: compute runs 1 + s times as long while communication is in flight beside it.
  // F 1 (no communication) with B 2 (1 of it an all-to-all), s = 1: B's 1 beside F's compute 1
  // slows it for that 1, in which it does half its work; the other half at full rate: 1.5 for
  // that side, 1 for B's compute: 2.5 — above the 2 without interference, below F + B = 3.
  pair.chunks[0] = {units(1), units(1), units(0), units(0), units(0)};
  pair.chunks[1] = {units(1), units(2), units(0), units(0), units(1)};
  pair.contention.compute_slowdown = 1;
  CHECK(pair.pair_of(f, b) == units(2.5));
  // However large the slowdown, never more than the halves one after the other: s = 10 gives
  // 1 + 10/11 beside, 1 after: 2.909..., still below 3.
  pair.contention.compute_slowdown = 10;
  CHECK(pair.pair_of(f, b).count() == doctest::Approx(1 + 10.0 / 11 + 1));
  CHECK(pair.pair_of(f, b) < units(3));
  // Communication that outlasts the slowed compute is the side's length: B's 3 beside F's 1
  // slowed to 2.
  pair.chunks[1] = {units(1), units(4), units(0), units(0), units(3)};
  pair.contention.compute_slowdown = 1;
  CHECK(pair.pair_of(f, b) == units(3 + 1));
  pair.contention = {};
  // The floor: per phase the cheapest chunk, and a pair no dearer than any.
  const unit_cost_model fl = c.floor();
  CHECK(fl.chunks.empty());
  CHECK(fl.of(kind::block, phase::F) == units(1));
  CHECK(fl.of(kind::block, phase::B) == units(2));
  CHECK(fl.pair() == units(3));
  // Costs for the wrong number of chunks, or a chunk that is not whole, are refused.
  unit_cost_model three = c;
  three.chunks.push_back({units(1), units(1), units(0)});
  CHECK_THROWS_WITH_AS(simulate(p, three), "cost model: costs for 3 chunks, the model has 2",
                       config_error);
  unit_cost_model bad = c;
  bad.chunks[1].W = units(5);
  CHECK_THROWS_WITH_AS(simulate(p, bad),
                       "cost model: chunk 1's costs need 0 <= W <= B, 0 <= comm_F <= F and 0 <= "
                       "comm_B <= B",
                       config_error);
}
