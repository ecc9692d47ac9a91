// The model description from which dependencies are derived: how many chunks, where they live,
// which sub-stages make a layer, how many micro-batches and splits.
#pragma once

#include <cstdint>
#include <string_view>

#include <weft/core/kinds.hpp>

namespace weft {

/// Which kinds make up one layer. A layer is either one `block` op or an attention followed by
/// the routed-expert path (dispatch -> mlp -> combine) and, beside it, a shared expert.
struct stage_set {
  std::uint16_t bits = 0;

  constexpr bool has(kind k) const noexcept { return (bits >> static_cast<int>(k)) & 1u; }
  constexpr stage_set with(kind k) const noexcept {
    return {static_cast<std::uint16_t>(bits | (1u << static_cast<int>(k)))};
  }
  constexpr int size() const noexcept {
    int n = 0;
    for (int i = 0; i < kind_count; ++i) n += (bits >> i) & 1u;
    return n;
  }
  friend constexpr bool operator==(stage_set, stage_set) = default;

  static constexpr stage_set whole_block() noexcept { return stage_set{}.with(kind::block); }
  /// attention, dispatch, routed experts, combine: the four sub-stages of MindSpeed's
  /// moe-fb-overlap note.
  static constexpr stage_set moe() noexcept {
    return stage_set{}.with(kind::attn).with(kind::dispatch).with(kind::mlp).with(kind::combine);
  }
  static constexpr stage_set moe_with_shared() noexcept { return moe().with(kind::shared); }
  static constexpr stage_set dense() noexcept {
    return stage_set{}.with(kind::attn).with(kind::mlp);
  }
};

/// How model chunks (global virtual stages) are placed on ranks.
enum class placement : std::uint8_t {
  loop,  ///< chunk c on rank c % ranks (1F1B, interleaved 1F1B)
  vee,   ///< two chunks per rank: rank r holds r and 2*ranks-1-r (ZB-V, DualPipeV, DualPipe)
};

/// Whether a step all-reduces each micro-batch's loss over the data-parallel group for logging,
/// and who waits for it.
enum class loss_reduce : std::uint8_t {
  none,
  /// Megatron's loss function: the all-reduce returns before the loss does, so the micro-batch's
  /// backward waits for it.
  blocking,
  /// MindSpeed's `--async-log-allreduce`: launched and left running; only the end of the step (the
  /// logging) waits for it.
  async,
};

/// Tensor parallelism around a linear layer (MindSpeed's tp-2d note), for a model whose one layer
/// is a linear's matmul (a `block`, in `splits` pieces of the sequence): the input rows are
/// all-gathered before it and the output rows reduce-scattered after it, as collectives of the
/// schedule, overlapped with the matmul's pieces as chosen here. The backward all-gathers the
/// output gradient, multiplies piece by piece, and reduce-scatters the input gradient.
enum class tp_overlap : std::uint8_t {
  off,  ///< not a tensor-parallel linear
  /// all-gather, matmul, reduce-scatter, one after the other (splits 1)
  none,
  /// the all-gather as a ring of splits - 1 steps (splits: the gather group's size); piece j of
  /// the matmul multiplies the rows step j brought (piece 0 the rank's own) while step j + 1
  /// brings the next; one reduce-scatter after the last piece
  ag_matmul,
  /// one all-gather; the matmul in splits pieces of the output rows (strided so that each
  /// member's share of every piece is a slice of its own rows), each piece reduce-scattered
  /// while the next is multiplied
  matmul_rs,
  /// both: the ring's pieces, each reduce-scattered to the rows' owners as soon as it is done
  fused,
};

/// What the host waits for of a rank's transfers.
enum class transfer_wait : std::uint8_t {
  /// Only the data an op needs: its receive (PyTorch's events).
  data,
  /// A step of one direction waits for every transfer of that direction its rank issued since
  /// its previous step of that direction, sends included: Megatron's `wait()` on the handles of
  /// its last `send_forward_recv_forward` (`send_backward_recv_backward`) call before the next
  /// forward (backward), with `overlap_p2p_comm`.
  exchange,
  /// Blocking calls (a slot of transfers is one call, its ops progressing together): every op
  /// waits for every transfer of the calls its rank issued before it, and a call starts after
  /// the compute issued before it — Megatron without `overlap_p2p_comm` (which it turns off
  /// without a virtual pipeline): `batch_isend_irecv`, its requests waited, then
  /// `torch.cuda.synchronize()` (`batch_p2p_sync`, on by default).
  host,
  /// The data an op needs, and a transfer starts only after the compute its rank issued before
  /// it: issued while the compute stream is current, its communicator's stream waits on that
  /// stream at launch (PyTorch's and torch_npu's process groups, `syncStreams`) — MindSpeed's
  /// transfers without `--use-multi-stream`.
  launch_ordered,
};

struct model_desc {
  int ranks = 1;
  int chunks_per_rank = 1;
  placement place = placement::loop;
  /// DualPipe: micro-batches [0, micro/2) flow through chunks [0, S/2), the rest through
  /// [S/2, S), so the two halves travel the ranks in opposite directions.
  bool bidirectional = false;
  int micro = 1;
  int layers = 1;  ///< layers per chunk
  stage_set stages = stage_set::whole_block();
  int splits = 1;  ///< sequence splits per micro-batch (AMPipe)
  /// Pipe-experts multi-data: each split's routed-expert path (dispatch, mlp, combine) in this
  /// many pieces of its tokens. Those kinds' `split` then numbers pieces over the micro-batch:
  /// piece j of split s is split s * pieces + j.
  int pieces = 1;
  bool backward = true;  ///< training: every forward op has a backward
  /// The loss all-reduce for logging (MindSpeed's pp-cross-dc-comm-overlap note): one
  /// all_reduce/F per micro-batch on the last chunk, after its forward.
  loss_reduce loss = loss_reduce::none;
  /// What a step waits for of the transfers before it (semantics.hpp).
  transfer_wait waits = transfer_wait::data;
  /// Tensor parallelism around the layer (a linear's matmul); `off` for every other model.
  tp_overlap tp = tp_overlap::off;
  int max_live = 0;  ///< rule 5: bound on live activations per rank, 0 = no bound

  constexpr int chunks() const noexcept { return ranks * chunks_per_rank; }
  /// A tensor-parallel linear whose all-gather is a ring of steps (tp_overlap).
  constexpr bool tp_ring() const noexcept {
    return tp == tp_overlap::ag_matmul || tp == tp_overlap::fused;
  }
  /// The forward reduce-scatter comes in pieces, one per piece of the matmul.
  constexpr bool tp_scatter_pieces() const noexcept {
    return tp == tp_overlap::matmul_rs || tp == tp_overlap::fused;
  }
  /// How many ops of collective kind `k` and phase `ph` a tensor-parallel linear has: forward
  /// all-gathers (a ring's steps: splits - 1; otherwise 1), forward reduce-scatters (splits or
  /// 1), one backward all-gather of the output gradient and one reduce-scatter of the input
  /// gradient; 0 for anything else. Their `split` numbers them: a ring step j is split j (the
  /// piece it brings), from 1.
  constexpr int tp_ops(kind k, phase ph) const noexcept {
    if (tp == tp_overlap::off) return 0;
    if (k != kind::all_gather && k != kind::reduce_scatter) return 0;
    if (ph == phase::B) return backward ? 1 : 0;
    if (ph != phase::F) return 0;
    if (k == kind::all_gather) return tp_ring() ? splits - 1 : 1;
    return tp_scatter_pieces() ? splits : 1;
  }
  /// Is `split` one of those ops' numbers.
  constexpr bool tp_has(kind k, phase ph, int split) const noexcept {
    const int n = tp_ops(k, ph);
    const int first = k == kind::all_gather && ph == phase::F && tp_ring() ? 1 : 0;
    return split >= first && split < first + n;
  }
  /// Into how many ops an (kind, phase)'s whole cost is shared: the splits or pieces it comes
  /// in, or for a tensor-parallel linear's collectives `tp_ops`.
  constexpr int shares_of(kind k, phase ph) const noexcept {
    if (tp != tp_overlap::off && is_collective(k)) return tp_ops(k, ph) > 0 ? tp_ops(k, ph) : 1;
    return parts_of(k);
  }
  /// How many values an op's `split` takes: splits, times pieces for the routed-expert path.
  constexpr int parts() const noexcept { return splits * pieces; }
  constexpr int parts_of(kind k) const noexcept { return in_pieces(k) ? parts() : splits; }
  /// The routed-expert path's kinds, which pipe-experts cuts into pieces (`kind_table`).
  static constexpr bool in_pieces(kind k) noexcept { return traits_of(k).in_pieces; }
  /// The sequence split a layer op of kind `k` and `split` belongs to (a piece's split).
  constexpr int split_of(kind k, int split) const noexcept {
    return in_pieces(k) ? split / pieces : split;
  }

  constexpr int rank_of(int c) const noexcept {
    if (place == placement::vee) return c < ranks ? c : 2 * ranks - 1 - c;
    return c % ranks;
  }
  /// First and one-past-last chunk a micro-batch passes through.
  constexpr int first_chunk(int m) const noexcept {
    return bidirectional && m >= micro / 2 ? chunks() / 2 : 0;
  }
  constexpr int end_chunk(int m) const noexcept {
    return bidirectional && m < micro / 2 ? chunks() / 2 : chunks();
  }
  constexpr bool carries(int m, int c) const noexcept {
    return c >= first_chunk(m) && c < end_chunk(m);
  }
  /// Next / previous chunk on micro-batch `m`'s path, or -1.
  constexpr int next_chunk(int m, int c) const noexcept {
    return c + 1 < end_chunk(m) ? c + 1 : -1;
  }
  constexpr int prev_chunk(int m, int c) const noexcept {
    return c - 1 >= first_chunk(m) ? c - 1 : -1;
  }
  /// The chunk a transfer of kind `k` (send or recv) and phase `ph` (F: activations go down
  /// the path, B: gradients come up) exchanges data with, from chunk `c`; -1 at the path's end.
  constexpr int transfer_peer_chunk(kind k, phase ph, int m, int c) const noexcept {
    const bool downstream = (k == kind::send) == (ph == phase::F);
    return downstream ? next_chunk(m, c) : prev_chunk(m, c);
  }
  friend constexpr bool operator==(const model_desc&, const model_desc&) = default;
};

/// Why a model description is impossible; `none` when it is fine.
enum class model_error : std::uint8_t {
  none,
  bad_ranks,
  bad_chunks,
  bad_micro,
  bad_layers,
  bad_splits,
  bad_pieces,
  splits_need_substages,
  pieces_need_experts,
  vee_needs_two_chunks,
  bidirectional_needs_even,
  stages_empty,
  stages_block_and_substages,
  stages_need_attn,
  stages_comm_without_mlp,
  stages_not_layer_kinds,
  bad_memory_bound,
  too_many_ops,
  tp_needs_linear,
  tp_pieces,
  /// The schedule's slots do not hold its ops (schedule::well_formed): a rule-6 fault found on
  /// the schedule, not on its model.
  slots_malformed,
};

// The messages spell the limits out (they are constants in the binary); the asserts keep them
// equal to `limits`.
static_assert(limits::ranks == 255 && limits::chunks == 255 && limits::parts == 255);
static_assert(limits::micro == 65535 && limits::layers == 65535);
constexpr std::string_view describe(model_error e) noexcept {
  switch (e) {
    case model_error::none:
      return "ok";
    case model_error::bad_ranks:
      return "ranks must be in [1, 255]";
    case model_error::bad_chunks:
      return "chunks_per_rank must be >= 1 and ranks * chunks <= 255";
    case model_error::bad_micro:
      return "micro must be in [1, 65535]";
    case model_error::bad_layers:
      return "layers must be in [1, 65535]";
    case model_error::bad_splits:
      return "splits must be in [1, 255]";
    case model_error::bad_pieces:
      return "pieces must be >= 1 and splits x pieces <= 255";
    case model_error::splits_need_substages:
      return "splits (AMPipe's pieces of the sequence) cut a layer's sub-stages (attn, mlp, ...): "
             "a whole block does not split";
    case model_error::pieces_need_experts:
      return "pieces (pipe-experts) cut the routed-expert path: the layer needs dispatch, mlp and "
             "combine";
    case model_error::vee_needs_two_chunks:
      return "V placement needs exactly 2 chunks per rank";
    case model_error::bidirectional_needs_even:
      return "bidirectional pipelines need an even number of chunks and of micro-batches";
    case model_error::stages_empty:
      return "a layer needs at least one stage kind";
    case model_error::stages_block_and_substages:
      return "a layer is either one block or sub-stages (attn, dispatch, mlp, combine, shared)";
    case model_error::stages_need_attn:
      return "sub-stage layers start with attn";
    case model_error::stages_comm_without_mlp:
      return "dispatch and combine need the routed experts (mlp) between them";
    case model_error::stages_not_layer_kinds:
      return "only block, attn, dispatch, mlp, combine and shared make up a layer";
    case model_error::bad_memory_bound:
      return "max_live must be >= 0";
    case model_error::tp_needs_linear:
      return "a tensor-parallel linear (tp) is one rank's single layer of one block, no pieces, "
             "one micro-batch";
    case model_error::tp_pieces:
      return "a tensor-parallel linear without overlap (tp_overlap::none) has splits 1";
    case model_error::slots_malformed:
      return "every op sits in a closed slot, and the ranks' slots follow one another from the "
             "first (add_rank, push, close_slot)";
    case model_error::too_many_ops:
      return "the model has more than 2^26 op ids (micro x chunks x layers x splits x pieces x "
             "stage kinds x phases, plus transfers and collectives); see docs/limits.md";
  }
  return "unknown";
}

/// Ops are numbered densely per model (op_index) in 32 bits; a model may have at most this many
/// ids, so the numbering never wraps and the arrays sized by it stay bounded. Generous: DeepSeek-V3
/// on 16 ranks (V placement, 2 layers per chunk) with 1024 micro-batches uses about 2.2M.
inline constexpr std::uint64_t max_op_ids = std::uint64_t{1} << 26;

/// The size of a model's dense id space, in 64 bits: per (micro-batch, chunk, layer, part) one
/// id per stage kind and phase (parts: splits x pieces), then four transfer ids per
/// (micro-batch, chunk), then (when `with_collectives`) twelve collective ids per (micro-batch,
/// chunk, layer, part). Meaningful
/// for a model whose fields are in range (`validate` checks those first).
constexpr std::uint64_t id_space(const model_desc& m, bool with_collectives) noexcept {
  const auto u = [](int v) { return static_cast<std::uint64_t>(v < 0 ? 0 : v); };
  const std::uint64_t per_mb = u(m.chunks()) * u(m.layers) * u(m.splits) * u(m.pieces);
  const std::uint64_t units = u(m.micro) * per_mb * u(m.stages.size());
  return units * phase_count + u(m.micro) * u(m.chunks()) * 4 +
         (with_collectives ? u(m.micro) * per_mb * 12 : 0);
}

constexpr model_error validate(const model_desc& m) noexcept {
  if (m.ranks < 1 || m.ranks > limits::ranks) return model_error::bad_ranks;
  // chunks_per_rank first on its own: ranks x a huge one would overflow `chunks()`.
  if (m.chunks_per_rank < 1 || m.chunks_per_rank > limits::chunks || m.chunks() > limits::chunks)
    return model_error::bad_chunks;
  if (m.micro < 1 || m.micro > limits::micro) return model_error::bad_micro;
  if (m.layers < 1 || m.layers > limits::layers) return model_error::bad_layers;
  if (m.splits < 1 || m.splits > limits::parts) return model_error::bad_splits;
  if (m.pieces < 1 || m.pieces > limits::parts || m.splits * m.pieces > limits::parts)
    return model_error::bad_pieces;
  if (m.place == placement::vee && m.chunks_per_rank != 2) return model_error::vee_needs_two_chunks;
  if (m.bidirectional && (m.chunks() % 2 != 0 || m.micro % 2 != 0))
    return model_error::bidirectional_needs_even;
  const stage_set s = m.stages;
  if (s.bits == 0) return model_error::stages_empty;
  for (int i = 0; i < kind_count; ++i)
    if (s.has(static_cast<kind>(i)) && !is_layer_stage(static_cast<kind>(i)))
      return model_error::stages_not_layer_kinds;
  if (s.has(kind::block) && s.size() > 1) return model_error::stages_block_and_substages;
  if (!s.has(kind::block) && !s.has(kind::attn)) return model_error::stages_need_attn;
  if ((s.has(kind::dispatch) || s.has(kind::combine)) && !s.has(kind::mlp))
    return model_error::stages_comm_without_mlp;
  // A whole block cannot run on a piece of the sequence (its attention needs every token before
  // it): only a tensor-parallel linear splits one, into pieces of its rows.
  if (m.splits > 1 && m.tp == tp_overlap::off && s.has(kind::block))
    return model_error::splits_need_substages;
  if (m.pieces > 1 &&
      !(s.has(kind::dispatch) && s.has(kind::mlp) && s.has(kind::combine) && s.has(kind::attn)))
    return model_error::pieces_need_experts;
  if (m.max_live < 0) return model_error::bad_memory_bound;
  if (m.tp != tp_overlap::off) {
    if (!s.has(kind::block) || m.ranks != 1 || m.chunks_per_rank != 1 || m.layers != 1 ||
        m.pieces != 1 || m.micro != 1 || m.bidirectional || m.loss != loss_reduce::none)
      return model_error::tp_needs_linear;
    if (m.tp == tp_overlap::none && m.splits != 1) return model_error::tp_pieces;
  }
  if (id_space(m, true) > max_op_ids) return model_error::too_many_ops;
  return model_error::none;
}

}  // namespace weft
