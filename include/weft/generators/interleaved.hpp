// Interleaved 1F1B (Megatron's virtual pipeline, VPP): `chunks` model chunks per rank in loop
// placement (chunk c on rank c % ranks), micro-batches in rounds of equal size.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/params.hpp>

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
  /// MoE fb-overlap on VPP (the figure in MindSpeed's moe-fb-overlap note): one more warm-up
  /// micro-batch than Megatron, so that each steady-phase forward can be overlapped with a backward
  /// of another micro-batch; the steady phase then issues them as overlapped pairs.
  bool extra_warmup = false;
  /// AMPipe degree and pipe-experts pieces, as in `pipeline_params`.
  int splits = 1;
  int pieces = 1;
  /// How transfers are issued, as in `pipeline_params`.
  p2p_options p2p{};
  /// MindSpeed's NanoPipe (`--use-nanopipe`): the first steady-phase backwards of rank r split
  /// into dX and dW, the dW kept in a queue and run after the cool-down, where rank r idles.
  bool nanopipe = false;
};

namespace gen {
/// What the schedules of `chunks` per rank in loop placement (chunk c on rank c % ranks) share:
/// their common parameters and their model, checked (`megatron_code` as in `check_common`).
struct loop_chunks {
  pipeline_params common;
  model_desc model;
};
constexpr loop_chunks loop_chunks_of(const char* name, const interleaved_params& p,
                                     bool megatron_code = false) {
  if (p.chunks < 1) reject(name, "chunks (per rank) must be >= 1");
  const pipeline_params common{p.ranks,   p.micro,  p.layers, p.stages, p.transfers,
                               p.overlap, p.splits, p.pieces, p.p2p};
  const model_desc m = pipeline_model(common, p.chunks);
  check_common(name, common, m, megatron_code);
  return {common, m};
}
/// The interleaved parameters of a pipeline at `chunks` per rank (the rest at their defaults).
constexpr interleaved_params with_chunks(const pipeline_params& p, int chunks) {
  return {.ranks = p.ranks,
          .micro = p.micro,
          .chunks = chunks,
          .layers = p.layers,
          .stages = p.stages,
          .transfers = p.transfers,
          .overlap = p.overlap,
          .splits = p.splits,
          .pieces = p.pieces,
          .p2p = p.p2p};
}
/// PyTorch's rounds: micro-batches pass the chunks in max(1, micro / ranks) rounds of equal
/// size; the size, G. Rule: micro a multiple of the rounds.
constexpr int round_size(const char* name, int ranks, int micro) {
  const int rounds = micro / ranks > 1 ? micro / ranks : 1;
  if (micro % rounds != 0)
    reject(name,
           "micro must be a multiple of the rounds, max(1, micro / ranks): micro-batches pass the "
           "chunks in rounds of equal size");
  return micro / rounds;
}
}  // namespace gen

namespace gen {
/// MindSpeed's limits for NanoPipe (docs/features/nanopipe-pipeline-parallel.md, arguments.py,
/// flexible_schedules.py), as config errors.
constexpr void check_nanopipe(const interleaved_params& p) {
  if (p.ranks <= 2)
    reject("interleaved",
           "nanopipe needs more than 2 pipeline ranks (MindSpeed: --pipeline-model-parallel-size "
           "> 2, Megatron's rule for its interleaved schedule)");
  if (p.micro % p.ranks != 0)
    reject("interleaved",
           "nanopipe takes micro-batches in multiples of the ranks (MindSpeed's nanopipe "
           "schedule requires micro % ranks == 0)");
  if (p.extra_warmup || p.overlap.pair_forward_backward)
    reject("interleaved",
           "nanopipe does not combine with MoE fb-overlap (MindSpeed: --use-nanopipe is not "
           "available with mcore models, where fb-overlap lives)");
  if (p.splits > 1)
    reject("interleaved",
           "nanopipe does not combine with AMPipe (MindSpeed: ampipe does not "
           "support use_nanopipe)");
}
}  // namespace gen

namespace gen {
/// `interleaved`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule interleaved(const interleaved_params& p) {
  const gen::loop_chunks shape = gen::loop_chunks_of("interleaved", p, true);
  const pipeline_params& common = shape.common;
  const model_desc& m = shape.model;
  const bool megatron_code = p.p2p.megatron || p.p2p.blocking || p.p2p.overlap_p2p;
  if (megatron_code && p.micro % p.ranks != 0)
    gen::reject("interleaved",
                "Megatron's p2p and MindSpeed's take micro-batches in multiples of the ranks "
                "(micro % ranks == 0; Megatron's interleaved schedule requires it): with rounds of "
                "another size, ping/pong streams deadlock (checked: ranks 8, micro 22)");
  if (p.p2p.overlap_p2p && p.chunks > 1 && p.ranks % 2 == 1)
    gen::reject("interleaved",
                "MindSpeed's early receives split transfers over two process groups by rank "
                "parity (MindSpeed: even ranks receive on ping and send on pong, odd ranks the "
                "reverse); with an odd number of ranks the chunks' wrap-around joins two even "
                "ranks, P-1 sending on pong while rank 0 receives on ping, and they never meet: "
                "--overlap-p2p with --chunks > 1 needs an even --pp");
  if (p.p2p.blocking && p.ranks == 2 && p.chunks > 1)
    gen::reject("interleaved",
                "Megatron's batched calls need more than 2 pipeline ranks with chunks (Megatron: "
                "'pipeline-model-parallel size should be greater than 2 with interleaved "
                "schedule'): on 2 ranks both neighbours are one peer, a call's activation and "
                "gradient to it match the peer's receives in issue order, and they are issued in "
                "opposite orders, so each would land in the other's buffer");
  if (p.p2p.overlap_p2p && p.extra_warmup)
    gen::reject("interleaved",
                "the cross-DC note's early receives do not combine with fb-overlap's extra warm-up "
                "micro-batch: MindSpeed's fb-overlap runs VPP through a copy of Megatron's "
                "interleaved schedule (moe_feature/fb_overlap/vpp_schedules.py) with Megatron's "
                "overlap_p2p_comm, not the early-receive one; with MoE stages and fb-overlap, "
                "posting receives early there deadlocks (checked: pp 4, micro 8, chunks 3)");
  if (p.nanopipe) gen::check_nanopipe(p);
  const int P = p.ranks, V = p.chunks, G = gen::round_size("interleaved", P, p.micro),
            total = p.micro * V;
  // NanoPipe (MindSpeed core_r0.7.0, NanoPipe.init_decouple): rank 0's warm-up, without the
  // every-forward case; a rank splits as many steady-phase backwards as it warms up less.
  const int deepest = 2 * (P - 1) + (V - 1) * G < total ? 2 * (P - 1) + (V - 1) * G : total;
  const auto mb_of = [&](int k) { return (k / (G * V)) * G + k % G; };
  const auto local_chunk = [&](int k, bool forward) {
    const int v = (k % (G * V)) / G;
    return forward ? v : V - 1 - v;
  };
  gen::pipeline_builder b(m, p.overlap);
  buffer<std::uint16_t> warmups(static_cast<std::size_t>(P), 0);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    int warmup = 2 * (P - r - 1) + (V - 1) * G + (p.extra_warmup ? 1 : 0);
    // Megatron (and MindSpeed, which builds on it, NanoPipe included) runs every forward first
    // when the micro-batches equal the pipeline ranks (schedules.py, `all_warmup_microbatches`);
    // PyTorch keeps the usual warm-up there.
    if (warmup > total || ((megatron_code || p.nanopipe) && p.micro == P)) warmup = total;
    warmups[static_cast<std::size_t>(r)] = static_cast<std::uint16_t>(warmup);
    const auto forward = [&](int k) { b.forward(mb_of(k), local_chunk(k, true) * P + r); };
    const auto backward = [&](int k) { b.backward(mb_of(k), local_chunk(k, false) * P + r); };
    for (int k = 0; k < warmup; ++k) forward(k);
    const int split = p.nanopipe && deepest > warmup ? deepest - warmup : 0;
    for (int i = 0; i + warmup < total; ++i) {
      if (i < split) {  // NanoPipe: its dW waits in the queue
        forward(i + warmup);
        b.backward_input(mb_of(i), local_chunk(i, false) * P + r);
        continue;
      }
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
    // The queue, first in first out, after the last backward (WeightGradStore.pop).
    for (int i = 0; i < split && i + warmup < total; ++i)
      b.backward_weight(mb_of(i), local_chunk(i, false) * P + r);
  }
  return gen::finish(b, common, true, static_cast<buffer<std::uint16_t>&&>(warmups));
}
}  // namespace gen

/// Megatron's interleaved schedule, with PyTorch's rounds (`ScheduleInterleaved1F1B`): the
/// micro-batches pass the chunks in max(1, micro / ranks) rounds of G = micro / rounds each.
/// Virtual micro-batch k runs on local chunk (k mod G*chunks) / G (backwards: chunks - 1 - that)
/// of micro-batch (k / (G*chunks)) * G + k mod G; rank r warms up with
/// 2 (ranks - r - 1) + (chunks - 1) G forwards (+1 with `extra_warmup`), then alternates.
/// With micro a multiple of ranks, G = ranks: Megatron's order — and under Megatron's lowerings
/// (p2p megatron, blocking, overlap_p2p) with micro equal to ranks every rank runs every forward
/// first, as Megatron's code does. Rule: micro must be a multiple
/// of the rounds (as PyTorch: pp 4 takes 10 micro-batches in 2 rounds of 5, not 11).
/// Bubble (ranks - 1) / (chunks * micro + ranks - 1) when G = ranks.
/// With `nanopipe`, rank r's first d_r = min(2 (ranks - 1) + (chunks - 1) ranks, chunks micro)
/// - warm-up_r steady-phase backwards are dX alone (2r of them in general; none on rank 0 nor
/// when every forward comes first) and their dW run, in the same order, after the cool-down.
inline constexpr generator<gen::interleaved> interleaved{};
WEFT_EXTERN_STEPS(gen::interleaved)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_interleaved is gen::interleaved")]] constexpr schedule build_interleaved(
    const interleaved_params& p) {
  return interleaved(p);
}
}  // namespace gen

}  // namespace weft
