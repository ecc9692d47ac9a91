// PyTorch's looped breadth-first schedule (`ScheduleLoopedBFS`; Lamy-Poirier, "Breadth-First
// Pipeline Parallelism", arXiv 2211.05953): several chunks per rank in loop placement, each chunk
// taking every micro-batch before the next one starts.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/params.hpp>

namespace weft {

namespace gen {
/// `looped_bfs`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule looped_bfs(const interleaved_params& p) {
  const gen::loop_chunks shape = gen::loop_chunks_of("looped-bfs", p);
  const pipeline_params& common = shape.common;
  const model_desc& m = shape.model;
  if (p.extra_warmup) gen::reject("looped-bfs", "extra_warmup is the interleaved schedule's");
  if (p.nanopipe) gen::reject("looped-bfs", "nanopipe is the interleaved schedule's (MindSpeed's)");
  const int P = p.ranks, V = p.chunks, M = p.micro;
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    for (int i = 0; i < r; ++i) b.idle();
    for (int v = 0; v < V; ++v)
      for (int mb = 0; mb < M; ++mb) b.forward(mb, v * P + r);
    for (int i = 0; i < 2 * (P - 1 - r); ++i) b.idle();
    for (int v = V; v-- > 0;)
      for (int mb = M; mb-- > 0;) b.backward(mb, v * P + r);
  }
  return gen::finish(b, common);
}
}  // namespace gen

/// Looped BFS as PyTorch orders it, step for step: rank r idles r steps, runs the forwards of its
/// chunks r, r + ranks, ... in turn, every micro-batch of one before the next; idles 2 (ranks -
/// 1 - r) steps while the first backward comes up; then the fused backwards of its chunks in
/// reverse, the micro-batches of each from the last to the first. Every micro-batch's
/// activations stay until its backward: the memory of GPipe, with the bubble of interleaving.
/// Takes `chunks` per rank; no `extra_warmup`, no `nanopipe`, no Megatron lowering.
inline constexpr generator<gen::looped_bfs> looped_bfs{};
WEFT_EXTERN_STEPS(gen::looped_bfs)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_looped_bfs is gen::looped_bfs")]] constexpr schedule build_looped_bfs(
    const interleaved_params& p) {
  return looped_bfs(p);
}
}  // namespace gen

}  // namespace weft
