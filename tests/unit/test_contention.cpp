// Overlap has a price: shared links and interference in the event simulator. Expected times are
// worked out by hand from the model's definition (max-min fair shares, rates that change only at
// events), not taken from a run.
#include <doctest/doctest.h>

#include <vector>

#include <weft/generators/registry.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/contended.hpp>
#include <weft/sim/simulate.hpp>

using namespace weft;

namespace {
// One rank, forward only, MoE layers: attention, dispatch, experts, combine.
const model_desc moe_forward{.micro = 2, .stages = stage_set::moe(), .backward = false};

// attn0 | attn1 + dispatch0 | mlp0 + dispatch1 | mlp1 + combine0 | combine1: the all-to-alls on
// one stream beside the compute.
program one_stream_moe() {
  return lower(with_model(ranks(slots(attn(F, mb{0}), attn(F, mb{1}) | dispatch(F, mb{0}),
                                      mlp(F, mb{0}) | dispatch(F, mb{1}),
                                      mlp(F, mb{1}) | combine(F, mb{0}), combine(F, mb{1}))),
                          moe_forward));
}

unit_cost_model moe_costs(double attn, double mlp, double a2a) {
  unit_cost_model c;
  c.set(kind::attn, phase::F, units(attn))
      .set(kind::mlp, phase::F, units(mlp))
      .set(kind::dispatch, phase::F, units(a2a))
      .set(kind::combine, phase::F, units(a2a));
  return c;
}

double at(const unit_timeline& t, const program& p, const op& o) {
  for (std::uint32_t i = 0; i < p.size(); ++i)
    if (p.at(i).same_work(o)) return t.finish[i].count();
  FAIL("no such op");
  return -1;
}
}  // namespace

TEST_CASE("max-min fair shares of ports and uplinks") {
  detail::link_resources links{.ranks = 3, .sites = 2, .uplink_capacity = 2};
  detail::fair_share solver;
  std::vector<double> rate;
  const auto path = [](std::initializer_list<std::uint32_t> r) {
    detail::flow_path p;
    for (const std::uint32_t x : r) p.add(x);
    return p;
  };
  const std::uint32_t out0 = links.port(0, link_class::inter_node, false),
                      in1 = links.port(1, link_class::inter_node, true),
                      in2 = links.port(2, link_class::inter_node, true), up = links.uplink(0, 1);
  // Alone: full rate. Two on one port: half each.
  solver.solve(links, {path({out0, in1})}, rate);
  CHECK(rate == std::vector<double>{1.0});
  solver.solve(links, {path({out0, in1}), path({out0, in2})}, rate);
  CHECK(rate == std::vector<double>{0.5, 0.5});
  // Max-min: A and B share port in1; C alone on in2 but shares out0 with A. out0 and in1 both
  // split two ways: every flow 1/2, no port has room left for anyone.
  solver.solve(links, {path({out0, in1}), path({in1}), path({out0, in2})}, rate);
  CHECK(rate == std::vector<double>{0.5, 0.5, 0.5});
  // Three flows on in1, one of them also on a port shared with nobody: 1/3 each; a fourth flow
  // alone on in2 keeps its full rate.
  solver.solve(links, {path({in1}), path({in1}), path({out0, in1}), path({in2})}, rate);
  CHECK(rate[0] == doctest::Approx(1.0 / 3));
  CHECK(rate[2] == doctest::Approx(1.0 / 3));
  CHECK(rate[3] == 1.0);
  // An uplink two ports wide: two flows at full rate, three at 2/3 each.
  const auto port_of = [&](int r) { return links.port(r, link_class::intra_node, false); };
  solver.solve(links, {path({port_of(0), up}), path({port_of(1), up})}, rate);
  CHECK(rate == std::vector<double>{1.0, 1.0});
  solver.solve(links, {path({port_of(0), up}), path({port_of(1), up}), path({port_of(2), up})},
               rate);
  for (const double r : rate) CHECK(r == doctest::Approx(2.0 / 3));
}

TEST_CASE("interference: compute slows while its device communicates") {
  // attn0 | attn1 + dispatch0 | mlp0 + dispatch1 | mlp1 + combine0 | combine1, every op 1 unit,
  // compute taking twice as long while an all-to-all is in flight. By hand: attn0 [0, 1];
  // dispatch0 [1, 2] slows attn1 to half until 2, which ends at 2.5; dispatch1 [2.5, 3.5] slows
  // mlp0 (from 2.5) to 3.5 (half done) and it ends at 4; combine0 [4, 5] slows mlp1 (from 4),
  // ending 5.5; combine1 [5.5, 6.5].
  const program p = one_stream_moe();
  unit_cost_model c = moe_costs(1, 1, 1);
  CHECK(simulate(p, c).makespan == units(5));  // free overlap
  c.contention.compute_slowdown = 1;
  const unit_timeline t = simulate(p, c);
  CHECK(at(t, p, attn(F, mb{1})) == 2.5);
  CHECK(at(t, p, mlp(F, mb{0})) == 4);
  CHECK(at(t, p, mlp(F, mb{1})) == 5.5);
  CHECK(t.makespan == units(6.5));
  // The reverse fact alone: the all-to-alls slow while compute runs beside them. dispatch0
  // [1, ...] beside attn1 [1, 2]: half done at 2, alone after: ends 2.5.
  c.contention = {.comm_slowdown = 1};
  CHECK(at(simulate(p, c), p, dispatch(F, mb{0})) == 2.5);
}

TEST_CASE("shared links: two all-to-alls on one device's port share it") {
  // Multi-stream all-to-alls: combines on lane 4. attn 1, experts 0.5, all-to-all 1. Unshared:
  // dispatch1 [2, 3] and combine0 [2.5, 3.5] overlap, makespan 4.5. Shared: from 2.5 each gets
  // half the port; dispatch1 has 0.5 left and ends at 3.5; combine0 has done 0.5 by then and
  // ends at 4; mlp1 [3.5, 4]; combine1 [4, 5].
  const schedule s =
      with_model(ranks(slots(attn(F, mb{0}), attn(F, mb{1}) | dispatch(F, mb{0}),
                             dispatch(F, mb{1}) | mlp(F, mb{0}), combine(F, mb{0}, lane{4}),
                             mlp(F, mb{1}), combine(F, mb{1}, lane{4}))),
                 moe_forward);
  const program p = lower(s);
  unit_cost_model c = moe_costs(1, 0.5, 1);
  CHECK(simulate(p, c).makespan == units(4.5));
  c.contention.shared_links = true;
  const unit_timeline t = simulate(p, c);
  CHECK(at(t, p, dispatch(F, mb{1})) == 3.5);
  CHECK(at(t, p, combine(F, mb{0})) == 4);
  CHECK(t.makespan == units(5));
  // A fixed part (latency) is not shared: with 0.5 of each all-to-all fixed, combine0's volume
  // starts at 3 — after dispatch1's volume [2.5, 3] has ended — and nothing is shared.
  c.fixed[static_cast<int>(kind::dispatch)][0] = units(0.5);
  c.fixed[static_cast<int>(kind::combine)][0] = units(0.5);
  CHECK(simulate(p, c).makespan == units(4.5));
  // All-to-alls of another link class than the pipeline's do not share with them.
  CHECK(c.contention.a2a == link_class::inter_node);
}

TEST_CASE("nothing shared, no interference: the rate simulator equals the plain one to the bit") {
  // Every generator, with MoE sub-stages, transfers and fb-overlap where they apply: the
  // clock-ordered simulator at rate 1 gives every start and finish the plain one gives.
  const unit_cost_model c = unit_cost_model::deepseek_v3_like();
  for (const generator_info& gi : generators) {
    for (const bool moe : {false, true}) {
      generator_args a;
      a.ranks = 4;
      a.micro = 8;
      a.layers = moe ? 2 : 1;
      a.stages = moe ? stage_set::moe_with_shared() : stage_set::whole_block();
      a.transfers = true;
      a.overlap = moe ? overlap_options::all() : overlap_options::none();
      CAPTURE(gi.name);
      CAPTURE(moe);
      const program p = lower(gi.make(a));
      const unit_timeline plain = simulate(p, c), rated = simulate_contended(p, c);
      CHECK(rated.makespan == plain.makespan);
      bool same = true;
      for (std::uint32_t i = 0; i < p.size(); ++i)
        same = same && rated.start[i] == plain.start[i] && rated.finish[i] == plain.finish[i];
      CHECK(same);
    }
  }
}

TEST_CASE("contention only slows: a contended run is never shorter") {
  unit_cost_model c = unit_cost_model::deepseek_v3_like();
  for (const char* name : {"1f1b", "dualpipev"}) {
    generator_args a;
    a.ranks = 4;
    a.micro = 8;
    a.layers = 2;
    a.stages = stage_set::moe_with_shared();
    a.transfers = true;
    a.overlap = overlap_options::all();
    const program p = lower(generate(name, a));
    c.contention = {};
    const units free = simulate(p, c).makespan;
    c.contention = {.shared_links = true, .compute_slowdown = 0.189};
    c.contention.p2p = c.contention.a2a;  // pipeline transfers share the all-to-alls' ports
    const units priced = simulate(p, c).makespan;
    CAPTURE(name);
    CHECK(priced > free);
    CHECK(priced < free * 1.5);
  }
}

TEST_CASE("tensor-parallel communication inside an op: it computes, then moves that volume") {
  // attn 2 (its last 1 the sequence-parallel all-gather and reduce-scatter, intra-node),
  // dispatch and combine 2 (the all-to-all's 1 on the inter-node port, then the experts'
  // all-gather's 1 intra-node), experts 1.
  const program p = one_stream_moe();
  unit_cost_model c = moe_costs(2, 1, 2);
  for (kind k : {kind::attn, kind::dispatch, kind::combine})
    c.tp_comm[static_cast<int>(k)][0] = units(1);
  // Free: attn1 and dispatch0 [2, 4]; mlp0 [4, 5]; dispatch1 [4, 6]; mlp1 [6, 7]; combine0 [6,
  // 8]; combine1 [8, 10].
  CHECK(simulate(p, c).makespan == units(10));
  // Shared links: attn1 computes [2, 3] while dispatch0 moves its all-to-all (another port);
  // from 3 both move intra-node on rank 0's ports, half each, and end at 5. Then mlp0 [5, 6],
  // dispatch1 [5, 7], mlp1 [7, 8], combine0 [7, 9], combine1 [9, 11].
  c.contention.shared_links = true;
  unit_timeline t = simulate(p, c);
  CHECK(at(t, p, attn(F, mb{1})) == 5);
  CHECK(at(t, p, dispatch(F, mb{0})) == 5);
  CHECK(t.makespan == units(11));
  // Attention's all-gather before its compute (all of its tensor-parallel part first): attn1
  // moves [2, 3] intra-node while dispatch0's all-to-all moves inter-node, then computes [3, 4]
  // while dispatch0's all-gather moves alone: nothing shared, both end at 4.
  c.tp_first[static_cast<int>(kind::attn)][0] = units(1);
  t = simulate(p, c);
  CHECK(at(t, p, attn(F, mb{1})) == 4);
  CHECK(at(t, p, dispatch(F, mb{0})) == 4);
  c.tp_first[static_cast<int>(kind::attn)][0] = units(0);
  // The collectives on the inter-node class instead: dispatch0's two parts are then on one
  // port pair, and attn1's all-gather [3, ...] shares it with dispatch0's second part — the
  // same times, as the shares are the same.
  c.contention.collectives = link_class::inter_node;
  CHECK(simulate(p, c).makespan == units(11));
  // Interference only, the all-to-all 3 long and all of it inter-node: attn1's compute [2, ...]
  // runs at half speed beside dispatch0 [2, 5] and ends at 4; its all-gather is communication,
  // not slowed: attn1 ends at 5. Were all of attn compute, its last 0.5 would run after 5: 5.5.
  c.contention = {.compute_slowdown = 1};
  c.set(kind::dispatch, phase::F, units(3));
  c.tp_comm[static_cast<int>(kind::dispatch)][0] = units(0);
  t = simulate(p, c);
  CHECK(at(t, p, attn(F, mb{1})) == 5);
  c.tp_comm[static_cast<int>(kind::attn)][0] = units(0);
  CHECK(at(simulate(p, c), p, attn(F, mb{1})) == 5.5);
}

TEST_CASE("the timeline records where an op ran below full rate") {
  // attn0 | attn1 + dispatch0 | ..., compute at half speed while an all-to-all is in flight (the
  // interference case above): attn1 runs at 1/2 over [1, 2], mlp0 over [2.5, 3.5], mlp1 over
  // [4, 5]; nothing else is slowed.
  const program p = one_stream_moe();
  unit_cost_model c = moe_costs(1, 1, 1);
  CHECK(simulate(p, c, {.record_slowed = true}).slowed.empty());
  c.contention.compute_slowdown = 1;
  CHECK(simulate(p, c).slowed.empty());  // not asked for
  const unit_timeline t = simulate(p, c, {.record_slowed = true});
  struct stretch {
    op o;
    double from, to;
  };
  const stretch expected[] = {
      {attn(F, mb{1}), 1, 2}, {mlp(F, mb{0}), 2.5, 3.5}, {mlp(F, mb{1}), 4, 5}};
  REQUIRE(t.slowed.size() == std::size(expected));
  for (const stretch& e : expected) {
    bool found = false;
    for (const auto& sl : t.slowed)
      found = found || (p.at(sl.op).same_work(e.o) && sl.from.count() == e.from &&
                        sl.to.count() == e.to && sl.rate == 0.5);
    CAPTURE(to_string(e.o));
    CHECK(found);
  }
}

TEST_CASE("link classes: a linear's gather group and scatter group swap roles in the backward") {
  const contention_facts f{.a2a = link_class::inter_node,
                           .p2p = link_class::intra_node,
                           .collectives = link_class::intra_node,
                           .reduce_scatters = link_class::inter_node};
  CHECK(f.class_of(kind::all_gather, phase::F) == link_class::intra_node);
  CHECK(f.class_of(kind::reduce_scatter, phase::F) == link_class::inter_node);
  // Backward: the output gradient gathered over the scatter group, the input gradient
  // scattered over the gather group.
  CHECK(f.class_of(kind::all_gather, phase::B) == link_class::inter_node);
  CHECK(f.class_of(kind::reduce_scatter, phase::B) == link_class::intra_node);
  CHECK(f.class_of(kind::all_reduce, phase::dW) == link_class::intra_node);
  CHECK(f.class_of(kind::dispatch, phase::F) == link_class::inter_node);
  CHECK(f.class_of(kind::send, phase::B) == link_class::intra_node);
}
