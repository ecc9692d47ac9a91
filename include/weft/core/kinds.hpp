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
/// Forward, fused backward, and the two halves of a split backward (zero-bubble's I and W).
enum class phase : std::uint8_t { F, B, dX, dW };
inline constexpr int phase_count = 4;

/// The class of queue an op occupies on its rank.
enum class stream_class : std::uint8_t { compute, comm };

/// What a kind is to a layer: a stage of its chain, a pipeline transfer, or a collective.
enum class kind_role : std::uint8_t { layer_stage, transfer, collective };

/// Everything the library knows of a kind, in one row. Kinds' names, streams and binding, ops'
/// validity and the dependency rules (`schedule/dependencies.hpp`) derive from this table, so a
/// new kind is an enumerator, a row and a tag type (`kinds::`), and the compiler checks the
/// three agree.
struct kind_traits {
  kind value;
  std::string_view name;
  stream_class stream;
  kind_role role;
  /// Owns parameters: its backward can be split into dX and dW.
  bool weights;
  /// Its `split` numbers pieces as well as splits: the routed-expert path, which pipe-experts
  /// cuts into pieces (and collectives, which may sit on any piece).
  bool in_pieces;
  /// A layer stage's forward input within its layer: the kind whose output it consumes, or
  /// itself for the kinds that can take the layer's input (`layer_ends`). When the layer lacks
  /// the input kind (a dense layer has no dispatch), the layer's entry feeds it.
  kind input;
  /// Runs beside the layer's main path (the shared expert beside the routed experts): its
  /// output joins the layer's, and reading its input does not end the main path there.
  bool beside;
};

inline constexpr kind_traits kind_table[] = {
    // value, name, stream, role, weights, in_pieces, input, beside
    {kind::block, "block", stream_class::compute, kind_role::layer_stage, true, false, kind::block,
     false},
    {kind::attn, "attn", stream_class::compute, kind_role::layer_stage, true, false, kind::attn,
     false},
    {kind::dispatch, "dispatch", stream_class::comm, kind_role::layer_stage, false, true,
     kind::attn, false},
    {kind::mlp, "mlp", stream_class::compute, kind_role::layer_stage, true, true, kind::dispatch,
     false},
    {kind::combine, "combine", stream_class::comm, kind_role::layer_stage, false, true, kind::mlp,
     false},
    {kind::shared, "shared", stream_class::compute, kind_role::layer_stage, true, false, kind::attn,
     true},
    {kind::send, "send", stream_class::comm, kind_role::transfer, false, false, kind::send, false},
    {kind::recv, "recv", stream_class::comm, kind_role::transfer, false, false, kind::recv, false},
    {kind::all_reduce, "all_reduce", stream_class::comm, kind_role::collective, false, true,
     kind::all_reduce, false},
    {kind::all_gather, "all_gather", stream_class::comm, kind_role::collective, false, true,
     kind::all_gather, false},
    {kind::reduce_scatter, "reduce_scatter", stream_class::comm, kind_role::collective, false, true,
     kind::reduce_scatter, false},
};
inline constexpr int kind_count = static_cast<int>(sizeof kind_table / sizeof kind_table[0]);

namespace detail {
constexpr bool kind_table_in_order() noexcept {
  for (int i = 0; i < kind_count; ++i)
    if (static_cast<int>(kind_table[i].value) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::kind_table_in_order(), "kind_table's rows follow the enum's order");

constexpr const kind_traits& traits_of(kind k) noexcept { return kind_table[static_cast<int>(k)]; }

constexpr stream_class stream_of(kind k) noexcept { return traits_of(k).stream; }

/// Kinds whose backward can be split into dX and dW: the ones that own parameters.
constexpr bool has_weights(kind k) noexcept { return traits_of(k).weights; }

constexpr bool is_p2p(kind k) noexcept { return traits_of(k).role == kind_role::transfer; }
constexpr bool is_collective(kind k) noexcept { return traits_of(k).role == kind_role::collective; }
/// Kinds that make up a layer's dependency chain (the rest are transfers and collectives).
constexpr bool is_layer_stage(kind k) noexcept {
  return traits_of(k).role == kind_role::layer_stage;
}

constexpr std::string_view name_of(kind k) noexcept { return traits_of(k).name; }

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
