// One semantics, checked from the outside: for randomised generator configurations the checker
// and the simulator agree on legality and on where a deadlock stops each rank; the executor's
// measured timeline respects every wait the semantics names; simulated and executed streams run
// their ops in the same order.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/registry.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/shared_workers.hpp>

using namespace weft;

namespace {

struct config {
  std::string name;
  schedule s;
};

/// Legal p2p options: PyTorch's (none), Megatron's, blocking (1F1B only: Megatron blocks
/// without a virtual pipeline), MindSpeed's early receives on ping/pong streams; with or
/// without a loss all-reduce, blocking or not.
p2p_options random_p2p(std::mt19937& rng, bool one_chunk) {
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  p2p_options o;
  switch (pick(0, one_chunk ? 3 : 2)) {
    case 1:
      o.megatron = true;
      break;
    case 2:
      o.overlap_p2p = o.multi_stream = true;
      break;
    case 3:
      o.blocking = true;
      break;
    default:
      break;
  }
  const int loss = pick(0, 2);
  o.log_allreduce = loss == 1;
  o.async_log_allreduce = loss == 2;
  return o;
}

std::string describe(const p2p_options& o) {
  std::string s = o.megatron ? ", megatron p2p" : o.blocking ? ", blocking p2p" : "";
  if (o.overlap_p2p) s += ", early receives, ping/pong";
  if (o.log_allreduce || o.async_log_allreduce)
    s += o.async_log_allreduce ? ", async loss all-reduce" : ", loss all-reduce";
  return s;
}

/// A random configuration of a random generator: ranks, micro-batches, layers, block or MoE
/// sub-stages (with or without a shared expert), fb-overlap on or off, transfers on or off;
/// for 1F1B and interleaved, transfers issued PyTorch's, Megatron's or MindSpeed's cross-DC way,
/// with a loss all-reduce or not.
config random_config(std::mt19937& rng) {
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int family = pick(0, 6);
  const int P = pick(2, 4);
  const bool moe = pick(0, 1) == 1;
  pipeline_params p{
      .ranks = P,
      .micro = 2 * P + pick(0, 3),
      .layers = moe ? pick(1, 2) : 1,
      .stages = !moe         ? stage_set::whole_block()
                : pick(0, 1) ? stage_set::moe_with_shared()
                             : stage_set::moe(),
      .transfers = pick(0, 1) == 1,
      .overlap = moe && pick(0, 1) ? overlap_options::all() : overlap_options::none()};
  std::string name = std::to_string(P) + " ranks, " + std::to_string(p.micro) + " micro, " +
                     (moe ? "moe" : "block") + (p.transfers ? ", transfers" : "") +
                     (p.overlap == overlap_options::none() ? "" : ", fb-overlap");
  switch (family) {
    case 0:
      return {"gpipe, " + name, gpipe(p)};
    case 1:
      p.p2p = random_p2p(rng, true);
      // MindSpeed's cross-DC switches run its interleaved code: micro-batches in multiples of pp.
      if (p.p2p.overlap_p2p) p.micro = 2 * P;
      return {"1f1b, " + name + describe(p.p2p), one_f_one_b(p)};
    case 2:
      p.overlap = overlap_options::none();
      return {"zb-h1, " + name, zb_h1(p)};
    case 3: {
      p.micro = P * pick(1, 3);
      p.p2p = random_p2p(rng, false);
      // MindSpeed's two groups by rank parity wrap around between even ranks only.
      if (p.p2p.overlap_p2p && P % 2 == 1) p.p2p = {.megatron = true};
      return {"interleaved, " + name + describe(p.p2p), interleaved({.ranks = P,
                                                                     .micro = p.micro,
                                                                     .chunks = 2,
                                                                     .layers = p.layers,
                                                                     .stages = p.stages,
                                                                     .transfers = p.transfers,
                                                                     .overlap = p.overlap,
                                                                     .p2p = p.p2p})};
    }
    case 4:
      p.overlap = overlap_options::none();
      return {"zb-v, " + name, zb_v(p)};
    case 5:
      return {"dualpipev, " + name, dualpipev(p)};
    default:
      p.ranks = 2 * ((P + 1) / 2);
      p.micro = 2 * p.ranks + 2 * pick(0, 1);
      return {"dualpipe, " + name, dualpipe(p)};
  }
}

/// Puts every transfer of a rank on one comm stream (lane 1), as the cross-DC note's baseline
/// does; with `early`, every receive is also posted before anything else the rank does. On one
/// blocking stream an early receive holds back the rank's sends: often a deadlock.
schedule one_transfer_stream(const schedule& s, bool early) {
  schedule t(s.model);
  for (int r = 0; r < s.ranks(); ++r) {
    t.add_rank();
    for (int pass = early ? 0 : 1; pass < 2; ++pass)
      for (int k = 0; k < s.slots(r); ++k) {
        bool any = false;
        for (op o : s.slot(r, k)) {
          if (early && (o.k == kind::recv) != (pass == 0)) continue;
          if (is_p2p(o.k)) o.lane = 1;
          t.push(o);
          any = true;
        }
        if (any) t.close_slot();
      }
  }
  return t;
}

cost_model unit_costs() {
  cost_model c;
  for (int k = 0; k < kind_count; ++k)
    for (int ph = 0; ph < phase_count; ++ph) c.time[k][ph] = seconds(1);
  c.fb_pair = seconds(1);
  return c;
}

/// Each stream's ops, in queue order, start only after the one before them finished.
void same_order_as_queues(const program& p, const timeline& t, const char* what) {
  CAPTURE(what);
  for (std::uint32_t q = 0; q + 1 < p.queue_begin.size(); ++q)
    for (std::uint32_t k = p.queue_begin[q] + 1; k < p.queue_begin[q + 1]; ++k)
      REQUIRE(t.start[p.queue[k]] >= t.finish[p.queue[k - 1]]);
}

/// Every op of copy 0 starts after everything the semantics says it waits for has finished.
void respects_waits(const program& p, int replicas, const timeline& t) {
  const semantics g(p, {.replicas = replicas});
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    REQUIRE(t.ran(i));
    g.each_wait(i, [&](std::uint32_t y, bool) {
      CAPTURE(to_string(p.at(i)));
      CAPTURE(to_string(p.at(y)));
      REQUIRE(t.start[i] >= t.finish[y]);
    });
  }
}

}  // namespace

TEST_CASE("checker and simulator agree on legality and on where each rank is stuck") {
  std::mt19937 rng(20261123);
  int deadlocks = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const config c = random_config(rng);
    CAPTURE(c.name);
    // Legal as generated: the checker proves it, both simulators finish it.
    REQUIRE(check(c.s).ok());
    const program p = lower(c.s);
    const timeline t = simulate(p, unit_costs());
    REQUIRE_FALSE(t.deadlocked());
    REQUIRE(runs_to_completion(p, p.source));  // the sweep a proof uses, on the same program
    REQUIRE_FALSE(simulate_on_workers(p, unit_costs(), 1).deadlocked());
    same_order_as_queues(p, t, "simulated");
    respects_waits(p, 1, t);
    bool transfers = false;
    for (const op& o : p.source.ops) transfers = transfers || is_p2p(o.k);
    if (transfers) {
      // Transfers on one stream per rank: the checker's verdict is the simulator's.
      const schedule bad = one_transfer_stream(p.source, trial % 2 == 1);
      const report r = check(bad);
      const bool only_rule4 =
          r.ok() || (r.violations.size() == 1 && r.violations.front().code == rule::deadlock);
      if (!only_rule4) continue;
      const program pb = lower_unchecked(bad);
      const timeline tb = simulate(pb, unit_costs());
      REQUIRE(r.ok() == !tb.deadlocked());
      REQUIRE(runs_to_completion(pb, pb.source) == !tb.deadlocked());
      if (r.ok()) continue;
      ++deadlocks;
      std::vector<op> stuck_sim, stuck_check;
      for (const std::uint32_t i : tb.blocked)
        if (i != weft::npos) stuck_sim.push_back(pb.at(i));
      for (const violation& v : r.blocked) stuck_check.push_back(v.subject);
      CHECK(stuck_sim == stuck_check);
    }
  }
  CHECK(deadlocks > 5);  // the comparison of stuck ops was exercised
}

TEST_CASE("the proof's sweep and the simulator's events finish the same programs") {
  // Every registry generator, two slots of one rank swapped: legal or deadlocked, with
  // transfers, overlapped pairs, MoE streams and misplaced producers (kept as waits by
  // lower_unchecked), runs_to_completion says what the event-driven simulation does.
  std::mt19937 rng(20261128);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int programs = 0, deadlocks = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const generator_info& g = generators[pick(0, std::size(generators) - 1)];
    generator_args a;
    a.ranks = pick(2, 4);
    a.micro = 2 * pick(2, 4);
    a.layers = pick(1, 2);
    if (pick(0, 1)) a.stages = stage_set::moe();
    if (pick(0, 1)) a.overlap = overlap_options::all();
    a.transfers = pick(0, 1) == 1;
    schedule s;
    try {
      s = g.make(a);
    } catch (const config_error&) {
      continue;  // a combination the generator refuses
    }
    const int r = pick(0, s.ranks() - 1);
    if (s.slots(r) < 2) continue;
    std::vector<std::vector<op>> slots;
    for (int k = 0; k < s.slots(r); ++k)
      slots.emplace_back(s.slot(r, k).begin(), s.slot(r, k).end());
    std::swap(slots[static_cast<std::size_t>(pick(0, s.slots(r) - 1))],
              slots[static_cast<std::size_t>(pick(0, s.slots(r) - 1))]);
    schedule t(s.model);
    for (int q = 0; q < s.ranks(); ++q) {
      t.add_rank();
      for (int k = 0; k < s.slots(q); ++k) {
        const auto ops =
            q == r ? std::span<const op>(slots[static_cast<std::size_t>(k)]) : s.slot(q, k);
        for (const op& o : ops) t.push(o);
        t.close_slot();
      }
    }
    program p;
    try {
      p = lower_unchecked(t);
    } catch (const config_error&) {
      continue;  // no program: transfers cannot be placed for this order
    }
    const bool finishes = !simulate(p, unit_costs()).deadlocked();
    CAPTURE(std::string(g.name));
    CHECK(runs_to_completion(p, p.source) == finishes);
    ++programs;
    deadlocks += finishes ? 0 : 1;
  }
  CHECK(programs > 200);
  CHECK(deadlocks > 50);  // both verdicts were exercised
  CHECK(programs - deadlocks > 20);
}

TEST_CASE("the executor's measured timeline respects every wait; streams keep their order") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const config c = random_config(rng);
    CAPTURE(c.name);
    const model_desc& m = c.s.model;
    const int stages = m.bidirectional ? m.chunks() / 2 : m.chunks();
    exec::run_options opt;
    opt.workers = 2;
    if (m.stages == stage_set::whole_block()) {
      exec::dense_model<float> model({.stages = stages, .micro = m.micro});
      const auto run = exec::dense_executor<float>(model, opt).run(c.s);
      respects_waits(run.prog, 1, run.time);
      same_order_as_queues(run.prog, run.time, "executed");
      same_order_as_queues(run.prog, simulate(run.prog, unit_costs()), "simulated");
    } else {
      const int replicas = 1 + trial % 2;
      exec::moe_model<float> model({.stages = stages,
                                    .layers = m.layers,
                                    .shared_expert = m.stages.has(kind::shared),
                                    .micro = m.micro,
                                    .replicas = replicas});
      const auto run = exec::moe_executor<float>(model, opt).run(c.s);
      respects_waits(run.prog, replicas, run.time);
      same_order_as_queues(run.prog, run.time, "executed");
    }
  }
}
