// Pipeline transfers across data centres (MindSpeed's pp-cross-dc-comm-overlap note): Megatron's
// and MindSpeed's lowerings op by op, the deadlock MindSpeed's second stream avoids, who waits for
// a transfer, the rendezvous, links between sites, the loss all-reduce, and the note's table.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/sim/xdc_preset.hpp>

#include "scenario_presets.hpp"
#include "time_approx.hpp"

using namespace weft;

namespace {

/// A rank's ops as text, one per op: "F0", "B1", "sF0" (send), "rB1" (receive), "ar0".
std::vector<std::string> trace(const schedule& s, int r) {
  std::vector<std::string> out;
  for (const op& o : s.rank_ops(r)) {
    std::string t = o.k == kind::send ? "s" : o.k == kind::recv ? "r" : "";
    if (o.k == kind::all_reduce)
      t = "ar";
    else
      t += o.ph == phase::F ? "F" : "B";
    out.push_back(t + std::to_string(o.mb));
  }
  return out;
}

using strings = std::vector<std::string>;

/// A rank's transfer calls (its slots of transfers), each as "{sF1 rB0}".
strings calls(const schedule& s, int r) {
  strings out;
  for (int g = 0; g < s.slots(r); ++g) {
    const auto slot = s.slot(r, g);
    if (slot.empty() || !is_p2p(slot[0].k)) continue;
    std::string c;
    for (const op& o : slot) {
      c += c.empty() ? '{' : ' ';
      c += o.k == kind::send ? 's' : 'r';
      c += o.ph == phase::F ? 'F' : 'B';
      c += std::to_string(o.mb);
    }
    out.push_back(c + '}');
  }
  return out;
}

}  // namespace

TEST_CASE("Megatron's 1F1B lowering: batched calls, each receive right before its step") {
  // Megatron's 1F1B (forward_backward_pipelining_without_interleaving; batch_p2p_comm, which
  // it always has there): rank 0 warms up with one forward and send_forward alone; the 1F1B
  // phase's send_forward_recv_backward is one call; the cool-down's recv_backward its own.
  // Rank 1 receives F0 before the loop and then sends B0 and receives F1 in one call
  // (send_backward_recv_forward: to the previous rank, then from it). `megatron` is the same
  // code, since Megatron turns overlap_p2p_comm off without a virtual pipeline.
  for (const p2p_options o : {p2p_options{.megatron = true}, p2p_options{.blocking = true}}) {
    const schedule s = one_f_one_b({.ranks = 2, .micro = 2, .p2p = o});
    CHECK(trace(s, 0) == strings{"F0", "sF0", "F1", "sF1", "rB0", "B0", "rB1", "B1"});
    CHECK(trace(s, 1) == strings{"rF0", "F0", "B0", "sB0", "rF1", "F1", "B1", "sB1"});
    CHECK(calls(s, 0) == strings{"{sF0}", "{sF1 rB0}", "{rB1}"});
    CHECK(calls(s, 1) == strings{"{rF0}", "{sB0 rF1}", "{sB1}"});
    // A call's ops progress together: a lane per kind and direction.
    for (const op& t : s.ops)
      if (is_p2p(t.k))
        CHECK(t.lane == (t.k == kind::send
                             ? (t.ph == phase::F ? send_lane : send_upstream_lane)
                             : (t.ph == phase::F ? recv_from_lower_lane : recv_from_higher_lane)));
    CHECK(s.model.waits == transfer_wait::host);
    CHECK(check(s).ok());
  }
  // A call's transfers progress together only on a lane each.
  CHECK_THROWS_WITH_AS(
      with_transfers(one_f_one_b({.ranks = 2, .micro = 2}),
                     {.lanes = p2p_lanes::single, .receives = receive_posting::batched_1f1b}),
      doctest::Contains("need p2p_lanes::by_direction"), config_error);
  // 3 ranks, 4 micro-batches, rank 1: warm-up send_forward and recv_forward are two calls.
  const schedule s = one_f_one_b({.ranks = 3, .micro = 4, .p2p = {.blocking = true}});
  CHECK(calls(s, 1) == strings{"{rF0}", "{sF0}", "{rF1}", "{sF1 rB0}", "{sB0 rF2}", "{sF2 rB1}",
                               "{sB1 rF3}", "{sF3 rB2}", "{sB2}", "{rB3}", "{sB3}"});
}

TEST_CASE(
    "the cross-DC note's early receives: each posted before the step preceding its consumer") {
  // Without a virtual pipeline MindSpeed runs its interleaved code with one chunk: 2 ranks and
  // 4 micro-batches warm up with 2 (2 - r - 1) forwards. Rank 0: B0's receive after the last
  // warm-up forward, B1's after B0 (the 1F1B phase), B3's a step early in the cool-down. Rank
  // 1: each forward's receive after the forward before it. Each rank sends, then posts its
  // receives (MindSpeed's order, as tests/data/megatron/transfer_orders_derived.txt has it).
  const schedule s =
      one_f_one_b({.ranks = 2, .micro = 4, .p2p = {.overlap_p2p = true, .multi_stream = true}});
  CHECK(trace(s, 0) == strings{"F0", "sF0", "F1", "sF1", "rB0", "F2", "sF2", "B0", "rB1", "F3",
                               "sF3", "B1", "rB2", "rB3", "B2", "B3"});
  CHECK(trace(s, 1) == strings{"rF0", "F0", "rF1", "B0", "sB0", "F1", "rF2", "B1", "sB1", "F2",
                               "rF3", "B2", "sB2", "F3", "B3", "sB3"});
  // Ping/pong: even ranks receive on ping and send on pong, odd ranks the reverse.
  for (int r = 0; r < 2; ++r)
    for (const op& o : s.rank_ops(r))
      if (is_p2p(o.k))
        CHECK(o.lane == ((r % 2 == 0) == (o.k == kind::recv) ? ping_lane : pong_lane));
  CHECK(s.model.waits == transfer_wait::data);
  CHECK(check(s).ok());
}

TEST_CASE("interleaved, Megatron's placement: a direction's next receive after its last step") {
  // 2 ranks, 2 chunks, 4 micro-batches: rank 1 warms up with 2 (2 - 1 - 1) + (2 - 1) 2 = 2
  // forwards of chunk 1. Each forward's receive comes in the exchange after the forward before
  // it — in warm-up just before its use; rank 1 is odd, so it receives, then sends.
  const schedule s = interleaved({.ranks = 2, .micro = 4, .chunks = 2, .p2p = {.megatron = true}});
  CHECK(check(s).ok());
  const strings r1 = trace(s, 1);
  CHECK(strings(r1.begin(), r1.begin() + 7) ==
        strings{"rF0", "F0", "rF1", "sF0", "F1", "rF0", "sF1"});
  // In the 1F1B phase the next forward's receive comes a step ahead: rF2 (chunk 1) is posted
  // after F1 (chunk 3), before B1 (chunk 3).
  const std::size_t b1 = 13;
  CHECK(r1[b1] == "B1");
  CHECK(r1[b1 - 1] == "rF2");
  CHECK(r1[b1 - 2] == "F1");
}

TEST_CASE("early receives on one process group deadlock; MindSpeed's two groups do not") {
  // One group, one stream for its point-to-point operations (torch_npu's HCCL group; NCCL's
  // when both face the same peer): both neighbours post a receive before their send. Rank 0
  // waits in rB0 for rank 1's sB0, which waits behind rank 1's rF1, which waits for rank 0's
  // sF1, behind rB0.
  const schedule bad =
      with_transfers(one_f_one_b({.ranks = 2, .micro = 2}),
                     {.lanes = p2p_lanes::single, .receives = receive_posting::early});
  const violation v = diagnose(bad);
  REQUIRE(v.code == rule::deadlock);
  const std::string msg = to_string(v);
  CHECK(msg.find("rank 0") != std::string::npos);
  CHECK(msg.find("rank 1") != std::string::npos);
  CHECK(msg.find("recv/B mb=0") != std::string::npos);
  CHECK(msg.find("send/B mb=0") != std::string::npos);
  // The simulator stops there too, naming what each rank is stuck at.
  const timeline t = simulate(lower_unchecked(bad), cost_model::pipeline({.F = seconds(1)}));
  REQUIRE(t.deadlocked());
  CHECK(to_string(bad.ops[t.blocked[0]]) == "recv/B mb=0 lane=1");
  CHECK(to_string(bad.ops[t.blocked[1]]) == "recv/F mb=1 chunk=1 lane=1");
  // The same early receives with sends and receives in two groups by rank parity (ping/pong):
  // legal. And MindSpeed's own schedule without --use-multi-stream, launched from the compute
  // stream.
  const schedule two =
      with_transfers(one_f_one_b({.ranks = 2, .micro = 2}),
                     {.lanes = p2p_lanes::ping_pong, .receives = receive_posting::early});
  CHECK(check(two).ok());
  const schedule ms = one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.overlap_p2p = true}});
  CHECK(ms.model.waits == transfer_wait::launch_ordered);
  for (int r = 0; r < 2; ++r)
    for (const op& o : ms.rank_ops(r))
      if (is_p2p(o.k))
        CHECK(o.lane == ((r % 2 == 0) == (o.k == kind::recv) ? ping_lane : pong_lane));
  CHECK(check(ms).ok());
  CHECK_FALSE(simulate(lower(ms), cost_model::pipeline({.F = seconds(1)})).deadlocked());
}

TEST_CASE("interleaved under Megatron's code: every forward first when micro-batches equal ranks") {
  // Megatron-LM core_r0.7.0 schedules.py, forward_backward_pipelining_with_interleaving: with
  // num_microbatches == pipeline size, num_warmup_microbatches = total (all_warmup_microbatches):
  // every rank runs its 2 chunks x 2 micro-batches forward, then the backwards, virtual
  // micro-batch k on chunk (k mod 4) / 2 (backwards: the reverse) of micro-batch k mod 2.
  const auto compute = [](const schedule& s, int r) {
    std::vector<std::string> out;
    for (const op& o : s.rank_ops(r))
      if (o.k == kind::block)
        out.push_back(std::string(o.ph == phase::F ? "F" : "B") + std::to_string(o.chunk) + "." +
                      std::to_string(o.mb));
    return out;
  };
  // (Megatron's batched calls, `blocking`, need more than 2 ranks with chunks; below at 4.)
  for (const p2p_options& code : {p2p_options{.megatron = true}, p2p_options{.overlap_p2p = true},
                                  p2p_options{.overlap_p2p = true, .multi_stream = true}}) {
    const schedule s = interleaved({.ranks = 2, .micro = 2, .chunks = 2, .p2p = code});
    CHECK(check(s).ok());
    CHECK(compute(s, 0) == strings{"F0.0", "F0.1", "F2.0", "F2.1", "B2.0", "B2.1", "B0.0", "B0.1"});
    CHECK(compute(s, 1) == strings{"F1.0", "F1.1", "F3.0", "F3.1", "B3.0", "B3.1", "B1.0", "B1.1"});
  }
  // PyTorch's ScheduleInterleaved1F1B keeps its warm-up, min(2 (P - r - 1) + (V - 1) G, V M):
  // rank 1 of 2 warms up with 2 forwards, then alternates.
  const schedule pt = interleaved({.ranks = 2, .micro = 2, .chunks = 2});
  CHECK(compute(pt, 1) == strings{"F1.0", "F1.1", "F3.0", "B3.0", "F3.1", "B3.1", "B1.0", "B1.1"});
  // 4 ranks, 4 micro-batches, 2 chunks: every rank's 8 forwards come first.
  for (const p2p_options& code : {p2p_options{.megatron = true}, p2p_options{.blocking = true}}) {
    const schedule four = interleaved({.ranks = 4, .micro = 4, .chunks = 2, .p2p = code});
    CHECK(check(four).ok());
    for (int r = 0; r < 4; ++r) {
      const std::vector<std::string> ops = compute(four, r);
      REQUIRE(ops.size() == 16);
      for (std::size_t k = 0; k < 16; ++k) CHECK((ops[k][0] == 'F') == (k < 8));
    }
  }
}

TEST_CASE("Megatron's lowerings and MindSpeed's are legal for every pipeline Megatron runs") {
  // Interleaved: micro-batches in multiples of the ranks (Megatron's rule), every-forward
  // warm-ups (micro = ranks) included; 1F1B: any count.
  const p2p_options mindspeed{.overlap_p2p = true, .multi_stream = true},
      alone{.overlap_p2p = true};
  for (int P : {2, 3, 4, 5, 8})
    for (int V : {1, 2, 3, 5})
      for (int M = P; M <= 3 * P; M += P) {
        CAPTURE(P);
        CAPTURE(V);
        CAPTURE(M);
        if (P % 2 == 0 || V == 1) {  // MindSpeed's groups by parity need an even pp to wrap
          CHECK(check(interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = mindspeed})).ok());
          CHECK(check(interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = alone})).ok());
        }
        CHECK(check(interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = {.megatron = true}}))
                  .ok());
        if (P == 2 && V > 1) {  // Megatron: more than 2 ranks with chunks
          CHECK_THROWS_WITH_AS(
              interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = {.blocking = true}}),
              doctest::Contains("greater than 2 with interleaved schedule"), config_error);
          continue;
        }
        CHECK(check(interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = {.blocking = true}}))
                  .ok());
      }
  for (int P : {2, 3, 4, 5, 8})
    for (int M = 1; M <= 3 * P; ++M) {
      CAPTURE(P);
      CAPTURE(M);
      if (M % P == 0) {  // MindSpeed's switches run its interleaved code
        CHECK(check(one_f_one_b({.ranks = P, .micro = M, .p2p = mindspeed})).ok());
        CHECK(check(one_f_one_b({.ranks = P, .micro = M, .p2p = alone})).ok());
      }
      CHECK(check(one_f_one_b({.ranks = P, .micro = M, .p2p = {.megatron = true}})).ok());
      CHECK(check(one_f_one_b({.ranks = P, .micro = M, .p2p = {.blocking = true}})).ok());
    }
}

TEST_CASE("MindSpeed's rules on its cross-DC switches") {
  // Odd pp with chunks: the wrap-around from rank P-1 to rank 0 joins two even ranks, one
  // sending on pong, the other receiving on ping (MindSpeed's groups by rank parity).
  for (const p2p_options& o :
       {p2p_options{.overlap_p2p = true}, p2p_options{.overlap_p2p = true, .multi_stream = true}})
    CHECK_THROWS_WITH_AS(interleaved({.ranks = 3, .micro = 6, .chunks = 2, .p2p = o}),
                         doctest::Contains("needs an even --pp"), config_error);
  CHECK(
      check(interleaved({.ranks = 3, .micro = 6, .chunks = 1, .p2p = {.overlap_p2p = true}})).ok());
  CHECK_THROWS_WITH_AS(
      interleaved({.ranks = 4, .micro = 8, .chunks = 2, .p2p = {.multi_stream = true}}),
      doctest::Contains("--use-multi-stream option must be enabled together with "
                        "--overlap-warmup-cooldown-communication"),
      config_error);
  CHECK_THROWS_WITH_AS(
      one_f_one_b({.ranks = 4, .micro = 8, .p2p = {.blocking = true, .overlap_p2p = true}}),
      doctest::Contains("p2p.blocking and p2p.overlap_p2p contradict each other"), config_error);
  // Micro-batches in multiples of the ranks: with PyTorch's rounds of 11 on 8 ranks, MindSpeed's
  // ping/pong streams deadlock; the rule keeps them out.
  CHECK_THROWS_WITH_AS(
      interleaved({.ranks = 8, .micro = 22, .chunks = 2, .p2p = {.megatron = true}}),
      doctest::Contains("micro % ranks == 0"), config_error);
  CHECK(check(interleaved({.ranks = 8, .micro = 22, .chunks = 2, .transfers = true})).ok());
  // Megatron's batched calls too: its interleaved code asserts the rule.
  CHECK_THROWS_WITH_AS(
      interleaved({.ranks = 2, .micro = 1, .chunks = 2, .p2p = {.blocking = true}}),
      doctest::Contains("micro % ranks == 0"), config_error);
}

TEST_CASE("Megatron's lowerings are refused for schedules Megatron has no code for") {
  // Each of these was accepted and deadlocked: ZB-H1 on one stream, ZB-V on ping/pong streams.
  const auto refused = [](auto make) {
    CHECK_THROWS_WITH_AS(make(),
                         doctest::Contains("is Megatron-LM's and MindSpeed's code for the "
                                           "1f1b and interleaved schedules"),
                         config_error);
  };
  refused([] { return zb_h1({.ranks = 2, .micro = 5, .p2p = {.megatron = true}}); });
  refused([] {
    return zb_v({.ranks = 2, .micro = 4, .p2p = {.overlap_p2p = true, .multi_stream = true}});
  });
  refused([] { return gpipe({.ranks = 2, .micro = 4, .p2p = {.blocking = true}}); });
  refused([] { return dualpipev({.ranks = 2, .micro = 4, .p2p = {.megatron = true}}); });
  refused([] { return dualpipe({.ranks = 2, .micro = 4, .p2p = {.overlap_p2p = true}}); });
  // MindSpeed's fb-overlap VPP is a copy of Megatron's interleaved code without the early
  // receives; with them (accepted once, found by fuzzing) MoE stages deadlocked.
  CHECK_THROWS_WITH_AS(interleaved({.ranks = 4,
                                    .micro = 8,
                                    .chunks = 3,
                                    .stages = stage_set::moe(),
                                    .overlap = overlap_options::all(),
                                    .extra_warmup = true,
                                    .p2p = {.overlap_p2p = true}}),
                       doctest::Contains("fb-overlap's extra warm-up"), config_error);
  CHECK(check(interleaved({.ranks = 4,
                           .micro = 8,
                           .chunks = 3,
                           .stages = stage_set::moe(),
                           .overlap = overlap_options::all(),
                           .extra_warmup = true,
                           .p2p = {.megatron = true}}))
            .ok());
  // PyTorch's lowering, and the logging all-reduce (no transfer placement of its own), stay.
  CHECK(check(zb_h1({.ranks = 2, .micro = 5, .transfers = true})).ok());
  CHECK(check(zb_v({.ranks = 2, .micro = 4, .p2p = {.async_log_allreduce = true}})).ok());
}

TEST_CASE("who waits for a transfer: the data's consumer, its exchange, or the host") {
  const auto waits_for = [](const schedule& s, int rank, const std::string& who,
                            const std::string& what) {
    const program p = lower(s);
    const semantics g(p);
    const strings names = trace(s, rank);
    const std::uint32_t base = s.first_op(s.first_slot(rank));
    std::uint32_t i = 0, j = 0;
    for (std::uint32_t k = 0; k < names.size(); ++k) {
      if (names[k] == who) i = base + k;
      if (names[k] == what) j = base + k;
    }
    bool found = false;  // through an event: not merely the op before it on its stream
    g.each_wait(i, [&](std::uint32_t y, bool event) { found = found || (event && y == j); });
    return found;
  };
  // Megatron's interleaved code (overlap_p2p_comm), one chunk, 2 ranks, 4 micro-batches: rank
  // 0 runs F1 {sF1} {rB0} F2 ... B0; before F2 it waits on the forward handles (sF1), before B0
  // on the backward ones (rB0).
  const schedule meg =
      interleaved({.ranks = 2, .micro = 4, .chunks = 1, .p2p = {.megatron = true}});
  CHECK(meg.model.waits == transfer_wait::exchange);
  CHECK(waits_for(meg, 0, "F2", "sF1"));
  CHECK(waits_for(meg, 0, "B0", "rB0"));
  CHECK_FALSE(waits_for(meg, 0, "B0", "sF1"));
  CHECK_FALSE(waits_for(meg, 0, "F2", "rB0"));
  // PyTorch's lowering and MindSpeed's: only the receive.
  const schedule mindspeed =
      one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.overlap_p2p = true, .multi_stream = true}});
  CHECK(waits_for(mindspeed, 1, "F1", "rF1"));
  CHECK_FALSE(waits_for(mindspeed, 1, "B0", "rF1"));
  // Blocking (Megatron's batched calls, the host waiting for each: its 1F1B, whose rank 0 runs
  // F0 {sF0} F1 {sF1 rB0} B0 {rB1} B1): the op after a call waits for each of its transfers; a
  // call's transfers wait for the compute issued before them, not for each other.
  const schedule blk = one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.blocking = true}});
  CHECK(blk.model.waits == transfer_wait::host);
  CHECK(waits_for(blk, 0, "F1", "sF0"));
  CHECK(waits_for(blk, 0, "B0", "sF1"));
  CHECK(waits_for(blk, 0, "rB1", "sF1"));
  CHECK(waits_for(blk, 0, "rB0", "F1"));
  CHECK_FALSE(waits_for(blk, 0, "rB0", "sF1"));
  // MindSpeed without its own streams: a transfer launched from the compute stream starts
  // after the compute issued before it — rank 0's rB0 after F1 (every forward first on 2
  // ranks with 2 micro-batches), and only with them.
  const schedule alone = one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.overlap_p2p = true}});
  CHECK(waits_for(alone, 0, "rB0", "F1"));
  CHECK_FALSE(waits_for(mindspeed, 0, "rB0", "F1"));
  CHECK(waits_for(alone, 1, "F1", "rF1"));
}

TEST_CASE("a receive's clear-to-send crosses the link before the data does") {
  // Rank 1 posts its receive of micro-batch 0 at 0; rank 0 sends at 1 (after F0): the data
  // leaves at max(1, 0 + latency) and arrives 0.5 later. The transfer counts from 1, when both
  // ends were there: the link is busy with the handshake meanwhile.
  cost_model c = cost_model::pipeline({.F = seconds(1), .B = seconds(2), .P2P = seconds(0.5)});
  for (const double latency : {0.0, 0.25, 3.0}) {
    c.p2p_latency = seconds(latency);
    const schedule s = one_f_one_b({.ranks = 2, .micro = 1, .p2p = {.megatron = true}});
    const program p = lower(s);
    const timeline t = simulate(p, c);
    REQUIRE(!t.deadlocked());
    for (std::uint32_t i = 0; i < p.size(); ++i)
      if (p.at(i).k == kind::send && p.at(i).ph == phase::F) {
        CHECK(t.start[i] == doctest::Approx(1));
        CHECK(t.finish[i] == doctest::Approx(std::max(1.0, latency) + 0.5));
      }
  }
  // The whole step with latency L: F0's data lands at a = max(1, L) + 0.5; rank 0 posts rB0
  // then (its own call, after sF0's), rank 1 sends B0 at a + 3 (F0, B0); the gradient leaves
  // at max(a + 3, a + L) and rank 0's B0 takes 2 more.
  for (const double L : {0.0, 3.0, 5.0}) {
    c.p2p_latency = seconds(L);
    const double a = std::max(1.0, L) + 0.5;
    const timeline t =
        simulate(lower(one_f_one_b({.ranks = 2, .micro = 1, .p2p = {.megatron = true}})), c);
    CHECK(t.makespan == doctest::Approx(std::max(a + 3, a + L) + 0.5 + 2));
  }
}

TEST_CASE("links between sites: a transfer across costs the far link, within the near one") {
  cost_model c = cost_model::pipeline({.F = seconds(1), .P2P = seconds(0.001)});
  c.site_ranks = 2;
  c.far_p2p = seconds(0.5);
  const model_desc m{.ranks = 4, .chunks_per_rank = 2, .micro = 1};
  // Chunk 1 (rank 1) -> chunk 2 (rank 2) crosses; chunk 0 -> 1 does not; chunk 3 (rank 3) ->
  // chunk 4 (rank 0) wraps around the interleaved placement and crosses back.
  CHECK(c.of(make_op(kind::send, phase::F, 0, 1), m) == testing::approx(seconds(0.5)));
  CHECK(c.of(make_op(kind::recv, phase::F, 0, 2), m) == testing::approx(seconds(0.5)));
  CHECK(c.of(make_op(kind::send, phase::F, 0, 0), m) == testing::approx(seconds(0.001)));
  CHECK(c.of(make_op(kind::send, phase::F, 0, 3), m) == testing::approx(seconds(0.5)));
  CHECK(c.of(make_op(kind::send, phase::B, 0, 2), m) == testing::approx(seconds(0.5)));
  CHECK(c.of(make_op(kind::send, phase::B, 0, 1), m) == testing::approx(seconds(0.001)));
  c.site_ranks = 0;  // one site
  CHECK(c.of(make_op(kind::send, phase::F, 0, 1), m) == testing::approx(seconds(0.001)));
}

TEST_CASE("the loss all-reduce: awaited by its backward, or only by the end of the step") {
  // One rank, F = 1, B = 2, the all-reduce 5: blocking, F0 [0,1] ar0 [1,6] B0 [6,8] F1 [8,9]
  // ar1 [9,14] B1 [14,16]; async, B0 [1,3] F1 [3,4] B1 [4,6] while ar0 [1,6] ar1 [6,11].
  unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2});
  c.set(kind::all_reduce, phase::F, 5);
  const schedule blocking = one_f_one_b({.ranks = 1, .micro = 2, .p2p = {.log_allreduce = true}});
  const schedule async =
      one_f_one_b({.ranks = 1, .micro = 2, .p2p = {.async_log_allreduce = true}});
  CHECK(trace(blocking, 0) == strings{"F0", "ar0", "B0", "F1", "ar1", "B1"});
  CHECK(blocking.model.loss == loss_reduce::blocking);
  CHECK(async.model.loss == loss_reduce::async);
  CHECK(check(blocking).ok());
  CHECK(check(async).ok());
  CHECK(simulate(lower(blocking), c).makespan == doctest::Approx(16));
  CHECK(simulate(lower(async), c).makespan == doctest::Approx(11));
  // On a pipeline, only the last stage reduces: one all-reduce per micro-batch, on its lane.
  const schedule p = interleaved(
      {.ranks = 4,
       .micro = 8,
       .chunks = 2,
       .p2p = {.overlap_p2p = true, .multi_stream = true, .async_log_allreduce = true}});
  CHECK(check(p).ok());
  int reductions = 0;
  for (int r = 0; r < 4; ++r)
    for (const op& o : p.rank_ops(r))
      if (o.k == kind::all_reduce) {
        ++reductions;
        CHECK(r == 3);
        CHECK(o.chunk == 7);
        CHECK(o.lane == loss_lane);
      }
  CHECK(reductions == 8);
}

TEST_CASE("llama2-70B across two data centres: the preset's costs from public facts") {
  xdc_facts f = testing::llama2_70b_xdc();
  f.chunks = 1;
  // Per token and layer: QKV 2h(h + 2h/8), causal scores 2 s h, projection 2h^2, SwiGLU 6 h f.
  const double h = 8192,
               per_token = 2 * h * (h + 2 * h / 8) + 2 * 4096 * h + 2 * h * h + 6 * h * 28672;
  CHECK(xdc_layer_flops(f) == doctest::Approx(per_token * 4096 / 8));
  CHECK(xdc_p2p_bytes(f) == doctest::Approx(4096.0 / 8 * h * 2));  // seq / tp tokens, bf16
  // One TP group's 8 ports share their site's 32 ports' uplink, converged 128:1.
  const link_model l = xdc_link(f);
  CHECK(l.alpha == testing::approx(link_model::inter_node().alpha + seconds(4.8e-3)));
  CHECK(l.beta == testing::approx(link_model::inter_node().beta * 32.0));
  CHECK(f.layers_per_chunk() == 10);
  const cost_model c = xdc_cost_model(f);
  CHECK(c.site_ranks == 4);
  CHECK(c.far_p2p == testing::approx(collective::p2p(l, xdc_p2p_bytes(f))));
  CHECK(c.far_p2p_latency == testing::approx(l.alpha));
}

TEST_CASE("the sites' uplink as a resource: a crossing alone costs what the far link charges") {
  xdc_facts f = testing::llama2_70b_xdc();
  f.chunks = 1;
  // 32 ports per site converged 128:1 is a quarter of a device's port: 1/32 of a TP group's 8.
  CHECK(xdc_contention(f).uplink_ports == doctest::Approx(32.0 / (128 * 8)));
  CHECK(xdc_contention(f).compute_slowdown == contention_facts::published().compute_slowdown);
  // Priced, a crossing moves at its port's speed over the uplink instead of at the far link's.
  const cost_model priced =
      xdc_cost_model(f, {.shared_links = true, .uplink_ports = xdc_contention(f).uplink_ports});
  CHECK(priced.far_p2p ==
        testing::approx(collective::p2p(link_model::cross_dc(f.km), xdc_p2p_bytes(f))));
  // Megatron's blocking 1F1B with one micro-batch: one crossing at a time, each alone on its
  // uplink, so the step is the plain model's.
  xdc_facts one = f;
  one.micro = 1;
  const program p = lower(xdc_schedule(one, {}));
  CHECK(simulate(p, priced).makespan.count() ==
        doctest::Approx(simulate(p, xdc_cost_model(one)).makespan.count()).epsilon(1e-9));
}

TEST_CASE("the cross-DC note's table: step times and its reductions, VP 5 / 2 / 1") {
  struct row {
    int vp;
    double base_ms, opt_ms;  // the note's step times
  };
  const row rows[] = {{5, 15923.4, 12343.7}, {2, 12723.5, 12345.4}, {1, 15286.0, 12814.6}};
  double reduction[3] = {};
  for (int i = 0; i < 3; ++i) {
    xdc_facts f = testing::llama2_70b_xdc();
    f.chunks = rows[i].vp;
    const cost_model c = xdc_cost_model(f);
    const timeline base = simulate(lower(xdc_schedule(f, {})), c);
    const timeline opt =
        simulate(lower(xdc_schedule(f, {.overlap_p2p = true, .multi_stream = true})), c);
    REQUIRE(!base.deadlocked());
    REQUIRE(!opt.deadlocked());
    const double b = base.makespan.count() * 1e3, o = opt.makespan.count() * 1e3;
    CAPTURE(rows[i].vp);
    CAPTURE(b);
    CAPTURE(o);
    // Baselines within 15 % of the note's, optimised steps too.
    CHECK(b == doctest::Approx(rows[i].base_ms).epsilon(0.15));
    CHECK(o == doctest::Approx(rows[i].opt_ms).epsilon(0.15));
    reduction[i] = 100 * (1 - o / b);
  }
  const double published[3] = {22.5, 3.0, 16.2};
  // VP 2 within 3 points of the note's reduction; VP 5 falls short (no link contention in the
  // plain model) but stays the largest; VP 1 too (Megatron's 1F1B runs a batched call's
  // transfers together, and the note's run lost more to the link: docs/cross-dc.md), but its
  // baseline gains from MindSpeed's switches more than VP 2's does.
  CHECK(reduction[1] == doctest::Approx(published[1]).epsilon(3.0 / published[1]));
  CHECK(reduction[2] > 5);
  CHECK(reduction[0] > reduction[2]);
  CHECK(reduction[2] > reduction[1]);
  CHECK(reduction[0] > 15);
}

namespace {
/// A rank's compute ops as "F<chunk>.<mb>", "B…" (fused backward), "I…" (dX) and "W…" (dW).
std::vector<std::string> compute_units(const schedule& s, int r) {
  std::vector<std::string> out;
  for (const op& o : s.rank_ops(r)) {
    if (o.k != kind::block) continue;
    std::string u(1, "FBIW"[static_cast<int>(o.ph)]);  // phase order: F, B, dX, dW
    u += std::to_string(o.chunk);
    u += '.';
    u += std::to_string(o.mb);
    out.push_back(u);
  }
  return out;
}
}  // namespace

TEST_CASE("NanoPipe: rank r splits the backwards it warms up less by, and runs their dW last") {
  // MindSpeed core_r0.7.0, NanoPipe.init_decouple and backward_step_helper_warper (the same rule
  // in flexible_schedules.py): num_fwd = min(2 (pp - 1) + (V - 1) pp, total) and
  // num_dx = num_fwd - warm-up; steady-phase backward k < num_dx keeps its linears' weight
  // gradients in WeightGradStore's queue, which WeightGradStore.pop empties in order after the
  // cool-down. pp 4, V 2, 8 micro-batches: total 16, num_fwd 10, warm-ups 10, 8, 6, 4, so
  // num_dx 0, 2, 4, 6. Virtual micro-batch k: micro-batch (k / 8) 4 + k % 4, local chunk
  // (k % 8) / 4 forwards (1 - that backwards); global chunk = local * 4 + rank.
  const schedule s = interleaved({.ranks = 4, .micro = 8, .chunks = 2, .nanopipe = true});
  CHECK(check(s).ok());
  CHECK(compute_units(s, 0) == strings{"F0.0", "F0.1", "F0.2", "F0.3", "F4.0", "F4.1", "F4.2",
                                       "F4.3", "F0.4", "F0.5", "F0.6", "B4.0", "F0.7", "B4.1",
                                       "F4.4", "B4.2", "F4.5", "B4.3", "F4.6", "B0.0", "F4.7",
                                       "B0.1", "B0.2", "B0.3", "B4.4", "B4.5", "B4.6", "B4.7",
                                       "B0.4", "B0.5", "B0.6", "B0.7"});
  CHECK(compute_units(s, 1) == strings{"F1.0", "F1.1", "F1.2", "F1.3", "F5.0", "F5.1", "F5.2",
                                       "F5.3", "F1.4", "I5.0", "F1.5", "I5.1", "F1.6", "B5.2",
                                       "F1.7", "B5.3", "F5.4", "B1.0", "F5.5", "B1.1", "F5.6",
                                       "B1.2", "F5.7", "B1.3", "B5.4", "B5.5", "B5.6", "B5.7",
                                       "B1.4", "B1.5", "B1.6", "B1.7", "W5.0", "W5.1"});
  CHECK(compute_units(s, 3) ==
        strings{"F3.0", "F3.1", "F3.2", "F3.3", "F7.0", "I7.0", "F7.1", "I7.1", "F7.2", "I7.2",
                "F7.3", "I7.3", "F3.4", "I3.0", "F3.5", "I3.1", "F3.6", "B3.2", "F3.7", "B3.3",
                "F7.4", "B7.4", "F7.5", "B7.5", "F7.6", "B7.6", "F7.7", "B7.7", "B3.4", "B3.5",
                "B3.6", "B3.7", "W7.0", "W7.1", "W7.2", "W7.3", "W3.0", "W3.1"});
  // VP 1 (one chunk; MindSpeed runs its interleaved code there): pp 3, 6 micro-batches,
  // num_fwd min(4, 6) = 4, warm-ups 4, 2, 0, so num_dx 0, 2, 4.
  const schedule one = interleaved({.ranks = 3, .micro = 6, .chunks = 1, .nanopipe = true});
  CHECK(check(one).ok());
  CHECK(compute_units(one, 0) == strings{"F0.0", "F0.1", "F0.2", "F0.3", "F0.4", "B0.0", "F0.5",
                                         "B0.1", "B0.2", "B0.3", "B0.4", "B0.5"});
  CHECK(compute_units(one, 1) == strings{"F1.0", "F1.1", "F1.2", "I1.0", "F1.3", "I1.1", "F1.4",
                                         "B1.2", "F1.5", "B1.3", "B1.4", "B1.5", "W1.0", "W1.1"});
  CHECK(compute_units(one, 2) == strings{"F2.0", "I2.0", "F2.1", "I2.1", "F2.2", "I2.2", "F2.3",
                                         "I2.3", "F2.4", "B2.4", "F2.5", "B2.5", "W2.0", "W2.1",
                                         "W2.2", "W2.3"});
  // Micro-batches equal to the ranks: MindSpeed's code (Megatron's) runs every forward first,
  // num_fwd = total = warm-up, nothing splits — whichever lowering the transfers take.
  const schedule all = interleaved(
      {.ranks = 4, .micro = 4, .chunks = 2, .p2p = {.megatron = true}, .nanopipe = true});
  for (int r = 0; r < 4; ++r)
    for (const std::string& u : compute_units(all, r)) CHECK((u[0] == 'F' || u[0] == 'B'));
  const schedule pt = interleaved({.ranks = 4, .micro = 4, .chunks = 2, .nanopipe = true});
  for (int r = 0; r < 4; ++r) {
    const strings u = compute_units(pt, r);
    REQUIRE(u.size() == 16);
    for (std::size_t k = 0; k < 16; ++k) CHECK((u[k][0] == 'F') == (k < 8));
  }
}

TEST_CASE("NanoPipe: MindSpeed's limits, and legal under every lowering Megatron's code has") {
  using D = interleaved_params;
  const auto refused = [](const D& p, const char* why) {
    CAPTURE(why);
    CHECK_THROWS_WITH_AS(interleaved(p), doctest::Contains(why), config_error);
  };
  refused({.ranks = 2, .micro = 4, .chunks = 2, .nanopipe = true}, "more than 2 pipeline ranks");
  refused({.ranks = 4, .micro = 6, .chunks = 2, .nanopipe = true}, "multiples of the ranks");
  refused({.ranks = 4, .micro = 8, .chunks = 2, .extra_warmup = true, .nanopipe = true},
          "fb-overlap");
  refused({.ranks = 4, .micro = 8, .chunks = 2, .splits = 2, .nanopipe = true}, "AMPipe");
  const p2p_options lowerings[] = {
      {}, {.megatron = true}, {.blocking = true}, {.overlap_p2p = true, .multi_stream = true}};
  for (int P : {3, 4, 8})
    for (int V : {1, 2, 3, 5})
      for (int rounds : {1, 2, 3})
        for (const p2p_options& l : lowerings) {
          CAPTURE(P);
          CAPTURE(V);
          CAPTURE(rounds);
          if (l.overlap_p2p && P % 2 == 1 && V > 1) continue;  // MindSpeed's groups: even pp
          const schedule s = interleaved(
              {.ranks = P, .micro = rounds * P, .chunks = V, .p2p = l, .nanopipe = true});
          CHECK(check(s).ok());
        }
}

TEST_CASE("NanoPipe: the deferred dW fill the cool-down's bubbles") {
  // Unit costs, F 1, B 2 of which dW 1: rank r's cool-down ends 2r dW before rank 0's, the
  // time its 2r deferred dW take, and its earlier dX shorten every rank's path to the end.
  const unit_cost_model c = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
  for (int V : {1, 2, 4}) {
    CAPTURE(V);
    const double base =
        simulate(lower(interleaved({.ranks = 4, .micro = 8, .chunks = V})), c).makespan.count();
    const double nano =
        simulate(lower(interleaved({.ranks = 4, .micro = 8, .chunks = V, .nanopipe = true})), c)
            .makespan.count();
    CHECK(nano < base);
  }
}

TEST_CASE(
    "the cross-DC note's NanoPipe rows: MindSpeed's interleaved code at every VP, dW deferred") {
  xdc_facts f = testing::llama2_70b_xdc();
  f.chunks = 1;
  f.nanopipe = true;
  // The split: dW is the linears' weight gradients (their forward FLOPs again), dX the rest.
  const cost_model c = xdc_cost_model(f);
  const double n = f.layers_per_chunk(), rate = f.device.sustained_flops();
  CHECK(c.of(kind::block, phase::dW).count() == doctest::Approx(n * xdc_linear_flops(f) / rate));
  CHECK((c.of(kind::block, phase::dX) + c.of(kind::block, phase::dW)).count() ==
        doctest::Approx(c.of(kind::block, phase::B).count()));
  // NanoPipe wants a virtual stage size, so at VP 1 Megatron runs its interleaved code with one
  // chunk and overlap_p2p_comm on, not its blocking 1F1B: the note's VP 1 baselines, 15286.0 ms
  // without NanoPipe and 12531.0 with, differ by that more than by the deferred dW.
  const schedule vp1 = xdc_schedule(f, {});
  CHECK(vp1.model.chunks_per_rank == 1);
  CHECK(vp1.model.waits == transfer_wait::exchange);
  xdc_facts plain = f;
  plain.nanopipe = false;
  const double blocking = simulate(lower(xdc_schedule(plain, {})), c).makespan.count();
  const double nano = simulate(lower(vp1), c).makespan.count();
  CHECK(nano < 0.9 * blocking);
  struct row {
    int vp;
    double base_ms, opt_ms;  // the note's step times with nanopipe on
  };
  for (const row& r :
       {row{5, 16764.5, 12265.4}, row{2, 12345.4, 12207.7}, row{1, 12531.0, 12517.8}}) {
    f.chunks = r.vp;
    const cost_model cr = xdc_cost_model(f);
    const double b = simulate(lower(xdc_schedule(f, {})), cr).makespan.count() * 1e3;
    const double o =
        simulate(lower(xdc_schedule(f, {.overlap_p2p = true, .multi_stream = true})), cr)
            .makespan.count() *
        1e3;
    CAPTURE(r.vp);
    CAPTURE(b);
    CAPTURE(o);
    CHECK(b == doctest::Approx(r.base_ms).epsilon(0.15));
    CHECK(o == doctest::Approx(r.opt_ms).epsilon(0.15));
    // MindSpeed's switches still help; at VP 2 and 1 little (the note: 1.1 % and 0.1 %).
    CHECK(o < b);
    if (r.vp < 5) CHECK(1 - o / b < 0.03);
  }
}

namespace {
/// A rank's compute and transfers as the reference file spells them: `F<chunk>.<mb>`,
/// `B<chunk>.<mb>`, `sF…`/`rB…` for sends and receives (a send names its sender's chunk, a
/// receive its consumer's), `@ping`/`@pong` on transfers when `groups`, and when `calls` each
/// call (a slot of transfers) in braces.
std::vector<std::string> issue_order(const schedule& s, int r, bool groups, bool calls) {
  std::vector<std::string> out;
  for (int g = 0; g < s.slots(r); ++g) {
    const auto slot = s.slot(r, g);
    const bool call = calls && !slot.empty() && is_p2p(slot[0].k);
    if (call) out.push_back("{");
    for (const op& o : slot) {
      std::string t = o.k == kind::send ? "s" : o.k == kind::recv ? "r" : "";
      if (o.k != kind::block && t.empty()) continue;
      t += o.ph == phase::F ? "F" : "B";
      t += std::to_string(o.chunk) + "." + std::to_string(o.mb);
      if (groups && !(t[0] == 'F' || t[0] == 'B')) t += o.lane == ping_lane ? "@ping" : "@pong";
      out.push_back(t);
    }
    if (call) out.push_back("}");
  }
  return out;
}
/// The same from a reference line: waits and streams dropped, and calls' braces unless `calls`
/// (Megatron's batched calls, each waited: `}w`).
std::vector<std::string> reference_order(const std::string& line, bool groups, bool calls) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) {
    if (calls && (t == "{" || t == "}w")) {
      out.push_back(t.substr(0, 1));
      continue;
    }
    if (t == "{" || t == "}" || t == "}w" || t.rfind("w(", 0) == 0 || t.back() == ')') continue;
    if (const auto at = t.find('@'); at != std::string::npos) {
      const std::string group = t.substr(at, t.find('/') - at);
      t = t.substr(0, at) + (groups ? group : "");
    }
    out.push_back(t);
  }
  return out;
}
/// An op as the reference file names it (see `issue_order`).
std::string reference_name(const op& o) {
  std::string t = o.k == kind::send ? "s" : o.k == kind::recv ? "r" : "";
  t += o.ph == phase::F ? "F" : "B";
  return t + std::to_string(o.chunk) + "." + std::to_string(o.mb);
}
using wait_sets = std::vector<std::set<std::string>>;
/// Per compute step of a reference line, the transfers its rank waits for since the step
/// before: `w(...)` loops over returned handles, and calls that wait before returning (`}w`).
wait_sets reference_waits(const std::string& line) {
  wait_sets out;
  std::set<std::string> waited, call;
  bool in_wait = false, in_call = false;
  std::istringstream in(line);
  for (std::string t; in >> t;) {
    if (t == "{" || t == "}" || t == "}w") {
      if (t == "}w") waited.insert(call.begin(), call.end());
      in_call = t == "{";
      call.clear();
      continue;
    }
    if (t.rfind("w(", 0) == 0) {
      in_wait = true;
      t = t.substr(2);
    }
    const bool closes = in_wait && t.back() == ')';
    if (closes) t.pop_back();
    t = t.substr(0, t.find('@'));
    if (in_wait) {
      waited.insert(t);
      in_wait = !closes;
    } else if (in_call) {
      call.insert(t);
    } else {  // a compute step
      out.push_back(waited);
      waited.clear();
    }
  }
  return out;
}
/// The same from weft's semantics: per compute op of rank `r`, the transfers of its rank it
/// waits for that no compute op before it waited for (a backward that needs a receive the
/// forward before it already waited for adds nothing).
wait_sets weft_waits(const schedule& s, const semantics& g, int r) {
  wait_sets out;
  std::set<std::uint32_t> before;
  if (s.slots(r) == 0) return out;
  const std::uint32_t b = s.first_op(s.first_slot(r)), e = s.slot_end[s.end_slot(r) - 1];
  for (std::uint32_t i = b; i < e; ++i) {
    if (is_p2p(s.ops[i].k)) continue;
    std::set<std::string> waited;
    g.each_wait(i, [&](std::uint32_t y, bool) {
      if (y >= b && y < e && is_p2p(s.ops[y].k) && before.insert(y).second)
        waited.insert(reference_name(s.ops[y]));
    });
    out.push_back(waited);
  }
  return out;
}

}  // namespace

namespace {
/// One schedule of tests/data/megatron/transfer_orders_derived.txt: its variant, its options
/// and shape, and each rank's line.
struct reference_block {
  std::string variant;
  p2p_options p2p;
  int P = 0, V = 0, M = 0;
  std::vector<std::string> lines;
  /// Megatron refuses it (more than 2 ranks with chunks), and so does weft: a batched call's two
  /// transfers to the one peer would cross.
  bool refused() const { return variant == "megatron_interleaved_blocking" && P == 2 && V > 1; }
  schedule make() const {
    return variant == "megatron_1f1b"
               ? one_f_one_b({.ranks = P, .micro = M, .p2p = p2p})
               : interleaved({.ranks = P, .micro = M, .chunks = V, .p2p = p2p});
  }
};
std::vector<reference_block> reference_blocks() {
  std::ifstream file(std::string(WEFT_TEST_DATA) + "/megatron/transfer_orders_derived.txt");
  REQUIRE(file);
  std::vector<reference_block> out;
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("== ", 0) != 0) continue;
    std::istringstream head(line.substr(3));
    std::string p, v, m;
    reference_block b;
    head >> b.variant >> p >> v >> m;
    b.P = std::stoi(p.substr(2));
    b.V = std::stoi(v.substr(2));
    b.M = std::stoi(m.substr(2));
    if (b.variant == "megatron_interleaved_overlap")
      b.p2p = {.megatron = true};
    else if (b.variant.rfind("mindspeed", 0) == 0)
      b.p2p = {.overlap_p2p = true,
               .multi_stream = b.variant.find("multistream") != std::string::npos};
    else  // megatron_1f1b, megatron_interleaved_blocking: batched calls
      b.p2p = {.blocking = true};
    for (int r = 0; r < b.P; ++r) {
      REQUIRE(std::getline(file, line));
      b.lines.push_back(line);
    }
    out.push_back(b);
  }
  return out;
}
}  // namespace

TEST_CASE("the waits: Megatron's on its calls, MindSpeed's on its receives") {
  // Megatron-LM core_r0.7.0, forward_backward_pipelining_with_interleaving (overlap_p2p_comm):
  // before a forward it waits on fwd_wait_handles (the last send_forward_recv_forward's, its
  // send included), before a backward on bwd_wait_handles; the cool-down's and the first
  // receive's calls wait before returning. Without overlap_p2p_comm every call waits before
  // returning. MindSpeed's early receives wait on the receive a step needs, never on a send.
  // Every step's waits in the transcription, rank by rank, against weft's semantics.
  int blocks = 0;
  for (const reference_block& b : reference_blocks()) {
    if (b.refused()) continue;
    CAPTURE(b.variant);
    CAPTURE(b.P);
    CAPTURE(b.V);
    CAPTURE(b.M);
    const schedule s = b.make();
    const program prog = lower(s);
    const semantics g(prog);
    for (int r = 0; r < b.P; ++r) {
      CAPTURE(r);
      CHECK(weft_waits(s, g, r) == reference_waits(b.lines[static_cast<std::size_t>(r)]));
    }
    ++blocks;
  }
  CHECK(blocks == 50);
}

TEST_CASE("Megatron's and MindSpeed's transfers in the order their code issues them") {
  // tests/data/megatron/transfer_orders_derived.txt: a transcription of the control flow of
  // Megatron-LM core_r0.7.0's 1F1B and interleaved schedules (with and without
  // overlap_p2p_comm) and MindSpeed core_r0.7.0's early-receive schedule, with and without
  // --use-multi-stream, made without weft's code (data/megatron/README.md). Every rank's
  // compute, sends and receives in issue order; for Megatron's batched calls which transfers
  // form one call; for MindSpeed the process group each transfer uses. At pp 2 and 4, VP 1, 2
  // and 3, micro-batches equal to pp and twice it (1F1B: also pp + 1).
  int blocks = 0, refused = 0;
  for (const reference_block& b : reference_blocks()) {
    CAPTURE(b.variant);
    CAPTURE(b.P);
    CAPTURE(b.V);
    CAPTURE(b.M);
    if (b.refused()) {
      CHECK_THROWS_AS(b.make(), config_error);
      ++refused;
      continue;
    }
    const bool groups = b.p2p.overlap_p2p, calls = b.p2p.blocking;
    const schedule s = b.make();
    CHECK(check(s).ok());
    for (int r = 0; r < b.P; ++r) {
      CAPTURE(r);
      const std::string& line = b.lines[static_cast<std::size_t>(r)];
      CHECK(issue_order(s, r, groups, calls) == reference_order(line, groups, calls));
    }
    ++blocks;
  }
  CHECK(blocks == 36 + 6 + 8);
  CHECK(refused == 4);
}
