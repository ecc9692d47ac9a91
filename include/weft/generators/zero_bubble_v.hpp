// ZB-V (zero bubble with V placement, Qi et al. 2024; PyTorch's ScheduleZBVZeroBubble): two
// chunks per rank, rank r holding chunks r and 2·ranks-1-r, every backward split into dX and dW
// so that dW passes fill what would be bubbles.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/params.hpp>

namespace weft {

namespace gen {
/// `zb_v`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule zb_v(const pipeline_params& p) {
  const model_desc m = gen::vee_model("zb-v", p);
  const int P = p.ranks, M = p.micro;
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    const int c0 = r, c1 = 2 * P - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    const auto forward = [&](int chunk, int& count) { b.forward(count++, chunk); };
    const auto input_and_weight = [&](int chunk, int& count) {
      b.backward_input(count, chunk);
      b.backward_weight(count++, chunk);
    };
    for (int i = 0; i < 2 * (P - r) - 1; ++i) forward(c0, f0);
    for (int i = 0; i < r; ++i) {
      forward(c1, f1);
      forward(c0, f0);
    }
    for (int i = 0; i < P - r; ++i) {
      forward(c1, f1);
      input_and_weight(c1, b1);
    }
    while (f1 < f0 || f0 < M) {
      if (f0 < M) forward(c0, f0);
      input_and_weight(c0, b0);
      forward(c1, f1);
      input_and_weight(c1, b1);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < r; ++i) {
      b.backward_input(b0++, c0);
      b.backward_input(b1++, c1);
    }
    for (int i = 0; i < P - r; ++i) {
      b.backward_input(b0++, c0);
      b.backward_weight(w0++, c0);
    }
    while (w1 < b1) b.backward_weight(w1++, c1);
    while (w0 < b0) b.backward_weight(w0++, c0);
  }
  return gen::finish(b, p);
}
}  // namespace gen

/// ZB-V. Rank r: 2 (ranks - r) - 1 forwards of its first chunk; r pairs of forwards (second
/// chunk, first chunk); ranks - r rounds of forward, dX, dW on the second chunk; then the steady
/// phase of forward, dX, dW on each chunk in turn, and a cool-down of dX passes with the dW
/// passes deferred behind them. Rules: micro >= 2·ranks (the warm-up runs 2·ranks - 1 forwards
/// on rank 0). Peak memory: 2·ranks chunks, each half a rank's layers — 1F1B's ranks stages.
inline constexpr generator<gen::zb_v> zb_v{};
WEFT_EXTERN_STEPS(gen::zb_v)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_zb_v is gen::zb_v")]] constexpr schedule build_zb_v(
    const pipeline_params& p) {
  return zb_v(p);
}
}  // namespace gen

}  // namespace weft
