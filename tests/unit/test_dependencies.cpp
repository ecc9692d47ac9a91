#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <weft/generators/stage_ops.hpp>
#include <weft/io/format.hpp>
#include <weft/schedule/dependencies.hpp>

using namespace weft;

namespace {
// The producers of `o`, with backward producers in fused (B) or split (dX) form.
std::vector<op> producers(const model_desc& m, const op& o, bool fused = true,
                          bool explicit_p2p = false) {
  const op_index ix(m, true);
  const dependency_rules rules(ix, explicit_p2p);
  std::vector<op> out;
  rules.producers(
      o,
      [&](std::uint32_t id) {  // a schedule that fuses, or splits, every backward it can
        return fused ? id % phase_count == 1u
                     : id % phase_count == 2u && has_weights(ix.op_of(id).k);
      },
      [&](std::uint32_t id, int chunk) {
        const op p = ix.op_of(id);
        CHECK(p.chunk == chunk);
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
      });
  return out;
}
bool same(std::vector<op> a, std::vector<op> b) {
  if (a.size() != b.size()) return false;
  for (const op& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) return false;
  return true;
}
const model_desc moe2{.ranks = 2, .micro = 2, .layers = 2, .stages = stage_set::moe()};
}  // namespace

TEST_CASE("forward chain inside a layer and across layers") {
  CHECK(same(producers(moe2, mlp(F, mb{1})), {dispatch(F, mb{1})}));
  CHECK(same(producers(moe2, dispatch(F, mb{1}, layer{1})), {attn(F, mb{1}, layer{1})}));
  CHECK(same(producers(moe2, combine(F, mb{0})), {mlp(F, mb{0})}));
  CHECK(same(producers(moe2, attn(F, mb{0}, layer{1})), {combine(F, mb{0})}));
  CHECK(producers(moe2, attn(F, mb{0})).empty());  // the first op of the pipeline
}

TEST_CASE("forward across chunks: the previous chunk's output, or the local receive") {
  CHECK(same(producers(moe2, attn(F, mb{1}, chunk{1})), {combine(F, mb{1}, layer{1})}));
  CHECK(same(producers(moe2, attn(F, mb{1}, chunk{1}), true, true), {recv(F, mb{1}, chunk{1})}));
  CHECK(same(producers(moe2, send(F, mb{1})), {combine(F, mb{1}, layer{1})}));
  CHECK(producers(moe2, recv(F, mb{1}, chunk{1}), true, true).empty());
}

TEST_CASE("backward mirrors forward and needs its own forward") {
  // The last layer of the last chunk starts from the loss: its own forward output.
  CHECK(same(producers(moe2, combine(B, mb{0}, chunk{1}, layer{1})),
             {combine(F, mb{0}, chunk{1}, layer{1})}));
  CHECK(same(producers(moe2, mlp(B, mb{0})), {mlp(F, mb{0}), combine(B, mb{0})}));
  CHECK(same(producers(moe2, dispatch(B, mb{0})), {dispatch(F, mb{0}), mlp(B, mb{0})}));
  CHECK(same(producers(moe2, attn(B, mb{0})), {attn(F, mb{0}), dispatch(B, mb{0})}));
  CHECK(same(producers(moe2, combine(B, mb{0})), {combine(F, mb{0}), attn(B, mb{0}, layer{1})}));
  // Across chunks: the next chunk's input gradient, or the local receive.
  CHECK(same(producers(moe2, combine(B, mb{0}, layer{1})),
             {combine(F, mb{0}, layer{1}), attn(B, mb{0}, chunk{1})}));
  CHECK(same(producers(moe2, combine(B, mb{0}, layer{1}), true, true),
             {combine(F, mb{0}, layer{1}), recv(B, mb{0})}));
  CHECK(same(producers(moe2, send(B, mb{0}, chunk{1})), {attn(B, mb{0}, chunk{1})}));
}

TEST_CASE("split backward: dX carries the gradient, dW follows its dX") {
  CHECK(same(producers(moe2, mlp(dX, mb{0}), false), {mlp(F, mb{0}), combine(B, mb{0})}));
  CHECK(same(producers(moe2, attn(dX, mb{0}), false), {attn(F, mb{0}), dispatch(B, mb{0})}));
  CHECK(same(producers(moe2, dispatch(B, mb{0}), false), {dispatch(F, mb{0}), mlp(dX, mb{0})}));
  CHECK(same(producers(moe2, mlp(dW, mb{0}), false), {mlp(dX, mb{0})}));
}

TEST_CASE("the shared expert runs beside the routed path") {
  const model_desc m{.micro = 1, .layers = 2, .stages = stage_set::moe_with_shared()};
  CHECK(same(producers(m, shared_expert(F, mb{0})), {attn(F, mb{0})}));
  CHECK(same(producers(m, attn(F, mb{0}, layer{1})), {combine(F, mb{0}), shared_expert(F, mb{0})}));
  CHECK(same(producers(m, attn(B, mb{0})),
             {attn(F, mb{0}), dispatch(B, mb{0}), shared_expert(B, mb{0})}));
  CHECK(same(producers(m, shared_expert(B, mb{0})),
             {shared_expert(F, mb{0}), attn(B, mb{0}, layer{1})}));
}

TEST_CASE("sequence splits join at layer boundaries") {
  const model_desc m{.micro = 1, .layers = 2, .stages = stage_set::dense(), .splits = 2};
  CHECK(same(producers(m, mlp(F, mb{0}, split{1})), {attn(F, mb{0}, split{1})}));
  CHECK(same(producers(m, attn(F, mb{0}, layer{1}, split{0})),
             {mlp(F, mb{0}, split{0}), mlp(F, mb{0}, split{1})}));
  CHECK(same(producers(m, mlp(B, mb{0}, split{1})),
             {mlp(F, mb{0}, split{1}), attn(B, mb{0}, layer{1}, split{0}),
              attn(B, mb{0}, layer{1}, split{1})}));
}

TEST_CASE("V placement: chunks r and 2P-1-r on rank r, no transfer at the turn") {
  const model_desc m{.ranks = 2, .chunks_per_rank = 2, .place = placement::vee, .micro = 2};
  CHECK(m.rank_of(0) == 0);
  CHECK(m.rank_of(1) == 1);
  CHECK(m.rank_of(2) == 1);
  CHECK(m.rank_of(3) == 0);
  const op_index ix(m, false);
  CHECK(ix.transfer_peer(send(F, mb{0}, chunk{1})) == -1);  // chunk 2 is on the same rank
  CHECK(ix.transfer_peer(send(F, mb{0}, chunk{2})) == 3);
  CHECK(same(producers(m, block(F, mb{0}, chunk{2}), true, true), {block(F, mb{0}, chunk{1})}));
  CHECK(same(producers(m, block(F, mb{0}, chunk{3}), true, true), {recv(F, mb{0}, chunk{3})}));
}

TEST_CASE("bidirectional: each half of the micro-batches has its own path") {
  const model_desc m{
      .ranks = 2, .chunks_per_rank = 2, .place = placement::vee, .bidirectional = true, .micro = 4};
  CHECK(m.first_chunk(0) == 0);
  CHECK(m.end_chunk(1) == 2);
  CHECK(m.first_chunk(2) == 2);
  CHECK(producers(m, block(F, mb{2}, chunk{2})).empty());  // the start of the second direction
  CHECK(same(producers(m, block(F, mb{2}, chunk{3})), {block(F, mb{2}, chunk{2})}));
  const op_index ix(m, false);
  CHECK(ix.why_outside(block(F, mb{0}, chunk{2})) == outside::off_path);
  // The last chunk of direction 0 starts the backward from the loss.
  CHECK(same(producers(m, block(B, mb{0}, chunk{1})), {block(F, mb{0}, chunk{1})}));
}

TEST_CASE("a gradient all-reduce follows every weight gradient of its chunk") {
  const model_desc m{.micro = 2, .stages = stage_set::dense()};
  CHECK(same(producers(m, all_reduce(dW, mb{0}), false),
             {attn(dW, mb{0}), mlp(dW, mb{0}), attn(dW, mb{1}), mlp(dW, mb{1})}));
  CHECK(same(producers(m, all_reduce(dW, mb{0}), true),
             {attn(B, mb{0}), mlp(B, mb{0}), attn(B, mb{1}), mlp(B, mb{1})}));
  CHECK(producers(m, all_gather(F, mb{0})).empty());
}

TEST_CASE("dense ids round-trip and reject ops outside the model") {
  const model_desc m{.ranks = 2,
                     .chunks_per_rank = 2,
                     .micro = 3,
                     .layers = 2,
                     .stages = stage_set::moe_with_shared(),
                     .splits = 2};
  const op_index ix(m, true);
  int n = 0;
  for (int mbv = 0; mbv < m.micro; ++mbv)
    for (int c = 0; c < m.chunks(); ++c)
      for (int l = 0; l < m.layers; ++l)
        for (int sp = 0; sp < m.splits; ++sp)
          for (int k = 0; k < kind_count; ++k)
            for (int ph = 0; ph < phase_count; ++ph) {
              const op o = make_op(static_cast<kind>(k), static_cast<phase>(ph), mbv, c, l, sp);
              const std::uint32_t id = ix.id(o);
              if (id == weft::npos) continue;
              ++n;
              REQUIRE(id < ix.size);
              CHECK_MESSAGE(ix.op_of(id) == o, to_string(o));
            }
  CHECK(n > 0);
  CHECK(ix.why_outside(attn(F, mb{3})) == outside::micro_batch);
  CHECK(ix.why_outside(attn(F, mb{0}, chunk{4})) == outside::chunk);
  CHECK(ix.why_outside(attn(F, mb{0}, layer{2})) == outside::layer);
  CHECK(ix.why_outside(attn(F, mb{0}, split{2})) == outside::split);
  CHECK(ix.why_outside(block(F, mb{0})) == outside::kind);
  CHECK(ix.why_outside(dispatch(dX, mb{0})) == outside::phase);
  CHECK(ix.why_outside(send(F, mb{0}, chunk{3})) == outside::no_transfer);  // the last chunk
  CHECK(ix.why_outside(send(F, mb{0}, layer{1})) == outside::p2p_fields);
}

TEST_CASE(
    "pipe-experts pieces: piece j of split s follows split s's attention, which gathers them") {
  // Two splits of three pieces: parts 0-2 belong to split 0, parts 3-5 to split 1.
  const model_desc m{.ranks = 1,
                     .micro = 1,
                     .layers = 2,
                     .stages = stage_set::moe_with_shared(),
                     .splits = 2,
                     .pieces = 3};
  CHECK(same(producers(m, dispatch(F, split{4})), {attn(F, split{1})}));
  CHECK(same(producers(m, mlp(F, split{4})), {dispatch(F, split{4})}));
  CHECK(same(producers(m, combine(F, split{5})), {mlp(F, split{5})}));
  CHECK(same(producers(m, shared_expert(F, split{1})), {attn(F, split{1})}));
  // The next layer reads every piece's combine and every split's shared expert.
  CHECK(same(producers(m, attn(F, layer{1})),
             {combine(F, split{0}), combine(F, split{1}), combine(F, split{2}),
              combine(F, split{3}), combine(F, split{4}), combine(F, split{5}),
              shared_expert(F, split{0}), shared_expert(F, split{1})}));
  CHECK(same(producers(m, attn(B, split{1})),
             {attn(F, split{1}), dispatch(B, split{3}), dispatch(B, split{4}),
              dispatch(B, split{5}), shared_expert(B, split{1})}));
  CHECK(same(producers(m, mlp(B, split{2}, layer{1})),
             {mlp(F, split{2}, layer{1}), combine(B, split{2}, layer{1})}));
  // Pieces cut the routed path only: attention has splits, not parts.
  const op_index ix(m, true);
  CHECK(ix.why_outside(attn(F, split{2})) == outside::split);
  CHECK(ix.why_outside(mlp(F, split{5})) == outside::none);
  CHECK(ix.why_outside(mlp(F, split{6})) == outside::split);
  for (const op& o : {dispatch(B, split{5}, layer{1}).value, attn(dW, split{1}).value})
    CHECK(ix.op_of(ix.id(o)) == o);
  CHECK(validate({.stages = stage_set::dense(), .pieces = 2}) == model_error::pieces_need_experts);
  CHECK(validate({.stages = stage_set::whole_block(), .splits = 2}) ==
        model_error::splits_need_substages);
  CHECK(validate({.stages = stage_set::dense(), .splits = 2}) == model_error::none);
  CHECK(validate({.stages = stage_set::moe(), .splits = 16, .pieces = 16}) ==
        model_error::bad_pieces);
}

TEST_CASE("the kind table: every kind's facts in one row, in the enum's order") {
  for (int i = 0; i < kind_count; ++i) {
    const auto k = static_cast<kind>(i);
    CAPTURE(name_of(k));
    CHECK(traits_of(k).value == k);
    // What the rules rely on: weights only on compute kinds; a layer stage's input is a layer
    // stage; transfers and collectives are their own input (no in-layer chain).
    CHECK(has_weights(k) == (stream_of(k) == stream_class::compute));
    CHECK(is_layer_stage(traits_of(k).input) == is_layer_stage(k));
    if (!is_layer_stage(k)) CHECK(traits_of(k).input == k);
  }
  CHECK(name_of(kind::reduce_scatter) == "reduce_scatter");
  CHECK(stream_of(kind::dispatch) == stream_class::comm);
  CHECK(model_desc::in_pieces(kind::mlp));
  CHECK_FALSE(model_desc::in_pieces(kind::shared));
}

TEST_CASE("a layer's ends derive from the kinds' inputs") {
  const auto ends = [](stage_set st) {
    const layer_ends e(st);
    std::vector<kind> out(e.outputs, e.outputs + e.output_count);
    return std::pair{e.entry, out};
  };
  using v = std::vector<kind>;
  CHECK(ends(stage_set::whole_block()) == std::pair{kind::block, v{kind::block}});
  CHECK(ends(stage_set{}.with(kind::attn)) == std::pair{kind::attn, v{kind::attn}});
  CHECK(ends(stage_set::dense()) == std::pair{kind::attn, v{kind::mlp}});
  CHECK(ends(stage_set::moe()) == std::pair{kind::attn, v{kind::combine}});
  CHECK(ends(stage_set::moe_with_shared()) ==
        std::pair{kind::attn, v{kind::combine, kind::shared}});
  // A shared expert runs beside the main path: with no routed experts, attention's output still
  // leaves the layer, beside the shared expert's.
  const stage_set attn_shared = stage_set{}.with(kind::attn).with(kind::shared);
  CHECK(ends(attn_shared) == std::pair{kind::attn, v{kind::attn, kind::shared}});
  const model_desc m{.micro = 1, .layers = 2, .stages = attn_shared};
  CHECK(same(producers(m, attn(F, layer{1})), {attn(F), shared_expert(F)}));
  CHECK(same(producers(m, attn(B)), {attn(F), shared_expert(B), attn(B, layer{1})}));
  // A dense layer's mlp reads attention: the table's dispatch is not there.
  CHECK(layer_input_of(kind::mlp, stage_set::dense()) == kind::attn);
  CHECK(layer_input_of(kind::mlp, stage_set::moe()) == kind::dispatch);
  CHECK(consumes(kind::shared, kind::attn, stage_set::moe_with_shared()));
  CHECK_FALSE(consumes(kind::attn, kind::attn, stage_set::moe()));
}

TEST_CASE("the generators' in-layer chain is the dependency rules' (one source)") {
  // Every pair of ops of one layer: `gen::needs_in_layer`, which orders AMPipe's and
  // pipe-experts' streams, says `a` needs `b` exactly when the rules list `b` among `a`'s
  // producers (through the layer's own ops, as the chain sees them).
  for (const int pieces : {1, 2}) {
    const model_desc m{.ranks = 1,
                       .micro = 1,
                       .layers = 1,
                       .stages = stage_set::moe_with_shared(),
                       .splits = 2,
                       .pieces = pieces};
    for (const bool fused : {true, false}) {
      std::vector<op> layer_ops;
      for (int k = 0; k < kind_count; ++k) {
        const auto kk = static_cast<kind>(k);
        if (!m.stages.has(kk)) continue;
        for (int sp = 0; sp < m.parts_of(kk); ++sp)
          for (const phase ph : fused || !has_weights(kk)
                                    ? std::vector{phase::F, phase::B}
                                    : std::vector{phase::F, phase::dX, phase::dW})
            layer_ops.push_back(make_op(kk, ph, 0, 0, 0, sp));
      }
      for (const op& a : layer_ops) {
        const std::vector<op> p = producers(m, a, fused);
        for (const op& b : layer_ops) {
          if (b == a) continue;
          // A backward's own forward is an activation, not the chain's gradient flow.
          if (a.ph != phase::F && b.ph == phase::F) continue;
          CAPTURE(to_string(a));
          CAPTURE(to_string(b));
          const bool rules = std::find(p.begin(), p.end(), b) != p.end();
          CHECK(gen::needs_in_layer({a.k, a.ph, a.split}, {b.k, b.ph, b.split}, m) == rules);
        }
      }
    }
  }
}
