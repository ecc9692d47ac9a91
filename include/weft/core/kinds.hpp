// The vocabulary of stage kinds and phases, as values (for graph work) and as types (for binding).
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

namespace weft {

/// What an op does. Compute kinds occupy a compute stream, comm kinds a comm stream.
enum class kind : std::uint8_t {
  block,           ///< a whole transformer chunk (pipeline-level schedules: PyTorch's F/B/I/W)
  attn,            ///< attention (with its norm)
  dispatch,        ///< all-to-all that sends tokens to their experts
  mlp,             ///< routed experts
  combine,         ///< all-to-all that brings expert outputs back
  shared,          ///< shared expert (runs beside the routed path)
  send,            ///< pipeline p2p send of a chunk's output (F) or input gradient (B)
  recv,            ///< pipeline p2p receive, the peer of `send`
  all_reduce,      ///< collective; with phase dW it is the gradient sync of its chunk
  all_gather,      ///< collective (tensor parallelism), no derived dependencies
  reduce_scatter,  ///< collective (tensor parallelism), no derived dependencies
};
inline constexpr int kind_count = 11;

/// Forward, fused backward, and the two halves of a split backward (zero-bubble's I and W).
enum class phase : std::uint8_t { F, B, dX, dW };
inline constexpr int phase_count = 4;

/// The class of queue an op occupies on its rank.
enum class stream_class : std::uint8_t { compute, comm };

constexpr stream_class stream_of(kind k) noexcept {
  switch (k) {
    case kind::block:
    case kind::attn:
    case kind::mlp:
    case kind::shared:
      return stream_class::compute;
    default:
      return stream_class::comm;
  }
}

/// Kinds whose backward can be split into dX and dW: the ones that own parameters.
constexpr bool has_weights(kind k) noexcept { return stream_of(k) == stream_class::compute; }

constexpr bool is_p2p(kind k) noexcept { return k == kind::send || k == kind::recv; }
constexpr bool is_collective(kind k) noexcept {
  return k == kind::all_reduce || k == kind::all_gather || k == kind::reduce_scatter;
}
/// Kinds that make up a layer's dependency chain (the rest are transfers and collectives).
constexpr bool is_layer_stage(kind k) noexcept { return !is_p2p(k) && !is_collective(k); }

constexpr std::string_view name_of(kind k) noexcept {
  constexpr std::string_view names[kind_count] = {
      "block", "attn", "dispatch",   "mlp",        "combine",       "shared",
      "send",  "recv", "all_reduce", "all_gather", "reduce_scatter"};
  return names[static_cast<int>(k)];
}

constexpr std::string_view name_of(phase p) noexcept {
  constexpr std::string_view names[phase_count] = {"F", "B", "dX", "dW"};
  return names[static_cast<int>(p)];
}

constexpr std::string_view name_of(stream_class s) noexcept {
  return s == stream_class::compute ? "compute" : "comm";
}

/// Kinds as types, so that a model binds one kernel per (kind, phase) by overloading.
namespace kinds {
template <kind K>
struct tag {
  static constexpr weft::kind value = K;
  static constexpr weft::stream_class stream = stream_of(K);
};
using block = tag<kind::block>;
using attn = tag<kind::attn>;
using dispatch = tag<kind::dispatch>;
using mlp = tag<kind::mlp>;
using combine = tag<kind::combine>;
using shared = tag<kind::shared>;
using send = tag<kind::send>;
using recv = tag<kind::recv>;
using all_reduce = tag<kind::all_reduce>;
using all_gather = tag<kind::all_gather>;
using reduce_scatter = tag<kind::reduce_scatter>;
}  // namespace kinds

/// Phases as types; `F`, `B`, `dX`, `dW` are their values in the DSL.
namespace phases {
template <phase P>
struct tag {
  static constexpr weft::phase value = P;
};
using forward = tag<phase::F>;
using backward = tag<phase::B>;
using backward_dx = tag<phase::dX>;
using backward_dw = tag<phase::dW>;
}  // namespace phases

/// The name of a phase's tag type in `weft::phases` (for messages that show code to write).
constexpr std::string_view tag_name_of(phase p) noexcept {
  constexpr std::string_view names[phase_count] = {"forward", "backward", "backward_dx",
                                                   "backward_dw"};
  return names[static_cast<int>(p)];
}

inline constexpr phases::forward F{};
inline constexpr phases::backward B{};
inline constexpr phases::backward_dx dX{};
inline constexpr phases::backward_dw dW{};

template <class T>
concept kind_tag = requires {
  { T::value } -> std::convertible_to<kind>;
}
&&std::same_as<T, kinds::tag<T::value>>;

template <class T>
concept phase_tag = requires {
  { T::value } -> std::convertible_to<phase>;
}
&&std::same_as<T, phases::tag<T::value>>;

}  // namespace weft
