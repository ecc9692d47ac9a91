// Every rule, a legal case and a violating case, checked at run time with the exact report.
#include <doctest/doctest.h>

#include <algorithm>

#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/io/format.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/verify.hpp>

using namespace weft;

namespace {
constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
const assumptions fwd0 = assuming(done(F, mb{0}));

violation first(const schedule& s) {
  const report r = check(s);
  REQUIRE_FALSE(r.ok());
  return r.violations.front();
}
violation first(const schedule& s, const assumptions& a) {
  const report r = check(s, {.fragment = true, .assumed = a});
  REQUIRE_FALSE(r.ok());
  return r.violations.front();
}
}  // namespace

TEST_CASE("legal: the DeepSeek pairing, assuming the forward of micro-batch 0 ran") {
  CHECK(check(layer_fb, {.fragment = true, .assumed = fwd0}).ok());
  CHECK(verify(layer_fb, fwd0));
  // A backward-only assumption covers dX/dW too; other assumptions do not cover it.
  CHECK(done(B, mb{0}).covers(mlp(dW, mb{0})));
  CHECK_FALSE(done(F, mb{0}).covers(mlp(B, mb{0})));
  CHECK_FALSE(done(attn, F, mb{0}).covers(mlp(F, mb{0})));
}

TEST_CASE("rule 1: outside the model, wrong rank, duplicate, missing, mixed backward") {
  {
    const violation v = first(with_model(slots(block(F, mb{0}), block(B, mb{0}), block(F, mb{1})),
                                         model_desc{.micro = 1}));
    CHECK(v.code == rule::complete);
    CHECK(v.what == fault::outside_model);
    CHECK(v.subject == op(block(F, mb{1})));
    CHECK(static_cast<outside>(v.value) == outside::micro_batch);
    CHECK(v.slot == 2);
  }
  {
    const schedule s = with_model(ranks(slots(block(F, mb{0}), block(F, mb{0}, chunk{1})),
                                        slots(block(B, mb{0}, chunk{1}), block(B, mb{0}))),
                                  model_desc{.ranks = 2});
    const violation v = first(s);
    CHECK(v.what == fault::wrong_rank);
    CHECK(v.subject == op(block(F, mb{0}, chunk{1})));
    CHECK(v.rank == 0);
    CHECK(v.other_rank == 1);
  }
  {
    const violation v = first(slots(block(F, mb{0}), block(F, mb{0}), block(B, mb{0})));
    CHECK(v.what == fault::duplicate);
    CHECK(v.slot == 1);
    CHECK(v.other_slot == 0);
  }
  {
    const violation v = first(with_model(slots(block(F, mb{0}), block(B, mb{0}), block(F, mb{1})),
                                         model_desc{.micro = 2}));
    CHECK(v.what == fault::missing);
    CHECK(v.subject == op(block(B, mb{1})));
    CHECK(v.rank == 0);
  }
  {
    const violation v = first(slots(block(F, mb{0}), block(dX, mb{0})));
    CHECK(v.what == fault::missing);
    CHECK(v.subject == op(block(dW, mb{0})));
  }
  {
    const violation v = first(slots(block(F, mb{0}), block(B, mb{0}), block(dW, mb{0})));
    CHECK(v.what == fault::mixed_backward);
    CHECK(v.other == op(block(dW, mb{0})));
  }
  CHECK(verify(slots(block(F, mb{0}), block(dX, mb{0}), block(dW, mb{0}))));
}

TEST_CASE("rule 1: transfers are required once the schedule carries any") {
  const model_desc m{.ranks = 2};
  const schedule ok = with_model(
      ranks(slots(block(F, mb{0}), send(F, mb{0}), recv(B, mb{0}, lane{1}), block(B, mb{0})),
            slots(recv(F, mb{0}, chunk{1}, lane{1}), block(F, mb{0}, chunk{1}),
                  block(B, mb{0}, chunk{1}), send(B, mb{0}, chunk{1}))),
      m);
  CHECK(check(ok).ok());
  const schedule no_grad_send = with_model(
      ranks(slots(block(F, mb{0}), send(F, mb{0}), recv(B, mb{0}, lane{1}), block(B, mb{0})),
            slots(recv(F, mb{0}, chunk{1}, lane{1}), block(F, mb{0}, chunk{1}),
                  block(B, mb{0}, chunk{1}))),
      m);
  const violation v = first(no_grad_send);
  CHECK(v.what == fault::missing);
  CHECK(v.subject == op(send(B, mb{0}, chunk{1})));
  CHECK(v.rank == 1);
}

TEST_CASE("rule 2: a producer in a later slot; a fragment's unassumed input") {
  const schedule swapped =
      slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(F, mb{1}) | dispatch(B, mb{0}),
            mlp(B, mb{0}) | dispatch(F, mb{1}), attn(B, mb{0}) | combine(F, mb{1}));
  const violation v = first(swapped, fwd0);
  CHECK(v.code == rule::order);
  CHECK(v.what == fault::runs_before_producer);
  CHECK(v.subject == op(mlp(F, mb{1})));
  CHECK(v.slot == 1);
  CHECK(v.other == op(dispatch(F, mb{1})));
  CHECK(v.other_slot == 2);
  CHECK(to_string(v) ==
        "weft: rule 2 (order): mlp/F mb=1 on rank 0, slot 1 runs before dispatch/F mb=1 (rank 0, "
        "slot 2) it needs");

  const violation u = first(layer_fb, assuming(done(attn, F, mb{0})));
  CHECK(u.what == fault::producer_missing);
  CHECK(u.subject == op(combine(B, mb{0})));
}

TEST_CASE("rule 3: one stream per slot, no dependency inside a slot") {
  const violation v =
      first(slots(block(F, mb{0}) | block(F, mb{1}), block(B, mb{0}), block(B, mb{1})));
  CHECK(v.code == rule::slot);
  CHECK(v.what == fault::same_stream);
  CHECK(v.subject == op(block(F, mb{1})));
  CHECK(v.other == op(block(F, mb{0})));
  // Two comm lanes are two streams.
  CHECK(verify(
      with_model(slots(block(F, mb{0}), block(F, mb{1}),
                       block(B, mb{0}) | all_reduce(F, mb{0}) | all_gather(F, mb{0}, lane{1}),
                       block(B, mb{1})),
                 model_desc{.micro = 2})));
  const violation d =
      first(slots(attn(F, mb{0}) | dispatch(F, mb{0}), mlp(F, mb{0}), combine(F, mb{0}),
                  combine(B, mb{0}), mlp(B, mb{0}), dispatch(B, mb{0}), attn(B, mb{0})));
  CHECK(d.what == fault::dependent_in_slot);
  CHECK(d.subject == op(dispatch(F, mb{0})));
  CHECK(d.other == op(attn(F, mb{0})));
}

namespace {
// 1F1B on two ranks with explicit transfers; `rx` is the lane receives use.
schedule two_rank_1f1b(int rx) {
  return with_model(ranks(slots(block(F, mb{0}), send(F, mb{0}), block(F, mb{1}), send(F, mb{1}),
                                recv(B, mb{0}, lane{rx}), block(B, mb{0}), recv(B, mb{1}, lane{rx}),
                                block(B, mb{1})),
                          slots(recv(F, mb{0}, chunk{1}, lane{rx}), block(F, mb{0}, chunk{1}),
                                block(B, mb{0}, chunk{1}), send(B, mb{0}, chunk{1}),
                                recv(F, mb{1}, chunk{1}, lane{rx}), block(F, mb{1}, chunk{1}),
                                block(B, mb{1}, chunk{1}), send(B, mb{1}, chunk{1}))),
                    model_desc{.ranks = 2, .micro = 2});
}
}  // namespace

TEST_CASE("rule 4: one comm stream deadlocks 1F1B; two streams do not") {
  const report r = check(two_rank_1f1b(0));
  REQUIRE_FALSE(r.ok());
  CHECK(r.violations.front().code == rule::deadlock);
  CHECK(r.violations.front().what == fault::cycle);
  REQUIRE(r.blocked.size() == 2);  // every stuck rank, with the op it waits at
  CHECK(r.blocked[0].subject == op(send(F, mb{1})));
  CHECK(r.blocked[0].rank == 0);
  CHECK(r.blocked[1].subject == op(send(B, mb{0}, chunk{1})));
  CHECK(r.blocked[1].rank == 1);
  CHECK(check(two_rank_1f1b(1)).ok());
  CHECK(verify(two_rank_1f1b(1)));  // slot-by-slot execution would deadlock here: streams do not
}

TEST_CASE("rule 4: implicit transfers deadlock when ranks wait on each other's later work") {
  const auto rank0 = slots(block(F, mb{0}), block(B, mb{0}), block(F, mb{1}), block(B, mb{1}));
  const model_desc m{.ranks = 2, .micro = 2};
  CHECK(check(with_model(ranks(rank0, slots(block(F, mb{0}, chunk{1}), block(B, mb{0}, chunk{1}),
                                            block(F, mb{1}, chunk{1}), block(B, mb{1}, chunk{1}))),
                         m))
            .ok());
  // Rank 1 wants forward 1 first, which rank 0 sends only after gradient 0 came back from rank 1.
  const report r =
      check(with_model(ranks(rank0, slots(block(F, mb{1}, chunk{1}), block(F, mb{0}, chunk{1}),
                                          block(B, mb{0}, chunk{1}), block(B, mb{1}, chunk{1}))),
                       m));
  REQUIRE_FALSE(r.ok());
  CHECK(r.violations.front().what == fault::cycle);
  CHECK(r.violations.front().subject == op(block(B, mb{0})));
  CHECK(r.violations.front().other == op(block(B, mb{0}, chunk{1})));
  REQUIRE(r.blocked.size() == 2);
  CHECK(r.blocked[1].subject == op(block(F, mb{1}, chunk{1})));
}

TEST_CASE("rule 4: a schedule lowering cannot place transfers for is not legal") {
  // Found by fuzz_generator_slots: the interleaved schedule on 3 ranks (3 chunks each, MoE
  // sub-stages, 2 layers a chunk), rank 0's forward of micro-batch 5 on chunk 3 moved 57 places
  // earlier. Its streams alone run — rank 0's all-to-all stream runs ahead of its compute stream
  // — but lowering places transfers as PyTorch does, issuing each rank's slots in order, a slot
  // once its receives are posted, and there every rank waits for the next: the checker called it
  // legal and `lower` then refused it.
  interleaved_params p =
      gen::with_chunks({.ranks = 3, .micro = 8, .layers = 2, .stages = stage_set::moe()}, 3);
  schedule s = interleaved(p);
  REQUIRE(check(s).ok());
  REQUIRE(to_string(s.ops[176]) == "attn/F mb=5 chunk=3");
  std::rotate(s.ops.begin() + 119, s.ops.begin() + 176, s.ops.begin() + 177);
  const report r = check(s);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations.front().code == rule::deadlock);
  // The moved op (one op a slot: position 119 is slot 119) waits for chunk 2's output, on rank 2.
  const std::string said = to_string(r.violations.front());
  CHECK(
      said.starts_with("weft: rule 4 (deadlock freedom): attn/F mb=5 chunk=3 on rank 0, slot 119 "
                       "can never be issued: its input from rank 2 is never sent, that rank "
                       "waiting at "));
  CHECK(r.violations.front().other_rank == 2);
  CHECK_THROWS_AS(lower(s), config_error);
  CHECK_THROWS_AS(with_transfers(s), config_error);
}

TEST_CASE("rule 4: FIFO matching per channel") {
  const model_desc m{.ranks = 2, .micro = 2, .backward = false};
  const auto r1 = slots(recv(F, mb{0}, chunk{1}), recv(F, mb{1}, chunk{1}, lane{1}),
                        block(F, mb{0}, chunk{1}), block(F, mb{1}, chunk{1}));
  CHECK(verify(with_model(
      ranks(slots(block(F, mb{0}), block(F, mb{1}), send(F, mb{0}), send(F, mb{1})), r1), m)));
  const violation v = first(with_model(
      ranks(slots(block(F, mb{0}), block(F, mb{1}), send(F, mb{1}), send(F, mb{0})), r1), m));
  CHECK(v.what == fault::mismatched_transfer);
  CHECK(v.subject == op(send(F, mb{1})));
  CHECK(v.other == op(recv(F, mb{0}, chunk{1})));
  // In a fragment, a send without its receive is unmatched.
  const report frag = check(
      with_model(ranks(slots(block(F, mb{0}), send(F, mb{0})), slots(block(F, mb{1}, chunk{1}))),
                 model_desc{.ranks = 2, .micro = 2, .backward = false}),
      {.fragment = true, .assumed = assuming(done(F, mb{1}))});
  REQUIRE_FALSE(frag.ok());
  CHECK(frag.violations.front().what == fault::unmatched_send);
}

TEST_CASE("rule 5: live activations under a bound") {
  const schedule gpipe = slots(block(F, mb{0}), block(F, mb{1}), block(F, mb{2}), block(B, mb{0}),
                               block(B, mb{1}), block(B, mb{2}));
  CHECK(peak_live_activations(gpipe) == buffer<int>{3});
  CHECK(verify(with_model(gpipe, model_desc{.micro = 3, .max_live = 3})));
  const violation v = first(with_model(gpipe, model_desc{.micro = 3, .max_live = 2}));
  CHECK(v.code == rule::memory);
  CHECK(v.subject == op(block(F, mb{2})));
  CHECK(v.value == 3);
  CHECK(v.bound == 2);
  // Split backward frees the activation with the last of dX and dW.
  const schedule zb = slots(block(F, mb{0}), block(dX, mb{0}), block(F, mb{1}), block(dW, mb{0}),
                            block(dX, mb{1}), block(dW, mb{1}));
  CHECK(peak_live_activations(zb) == buffer<int>{2});
}

TEST_CASE("rule 6: impossible model descriptions") {
  const violation v = first(with_model(slots(block(F, mb{0})), model_desc{.ranks = 0}));
  CHECK(v.code == rule::config);
  CHECK(static_cast<model_error>(v.value) == model_error::bad_ranks);
  CHECK(validate(model_desc{.stages = stage_set{}.with(kind::send)}) ==
        model_error::stages_not_layer_kinds);
  CHECK(validate(model_desc{.stages = stage_set{}.with(kind::attn).with(kind::dispatch)}) ==
        model_error::stages_comm_without_mlp);
  CHECK(validate(model_desc{.stages = stage_set{}.with(kind::block).with(kind::attn)}) ==
        model_error::stages_block_and_substages);
  CHECK(validate(model_desc{.chunks_per_rank = 2, .bidirectional = true, .micro = 3}) ==
        model_error::bidirectional_needs_even);
}

TEST_CASE("rule 6: a schedule whose slots do not hold its ops is refused, not read") {
  schedule open_slot(model_desc{});
  open_slot.add_rank().push(block(F, mb{0})).close_slot().push(block(B, mb{0}));  // not closed
  CHECK_FALSE(open_slot.well_formed());
  const report r = check(open_slot);
  REQUIRE_FALSE(r.ok());
  CHECK(r.violations[0].code == rule::config);
  CHECK(static_cast<model_error>(r.violations[0].value) == model_error::slots_malformed);
  CHECK_THROWS_WITH_AS(lower_unchecked(open_slot), doctest::Contains("closed slot"), config_error);
  schedule no_rank(model_desc{});
  no_rank.ops.push_back(block(F, mb{0}));
  no_rank.slot_end.push_back(1);
  CHECK_FALSE(no_rank.well_formed());
  CHECK(static_cast<model_error>(check(no_rank).violations[0].value) ==
        model_error::slots_malformed);
  // A lane past the last is not lowered either (its stream would be another rank's).
  schedule lane_past(model_desc{});
  lane_past.add_rank().add_slot(block(F, mb{0}, lane{lanes_per_class})).add_slot(block(B, mb{0}));
  CHECK(lane_past.well_formed());
  CHECK_THROWS_AS(lower_unchecked(lane_past), config_error);
}

TEST_CASE("rule 6: the id space of a model is capped, computed in 64 bits") {
  // 255 chunks x 65535 micro-batches x 65535 layers overflows 32 bits many times over.
  const model_desc huge{.ranks = 255, .micro = 65535, .layers = 65535};
  CHECK(id_space(huge, false) == 65535ull * 255 * 65535 * 4 + 65535ull * 255 * 4);
  CHECK(validate(huge) == model_error::too_many_ops);
  // 64 ranks, 4096 micro-batches, 64 MoE layers: 268M ids, refused before anything is built.
  const model_desc moe{.ranks = 64, .micro = 4096, .layers = 64, .stages = stage_set::moe()};
  CHECK(validate(moe) == model_error::too_many_ops);
  CHECK_THROWS_WITH_AS(
      one_f_one_b({.ranks = 64, .micro = 4096, .layers = 64, .stages = stage_set::moe()}),
      doctest::Contains("more than 2^26 op ids"), config_error);
  // Just under the cap is fine.
  CHECK(validate(model_desc{.ranks = 16, .micro = 4096, .layers = 16}) == model_error::none);
}

TEST_CASE("the report collects every violation up to a limit") {
  const schedule s =
      with_model(slots(block(F, mb{0}) | block(F, mb{1}), block(F, mb{0}), block(F, mb{2})),
                 model_desc{.micro = 2, .backward = false});
  const report all = check(s);
  CHECK(all.violations.size() == 3);  // mb 2 outside, mb 0 duplicate, mb 0 and 1 on one stream
  CHECK(check(s, {.max_violations = 1}).violations.size() == 1);
}

TEST_CASE("a fragment proven as a whole step: the violation says it looks like one") {
  // One layer's sub-stages of micro-batch 1's forward beside micro-batch 0's backward, without
  // micro-batch 0's forward: whole, ops are missing, and the backward of micro-batch 0 needs
  // forwards that are neither there nor assumed.
  const auto layer_fb =
      slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
            mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
  const violation v = diagnose(layer_fb);
  CHECK(v.what == fault::missing);
  CHECK(v.value == 1);
  // The named op is one the scheduled `other` needs, and it is missing from the schedule.
  bool present = false;
  for (const op& o : layer_fb.ops) present = present || o == v.subject;
  CHECK_FALSE(present);
  CHECK(v.other.mb == 0);
  CHECK(to_string(v).find("it looks like part of a step") != std::string::npos);
  // Assumed done, the fragment is legal; a whole schedule missing an op nothing needs gets no
  // hint.
  CHECK(verify(layer_fb, assuming(done(F, mb{0}))));
  const violation whole = diagnose(
      with_model(slots(block(F, mb{0}), block(F, mb{1}), block(B, mb{0})), model_desc{.micro = 2}));
  CHECK(whole.what == fault::missing);
  CHECK(whole.value == 0);
  CHECK(to_string(whole).find("looks like") == std::string::npos);
}
