// What every pipeline generator takes, and the checks they share. Generators throw
// `config_error` with a message naming the schedule and the broken rule; in a constant
// expression the throw stops compilation there.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/error.hpp>
#include <weft/generators/stage_ops.hpp>
#include <weft/schedule/model.hpp>
#include <weft/schedule/transfers.hpp>

namespace weft {

/// How a pipeline's transfers are issued, for links where they cost (MindSpeed's
/// pp-cross-dc-comm-overlap note). The default is PyTorch's lowering; `megatron` is Megatron's,
/// the baseline the note improves on: its interleaved code with `overlap_p2p_comm` (one p2p
/// stream, each receive posted after the previous step of its direction), and its 1F1B, which has
/// no such overlap and is `blocking`'s; MindSpeed's options are changes to the interleaved code,
/// so setting either selects it. Any option here lowers the schedule to explicit transfers.
struct p2p_options {
  bool megatron = false;
  /// Megatron without `overlap_p2p_comm` (`--no-overlap-p2p-communication`; always without a
  /// virtual pipeline): batched calls (`batch_isend_irecv`), each waited by the host
  /// (`transfer_wait::host`; `receive_posting::batched_1f1b`, `batched_interleaved`).
  bool blocking = false;
  /// Receives posted a step earlier in warm-up and cool-down (`receive_posting::early`;
  /// MindSpeed's `--overlap-warmup-cooldown-communication`). MindSpeed splits the transfers over
  /// two process groups by rank parity, ping and pong (`p2p_lanes::ping_pong`), each with its own
  /// communication stream; issued from the compute stream, each transfer starts after the
  /// compute issued before it (`transfer_wait::launch_ordered`).
  bool overlap_p2p = false;
  /// Sends and receives issued from streams of their own (MindSpeed's `--use-multi-stream`): a
  /// receive no longer waits for the compute issued before it (`transfer_wait::data`).
  bool multi_stream = false;
  /// Each micro-batch's loss all-reduced for logging on the last stage, and awaited by its
  /// backward (`loss_reduce::blocking`, Megatron's loss function) ...
  bool log_allreduce = false;
  /// ... or only at the end of the step (`loss_reduce::async`; MindSpeed's
  /// `--async-log-allreduce`).
  bool async_log_allreduce = false;

  constexpr bool lowers() const noexcept {
    return megatron || blocking || overlap_p2p || multi_stream || log_allreduce ||
           async_log_allreduce;
  }
  /// Who waits for a transfer: Megatron's compute stream, before a step, for its direction's
  /// last call (its handles hold the sends too); blocking ones, the host; MindSpeed's and
  /// PyTorch's, only the ops that need the data (MindSpeed waits on its receives' handles alone)
  /// — and without MindSpeed's own streams a transfer waits for the compute issued before it.
  constexpr transfer_wait waits() const noexcept {
    if (blocking) return transfer_wait::host;
    if (overlap_p2p && !multi_stream) return transfer_wait::launch_ordered;
    if (overlap_p2p || multi_stream) return transfer_wait::data;
    return megatron ? transfer_wait::exchange : transfer_wait::data;
  }
  constexpr loss_reduce loss() const noexcept {
    return async_log_allreduce ? loss_reduce::async
           : log_allreduce     ? loss_reduce::blocking
                               : loss_reduce::none;
  }
  /// The lowering for a generator; `interleaved`: Megatron's interleaved code (MindSpeed's, at
  /// any number of chunks), else its 1F1B.
  constexpr transfer_options transfers(bool interleaved) const {
    if (!megatron && !blocking && !overlap_p2p && !multi_stream) return {};
    if (blocking)
      return {.lanes = p2p_lanes::by_direction,
              .receives = interleaved ? receive_posting::batched_interleaved
                                      : receive_posting::batched_1f1b};
    return {.lanes = overlap_p2p ? p2p_lanes::ping_pong : p2p_lanes::single,
            .receives = overlap_p2p   ? receive_posting::early
                        : interleaved ? receive_posting::after_previous
                                      : receive_posting::at_use};
  }
};

/// The parameters shared by every generator. `ranks` counts devices, as in PyTorch: V-shaped
/// schedules put two chunks on each.
struct pipeline_params {
  int ranks = 1;
  int micro = 1;
  int layers = 1;  ///< layers per model chunk
  stage_set stages = stage_set::whole_block();
  bool transfers = false;  ///< lower to explicit send/recv ops (`with_transfers`)
  /// MoE fb-overlap for sub-stage layers; the default is the baseline (none).
  overlap_options overlap = overlap_options::none();
  /// AMPipe degree: each micro-batch's sequence in this many chunks, an op's `split` (their
  /// order: `overlap.pipeline_splits`).
  int splits = 1;
  /// Pipe-experts multi-data: each split's routed-expert path in this many pieces (model_desc).
  int pieces = 1;
  /// How transfers are issued (Megatron's way, MindSpeed's cross-DC options); default PyTorch's.
  p2p_options p2p{};
};

namespace gen {

/// Throws "weft: <schedule>: <why>".
[[noreturn]] inline void reject(const char* schedule_name, std::string_view why) {
  throw config_error(std::string("weft: ") + schedule_name + ": " + std::string(why));
}

/// Throws unless `p` describes a pipeline at all; `m` is the model the generator derived from it.
/// `megatron_code`: Megatron-LM (and MindSpeed, which builds on it) has this schedule, so its
/// transfer lowering applies — 1F1B and the interleaved schedule only.
constexpr void check_common(const char* name, const pipeline_params& p, const model_desc& m,
                            bool megatron_code = false) {
  // The parameters first: `m` narrows them (and its chunks() could overflow).
  if (p.ranks < 1 || p.ranks > limits::ranks) reject(name, describe(model_error::bad_ranks));
  if (p.micro < 1 || p.micro > limits::micro) reject(name, describe(model_error::bad_micro));
  if (p.layers < 1 || p.layers > limits::layers) reject(name, describe(model_error::bad_layers));
  if (m.chunks_per_rank > limits::chunks || m.chunks() > limits::chunks)
    reject(name,
           "at most " + std::to_string(limits::chunks) + " model chunks (ranks x chunks per rank)");
  if (const model_error e = validate(m); e != model_error::none) reject(name, describe(e));
  if (p.p2p.multi_stream && !p.p2p.overlap_p2p)
    reject(name,
           "--use-multi-stream option must be enabled together with "
           "--overlap-warmup-cooldown-communication (p2p.multi_stream needs p2p.overlap_p2p: "
           "ping/pong streams are MindSpeed's change to the early-receive schedule)");
  if (p.p2p.blocking && p.p2p.overlap_p2p)
    reject(name,
           "p2p.blocking and p2p.overlap_p2p contradict each other: a receive posted early is "
           "one the host does not wait for");
  // Megatron's and MindSpeed's cross-DC lowerings place each transfer as Megatron's 1F1B or
  // interleaved code issues it; other schedules have no such code, and on one stream they deadlock
  // (zb-h1 on 2 ranks with 5 micro-batches, zb-v with ping/pong streams).
  if (!megatron_code && (p.p2p.megatron || p.p2p.blocking || p.p2p.overlap_p2p))
    reject(name,
           "Megatron's transfer lowering (--p2p megatron or blocking, --overlap-p2p, "
           "--multi-stream) is Megatron-LM's and MindSpeed's code for the 1f1b and interleaved "
           "schedules; this schedule has none: leave its transfers to PyTorch's lowering (the "
           "default, --transfers)");
  if (m.pieces > 1 && p.overlap.pair_forward_backward)
    reject(name,
           "pipe-experts pieces do not combine with fb-overlap's forward/backward pairing "
           "(overlap.pair_forward_backward)");
}

/// The model a generator's parameters describe, with its shape: chunks per rank, where they sit,
/// and whether micro-batches enter from both ends. Unchecked (`check_common` checks it).
constexpr model_desc pipeline_model(const pipeline_params& p, int chunks_per_rank = 1,
                                    placement place = placement::loop,
                                    bool bidirectional = false) noexcept {
  return {.ranks = p.ranks,
          .chunks_per_rank = chunks_per_rank,
          .place = place,
          .bidirectional = bidirectional,
          .micro = p.micro,
          .layers = p.layers,
          .stages = p.stages,
          .splits = p.splits,
          .pieces = p.pieces,
          .loss = p.p2p.loss(),
          .waits = p.p2p.waits()};
}

/// The model of a V-shaped schedule (two chunks per rank: r and 2·ranks-1-r), checked, with the
/// rule these schedules share: micro >= 2·ranks, so the warm-up can fill both arms of the V.
constexpr model_desc vee_model(const char* name, const pipeline_params& p,
                               bool bidirectional = false) {
  const model_desc m = pipeline_model(p, 2, placement::vee, bidirectional);
  check_common(name, p, m);
  if (p.micro < 2 * p.ranks) reject(name, "micro must be >= 2 * ranks");
  return m;
}

}  // namespace gen
}  // namespace weft
