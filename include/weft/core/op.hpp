// An op: a kind and phase plus the values that place it in the model (micro-batch, chunk, layer,
// split) and the stream lane it is issued on.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include <weft/core/kinds.hpp>

namespace weft {

/// "No op": the position, dense id or partner of an op that is not there. One sentinel for every
/// array indexed by ops (programs, placements, timelines, the runtimes).
inline constexpr std::uint32_t npos = 0xffffffffu;

/// A plain value: the checker and the interpreters work on arrays of these. Trivial on purpose
/// (no member initialisers), so arrays of ops cost nothing to allocate in constant evaluation;
/// `op{}` is all zeros: block, F, mb 0, chunk 0, layer 0, split 0, lane 0. The fields are in the
/// order `make_op` takes them and text prints them, so an op shown as a template argument in a
/// compiler's diagnostic (`weft::op{kind::mlp, phase::F, 1, 0, 0, 0, 0}`) reads the same way.
struct op {
  kind k;
  phase ph;
  std::uint16_t mb;     ///< micro-batch
  std::uint8_t chunk;   ///< model chunk (virtual pipeline stage), global over ranks
  std::uint16_t layer;  ///< layer within the chunk
  std::uint8_t split;   ///< sequence split (AMPipe chunk)
  std::uint8_t lane;    ///< which stream of its class the op is issued on (0 = default)

  /// Identity ignores the lane: the same work on another stream is the same op.
  constexpr bool same_work(const op& o) const noexcept {
    return k == o.k && ph == o.ph && chunk == o.chunk && split == o.split && mb == o.mb &&
           layer == o.layer;
  }
  friend constexpr bool operator==(const op&, const op&) = default;
};

/// The largest count each placing field numbers: a model's micro-batches, chunks (so ranks),
/// layers and splits x pieces are numbered by `op`'s fields, so the fields' widths are the
/// limits every layer checks (the model, the generators, the readers, the tool; docs/limits.md).
namespace limits {
inline constexpr int micro = std::numeric_limits<decltype(op::mb)>::max();
inline constexpr int chunks = std::numeric_limits<decltype(op::chunk)>::max();
inline constexpr int ranks = chunks;
inline constexpr int layers = std::numeric_limits<decltype(op::layer)>::max();
inline constexpr int parts = std::numeric_limits<decltype(op::split)>::max();
}  // namespace limits

/// Positional construction with every field given, for library code (designated initialisers
/// that omit fields of a type without member initialisers trip -Wmissing-field-initializers).
constexpr op make_op(kind k, phase ph, int mb_, int chunk_ = 0, int layer_ = 0, int split_ = 0,
                     int lane_ = 0) noexcept {
  return {k,
          ph,
          static_cast<std::uint16_t>(mb_),
          static_cast<std::uint8_t>(chunk_),
          static_cast<std::uint16_t>(layer_),
          static_cast<std::uint8_t>(split_),
          static_cast<std::uint8_t>(lane_)};
}

/// Streams of one rank: a class and a lane. Two ops in one slot must not share one.
struct stream_id {
  stream_class cls = stream_class::compute;
  std::uint8_t lane = 0;
  friend constexpr bool operator==(const stream_id&, const stream_id&) = default;
};
inline constexpr int lanes_per_class = 7;

/// Comm lanes. MoE all-to-alls run on lane 0; pipeline sends on lane 1; receives on lane 2 from
/// a lower rank and on lane 3 from a higher one (`transfer_lane`, schedule/transfers.hpp; for
/// Megatron's batched calls, activations on 2 and gradients on 3, whichever rank sent them).
/// PyTorch runs point-to-point traffic on a communicator per peer: a transfer from one neighbour
/// never waits behind another's, and a blocked send never holds back a receive.
inline constexpr int all_to_all_lane = 0;
inline constexpr int send_lane = 1;
inline constexpr int recv_from_lower_lane = 2;
inline constexpr int recv_from_higher_lane = 3;
/// Pipe-experts multi-stream: a layer's second all-to-all of each direction (combine forward,
/// dispatch backward) on a comm stream of its own, so it never queues behind the first.
inline constexpr int second_all_to_all_lane = 4;
/// The loss all-reduce for logging (MindSpeed's pp-cross-dc-comm-overlap note) on the last stage.
inline constexpr int loss_lane = 5;
/// Megatron's batched calls (`p2p_lanes::by_direction`): gradients sent upstream, beside
/// activations sent downstream on `send_lane`, so a call's sends progress together.
inline constexpr int send_upstream_lane = 6;
static_assert(send_upstream_lane < lanes_per_class);

inline constexpr int streams_per_rank = 2 * lanes_per_class;

constexpr stream_id stream_of(const op& o) noexcept { return {stream_of(o.k), o.lane}; }
constexpr int stream_index(stream_id s) noexcept {
  return static_cast<int>(s.cls) * lanes_per_class + s.lane;
}

// Strong field wrappers so an op reads as `attn(F, mb{1}, layer{3})`, fields in any order.
struct mb {
  int value;
};
struct chunk {
  int value;
};
struct layer {
  int value;
};
struct split {
  int value;
};
struct lane {
  int value;
};

namespace detail {
constexpr void set_field(op& o, mb v) { o.mb = static_cast<std::uint16_t>(v.value); }
constexpr void set_field(op& o, chunk v) { o.chunk = static_cast<std::uint8_t>(v.value); }
constexpr void set_field(op& o, layer v) { o.layer = static_cast<std::uint16_t>(v.value); }
constexpr void set_field(op& o, split v) { o.split = static_cast<std::uint8_t>(v.value); }
constexpr void set_field(op& o, lane v) { o.lane = static_cast<std::uint8_t>(v.value); }

template <class T>
inline constexpr bool is_field =
    std::is_same_v<T, mb> || std::is_same_v<T, chunk> || std::is_same_v<T, layer> ||
    std::is_same_v<T, split> || std::is_same_v<T, lane>;
}  // namespace detail

/// An op that still knows its kind and phase as types (what the DSL's stage calls return).
template <kind_tag Kind, phase_tag Phase>
struct typed_op {
  using kind_type = Kind;
  using phase_type = Phase;
  op value;
  constexpr operator op() const noexcept { return value; }  // NOLINT: the DSL relies on it
};

/// `attn`, `dispatch`, ...: call with a phase and fields to make an op.
template <kind_tag Kind>
struct stage_fn {
  template <phase_tag Phase, class... Fields>
  requires(detail::is_field<Fields>&&...) constexpr typed_op<Kind, Phase> operator()(
      Phase, Fields... fields) const noexcept {
    op o = make_op(Kind::value, Phase::value, 0);
    (detail::set_field(o, fields), ...);
    return {o};
  }
};

inline constexpr stage_fn<kinds::block> block{};
inline constexpr stage_fn<kinds::attn> attn{};
inline constexpr stage_fn<kinds::dispatch> dispatch{};
inline constexpr stage_fn<kinds::mlp> mlp{};
inline constexpr stage_fn<kinds::combine> combine{};
inline constexpr stage_fn<kinds::shared> shared_expert{};
inline constexpr stage_fn<kinds::send> send{};
inline constexpr stage_fn<kinds::recv> recv{};
inline constexpr stage_fn<kinds::all_reduce> all_reduce{};
inline constexpr stage_fn<kinds::all_gather> all_gather{};
inline constexpr stage_fn<kinds::reduce_scatter> reduce_scatter{};

}  // namespace weft
