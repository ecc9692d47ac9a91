// What every pipeline generator takes, and the checks they share. Generators throw
// `config_error` with a message naming the schedule and the broken rule; in a constant
// expression the throw stops compilation there.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/error.hpp>
#include <weft/schedule/model.hpp>
#include <weft/schedules/stage_ops.hpp>

namespace weft {

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
};

namespace gen {

/// Throws "weft: <schedule>: <why>".
[[noreturn]] inline void reject(const char* schedule_name, std::string_view why) {
  throw config_error(std::string("weft: ") + schedule_name + ": " + std::string(why));
}

/// Throws unless `p` describes a pipeline at all; `m` is the model the generator derived from it.
constexpr void check_common(const char* name, const pipeline_params& p, const model_desc& m) {
  if (p.ranks < 1 || p.ranks > 255) reject(name, "ranks must be in [1, 255]");
  if (p.micro < 1 || p.micro > 65535) reject(name, "micro must be in [1, 65535]");
  if (p.layers < 1 || p.layers > 65535) reject(name, "layers must be in [1, 65535]");
  if (m.chunks() > 255) reject(name, "at most 255 model chunks (ranks x chunks per rank)");
  if (const model_error e = validate(m); e != model_error::none) reject(name, describe(e));
  if (m.pieces > 1 && p.overlap.pair_forward_backward)
    reject(name,
           "pipe-experts pieces do not combine with fb-overlap's forward/backward pairing "
           "(overlap.pair_forward_backward)");
}

/// The model of a V-shaped schedule (two chunks per rank: r and 2·ranks-1-r), checked, with the
/// rule these schedules share: micro >= 2·ranks, so the warm-up can fill both arms of the V.
constexpr model_desc vee_model(const char* name, const pipeline_params& p,
                               bool bidirectional = false) {
  const model_desc m{.ranks = p.ranks,
                     .chunks_per_rank = 2,
                     .place = placement::vee,
                     .bidirectional = bidirectional,
                     .micro = p.micro,
                     .layers = p.layers,
                     .stages = p.stages,
                     .splits = p.splits,
                     .pieces = p.pieces};
  check_common(name, p, m);
  if (p.micro < 2 * p.ranks) reject(name, "micro must be >= 2 * ranks");
  return m;
}

}  // namespace gen
}  // namespace weft
