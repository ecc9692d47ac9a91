// DualPipe and DualPipeV (DeepSeek-V3): two model chunks per rank, forwards of one overlapped
// with backwards of the other in the steady phase, zero-bubble dX/dW splits at the edges.
//
// DualPipeV: V placement (rank r holds chunks r and 2·ranks-1-r); every micro-batch passes
// both. DualPipe: the same placement read as two pipelines in opposite directions
// (micro-batches [0, micro/2) pass chunks [0, ranks), the rest [ranks, 2·ranks)), so each rank
// holds a stage of each direction: twice the parameters of DualPipeV for half the bubble.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/params.hpp>

namespace weft {

namespace gen {

/// The eight steps DeepSeek's DualPipe(V) runs on one rank, with its "phase 0" and "phase 1"
/// chunks. `h` is the rank's distance from the pipeline's end (DualPipeV: the rank; DualPipe:
/// the distance to the nearer end), `R` the ranks on one arm, `n` the micro-batches per phase.
/// Each phase hands out its micro-batches in order: first_mb[i] + 0, 1, ...
struct dual_rank {
  int chunk[2];
  int first_mb[2];
  int h, R, n;
};

constexpr void dual_steps(pipeline_builder& b, const dual_rank& d) {
  int fwd[2] = {0, 0}, bwd[2] = {0, 0};
  buffer<int> pending_w;  // (phase, mb) of split backwards waiting for their dW, in order
  std::size_t next_w = 0;
  const auto mb = [&](int ph, int i) { return d.first_mb[ph] + i; };
  const auto F = [&](int ph) { b.forward(mb(ph, fwd[ph]++), d.chunk[ph]); };
  const auto B = [&](int ph, bool zero_bubble) {
    const int i = mb(ph, bwd[ph]++);
    if (!zero_bubble) return b.backward(i, d.chunk[ph]);
    b.backward_input(i, d.chunk[ph]);
    pending_w.push_back(ph * 65536 + i);
  };
  const auto W = [&] {
    const int w = pending_w[next_w++];
    b.backward_weight(w % 65536, d.chunk[w / 65536]);
  };
  const auto FB = [&](int fph, int bph) {
    b.overlapped(mb(fph, fwd[fph]++), d.chunk[fph], mb(bph, bwd[bph]++), d.chunk[bph]);
  };
  const int h = d.h, R = d.R;
  for (int i = 0; i < (R - h - 1) * 2; ++i) F(0);  // 1: forwards of phase 0
  for (int i = 0; i < h + 1; ++i) {                // 2: phase 0 and phase 1 forwards
    F(0);
    F(1);
  }
  for (int i = 0; i < R - h - 1; ++i) {  // 3: zero-bubble backward, its dW, a forward
    B(1, true);
    W();
    F(1);
  }
  for (int i = 0; i < d.n - 2 * R + h + 1; ++i) {  // 4: the steady phase, overlapped pairs
    if (i == 0 && h == R - 1) {                    // the turning rank: not overlapped
      F(0);
      B(1, false);
    } else {
      FB(0, 1);
    }
    FB(1, 0);
  }
  for (int i = 0; i < R - h - 1; ++i) {  // 5
    B(1, false);
    FB(1, 0);
  }
  bool zero_bubble = false;  // 6: backwards of both phases, the second half split
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zero_bubble = true;
    B(1, zero_bubble);
    if (i == (h + 1) / 2 && h % 2 == 0) zero_bubble = true;
    B(0, zero_bubble);
  }
  for (int i = 0; i < R - h - 1; ++i) {  // 7
    W();
    B(0, true);
  }
  while (next_w < pending_w.size()) W();  // 8: the remaining dW
}

}  // namespace gen

namespace gen {
/// `dualpipev`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule dualpipev(const pipeline_params& p) {
  const model_desc m = gen::vee_model("dualpipev", p);
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < p.ranks; ++r) {
    b.add_rank();
    gen::dual_steps(b, {.chunk = {r, 2 * p.ranks - 1 - r},
                        .first_mb = {0, 0},
                        .h = r,
                        .R = p.ranks,
                        .n = p.micro});
  }
  return gen::finish(b, p);
}
}  // namespace gen

/// DualPipeV (DeepSeek's "cut-in-half" DualPipe, PyTorch's ScheduleDualPipeV): 2·ranks chunks
/// in V placement. Rules: micro >= 2·ranks. Peak memory: 2·ranks + 1 chunks of half a rank's
/// layers on every rank (ranks + 1/2 stages, within DeepSeek's published ranks + 1).
inline constexpr generator<gen::dualpipev> dualpipev{};
WEFT_EXTERN_STEPS(gen::dualpipev)

namespace gen {
/// `dualpipe`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule dualpipe(const pipeline_params& p) {
  if (p.ranks % 2 != 0) gen::reject("dualpipe", "ranks must be even");
  if (p.micro % 2 != 0) gen::reject("dualpipe", "micro must be even (half for each direction)");
  const model_desc m = gen::vee_model("dualpipe", p, true);
  const int P = p.ranks, half = p.micro / 2;
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    const bool second_half = r >= P / 2;
    const int down = r, up = 2 * P - 1 - r;  // this rank's chunk in each direction
    gen::dual_steps(b, {.chunk = {second_half ? up : down, second_half ? down : up},
                        .first_mb = {second_half ? half : 0, second_half ? 0 : half},
                        .h = second_half ? P - 1 - r : r,
                        .R = P / 2,
                        .n = half});
  }
  return gen::finish(b, p);
}
}  // namespace gen

/// DualPipe (DeepSeek-V3): bidirectional, 2·ranks chunks; micro-batches [0, micro/2) enter at
/// rank 0, the rest at rank ranks-1. Rules: even ranks, even micro, micro >= 2·ranks.
inline constexpr generator<gen::dualpipe> dualpipe{};
WEFT_EXTERN_STEPS(gen::dualpipe)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_dualpipev is gen::dualpipev")]] constexpr schedule build_dualpipev(
    const pipeline_params& p) {
  return dualpipev(p);
}
[[deprecated("gen::build_dualpipe is gen::dualpipe")]] constexpr schedule build_dualpipe(
    const pipeline_params& p) {
  return dualpipe(p);
}
}  // namespace gen

}  // namespace weft
