// Interleaved 1F1B (Megatron's virtual pipeline, VPP): `chunks` model chunks per rank in loop
// placement (chunk c on rank c % ranks), micro-batches in groups of `ranks`.
#pragma once

#include <weft/schedules/builder.hpp>
#include <weft/schedules/params.hpp>

namespace weft {

struct interleaved_params {
  int ranks = 1;
  int micro = 1;
  int chunks = 2;  ///< model chunks per rank (Megatron's virtual pipeline size)
  int layers = 1;  ///< layers per model chunk
  stage_set stages = stage_set::whole_block();
  bool transfers = false;  ///< lower to explicit send/recv ops (`with_transfers`)
  /// MoE fb-overlap for sub-stage layers; the default is the baseline (none).
  overlap_options overlap = overlap_options::none();
  /// MoE fb-overlap on VPP (seed's figure): one more warm-up micro-batch than Megatron, so that
  /// each steady-phase forward can be overlapped with a backward of another micro-batch; the
  /// steady phase then issues them as overlapped pairs.
  bool extra_warmup = false;
};

/// Megatron's interleaved schedule. Virtual micro-batch k runs on local chunk
/// (k mod ranks*chunks) / ranks (backwards: chunks - 1 - that) of micro-batch
/// (k / (ranks*chunks)) * ranks + k mod ranks; rank r warms up with
/// 2 (ranks - r - 1) + (chunks - 1) ranks forwards (+1 with `extra_warmup`), then alternates.
/// Rules: micro must be a multiple of ranks (micro-batches go through the chunks in groups of
/// `ranks`). Bubble (ranks - 1) / (chunks * micro + ranks - 1).
constexpr schedule interleaved(const interleaved_params& p) {
  const pipeline_params common{p.ranks, p.micro, p.layers, p.stages, p.transfers, p.overlap};
  if (p.chunks < 1) gen::reject("interleaved", "chunks (per rank) must be >= 1");
  const model_desc m{.ranks = p.ranks,
                     .chunks_per_rank = p.chunks,
                     .micro = p.micro,
                     .layers = p.layers,
                     .stages = p.stages};
  gen::check_common("interleaved", common, m);
  if (p.micro % p.ranks != 0)
    gen::reject("interleaved",
                "micro must be a multiple of ranks: micro-batches pass the chunks in groups of "
                "`ranks`");
  const int P = p.ranks, V = p.chunks, total = p.micro * V;
  const auto mb_of = [&](int k) { return (k / (P * V)) * P + k % P; };
  const auto local_chunk = [&](int k, bool forward) {
    const int v = (k % (P * V)) / P;
    return forward ? v : V - 1 - v;
  };
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    int warmup = 2 * (P - r - 1) + (V - 1) * P + (p.extra_warmup ? 1 : 0);
    if (warmup > total) warmup = total;
    const auto forward = [&](int k) { b.forward(mb_of(k), local_chunk(k, true) * P + r); };
    const auto backward = [&](int k) { b.backward(mb_of(k), local_chunk(k, false) * P + r); };
    for (int k = 0; k < warmup; ++k) forward(k);
    for (int i = 0; i + warmup < total; ++i) {
      if (p.extra_warmup) {  // the forward and backward are of different micro-batches: overlap
        const int k = i + warmup;
        b.overlapped(mb_of(k), local_chunk(k, true) * P + r, mb_of(i),
                     local_chunk(i, false) * P + r);
        continue;
      }
      forward(i + warmup);
      backward(i);
    }
    for (int k = total - warmup; k < total; ++k) backward(k);
  }
  return gen::finish(b, p.transfers);
}

}  // namespace weft
