// Compiling this file is the test: legal schedules are proven by the compiler, and the
// diagnosis of illegal ones is checked as a constant.
#include <doctest/doctest.h>

#include <utility>

#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/sim/contract.hpp>

using namespace weft;

namespace {
constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
static_assert(proven<diagnose(layer_fb, assuming(done(F, mb{0})))>);
static_assert(verify(layer_fb, assuming(done(F, mb{0}))));

// Every rule, violated, diagnosed at compile time.
constexpr auto swapped =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(F, mb{1}) | dispatch(B, mb{0}),
          mlp(B, mb{0}) | dispatch(F, mb{1}), attn(B, mb{0}) | combine(F, mb{1}));
constexpr violation order = diagnose(swapped, assuming(done(F, mb{0})));
static_assert(order.code == rule::order && order.subject == op(mlp(F, mb{1})) && order.slot == 1);
static_assert(order.other == op(dispatch(F, mb{1})) && order.other_slot == 2);

static_assert(diagnose(slots(block(F, mb{0}), block(F, mb{0}), block(B, mb{0}))).what ==
              fault::duplicate);
static_assert(diagnose(with_model(slots(block(F, mb{0})), model_desc{.micro = 1})).what ==
              fault::missing);
static_assert(diagnose(slots(block(F, mb{0}) | block(F, mb{1}), block(B, mb{0}), block(B, mb{1})))
                  .what == fault::same_stream);
static_assert(diagnose(with_model(slots(block(F, mb{0}), block(F, mb{1}), block(F, mb{2}),
                                        block(B, mb{0}), block(B, mb{1}), block(B, mb{2})),
                                  model_desc{.micro = 3, .max_live = 2}))
                  .code == rule::memory);
static_assert(diagnose(with_model(slots(block(F, mb{0})), model_desc{.ranks = 300})).code ==
              rule::config);

// A 1F1B deadlock from a single comm stream, and its two-stream fix.
template <int Rx>
constexpr auto two_rank_1f1b =
    with_model(ranks(slots(block(F, mb{0}), send(F, mb{0}), block(F, mb{1}), send(F, mb{1}),
                           recv(B, mb{0}, lane{Rx}), block(B, mb{0}), recv(B, mb{1}, lane{Rx}),
                           block(B, mb{1})),
                     slots(recv(F, mb{0}, chunk{1}, lane{Rx}), block(F, mb{0}, chunk{1}),
                           block(B, mb{0}, chunk{1}), send(B, mb{0}, chunk{1}),
                           recv(F, mb{1}, chunk{1}, lane{Rx}), block(F, mb{1}, chunk{1}),
                           block(B, mb{1}, chunk{1}), send(B, mb{1}, chunk{1}))),
               model_desc{.ranks = 2, .micro = 2});
static_assert(diagnose(two_rank_1f1b<0>).code == rule::deadlock);
static_assert(proven<diagnose(two_rank_1f1b<1>)>);

// The 1F1B generator over ranks {2, 3, 4, 8} x micro-batches {1, P, 2P, 4P}: whole blocks, MoE
// sub-stages with a shared expert, and explicit transfers. One static_assert per point keeps each
// constant evaluation small.
template <int P, int M>
struct grid_point {
  static_assert(verify(one_f_one_b({.ranks = P, .micro = M})));
  static_assert(
      verify(one_f_one_b({.ranks = P, .micro = M, .stages = stage_set::moe_with_shared()})));
  static_assert(verify(one_f_one_b({.ranks = P, .micro = M, .transfers = true})));
  static constexpr bool ok = true;
};
template <int... P>
constexpr bool grid(std::integer_sequence<int, P...>) {
  return ((grid_point<P, 1>::ok && grid_point<P, P>::ok && grid_point<P, 2 * P>::ok &&
           grid_point<P, 4 * P>::ok) &&
          ...);
}
static_assert(grid(std::integer_sequence<int, 2, 3, 4, 8>{}));
// Performance contracts: lowered, simulated and measured by the compiler. With unit costs
// F 1, B 2 and free transfers a pipeline of P ranks runs M + P - 1 forward-backward periods of
// 3 and idles (P - 1) / (M + P - 1) of them (Narayanan et al. 2021); the interleaved schedule
// with V chunks of a third of the work each the same with V M periods of 1
// ((P - 1) / (V M + P - 1), Megatron's interleaved bubble); thirds do not add up exactly in
// binary, hence the 1e-9.
constexpr auto unit = unit_cost_model::pipeline({.F = 1, .B = 2});
static_assert(
    kept<contract(one_f_one_b({.ranks = 4, .micro = 8}), unit, {.makespan = 33, .bubble = 0.273})>);
static_assert(!contract(one_f_one_b({.ranks = 4, .micro = 8}), unit, {.makespan = 32.999}).kept());
static_assert(!contract(one_f_one_b({.ranks = 4, .micro = 8}), unit, {.bubble = 0.272}).kept());
static_assert(contract(gpipe({.ranks = 4, .micro = 8}), unit, {}).makespan == 33'000);
constexpr auto third = unit_cost_model::pipeline({.F = 1.0 / 3, .B = 2.0 / 3});
static_assert(kept<contract(interleaved({.ranks = 4, .micro = 8, .chunks = 3}), third,
                            {.makespan = 27 + 1e-9, .bubble = 3.0 / 27 + 1e-9})>);
static_assert(!contract(interleaved({.ranks = 4, .micro = 8, .chunks = 3}), third,
                        {.makespan = 26.99})
                   .kept());
}  // namespace

TEST_CASE("legality proofs and diagnoses hold at compile time") {
  CHECK(order.code == rule::order);
}
