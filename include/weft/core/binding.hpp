// Binding a model to a schedule: a model implements one kernel per (kind, phase) by overloading
//
//   struct my_model {
//     void operator()(weft::kinds::attn, weft::phases::forward, weft::kernel_call&);
//     ...
//   };
//
// and `static_assert(weft::binds_all<my_model, weft::uses(sched)>)` proves at compile time that
// it has every kernel the schedule needs, naming the first missing (kind, phase) otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/core/kinds.hpp>
#include <weft/core/op.hpp>
#include <weft/core/uses.hpp>

namespace weft {

/// What a kernel is told about the op it runs. Runtimes pass a type derived from this.
struct kernel_call {
  weft::op op;
  int rank;
};

/// A model has a kernel for (Kind, Phase) when it can be called with those tags and a call record.
template <class Model, class Kind, class Phase, class Call = kernel_call>
concept has_kernel = kind_tag<Kind> && phase_tag<Phase> &&
    requires(Model& m, Kind k, Phase p, Call& c) {
  m(k, p, c);
};

namespace detail {
// Every (kind, phase) pair as one number, k * phase_count + p, and its tags, from the kind table
// (a new kind needs no entry here).
inline constexpr std::size_t pair_count = static_cast<std::size_t>(kind_count * phase_count);
template <std::size_t I>
using kind_of_pair = kinds::tag<static_cast<kind>(I / phase_count)>;
template <std::size_t I>
using phase_of_pair = phases::tag<static_cast<phase>(I % phase_count)>;
}  // namespace detail

namespace detail {
template <class Model, class Call, std::size_t... I>
constexpr bool any_kernel(std::index_sequence<I...>) {
  return (has_kernel<Model, kind_of_pair<I>, phase_of_pair<I>, Call> || ...);
}
}  // namespace detail

/// A model object with at least one kernel taking `Call`: what a runtime can drive at all (which
/// kernels a given schedule needs is `binds_all`'s to say).
template <class Model, class Call = kernel_call>
concept has_some_kernel = std::is_class_v<Model> &&
    detail::any_kernel<Model, Call>(std::make_index_sequence<detail::pair_count>{});

namespace diag {
/// Stops compilation, naming the model, kind, phase and call, when `Bound` is false (by default:
/// when the model has no kernel for the pair). A plain bool, so the error is the message alone.
template <class Model, class Kind, class Phase, class Call = kernel_call,
          bool Bound = has_kernel<Model, Kind, Phase, Call>>
struct model_lacks_kernel {
  static_assert(
      Bound,
      "weft: model binding: the model has no kernel for a (kind, phase) the schedule "
      "uses; add `void operator()(Kind, Phase, Call&)` (the model, kind, phase and "
      "call are the first arguments of 'model_lacks_kernel<Model, Kind, Phase, Call, false>')");
  static constexpr bool value = Bound;
};
}  // namespace diag

namespace detail {
// One pair: bound when `Used` lacks it or the model has its kernel.
template <class Model, kind_phase_set Used, class Call, std::size_t I>
inline constexpr bool pair_bound = !Used.has(kind_of_pair<I>::value, phase_of_pair<I>::value) ||
                                   has_kernel<Model, kind_of_pair<I>, phase_of_pair<I>, Call>;
// Calls `fn(Kind{}, Phase{})` for the tags of (k, ph) if the model has that kernel; false if not.
template <class Model, class Call, std::size_t I, class Fn>
constexpr bool call_if_pair(kind k, phase ph, Fn& fn) {
  using Kind = kind_of_pair<I>;
  using Phase = phase_of_pair<I>;
  if constexpr (has_kernel<Model, Kind, Phase, Call>) {
    if (Kind::value == k && Phase::value == ph) {
      fn(Kind{}, Phase{});
      return true;
    }
  }
  return false;
}
template <class Model, class Call, class Fn, std::size_t... I>
constexpr bool with_kernel_tags(kind k, phase ph, Fn&& fn, std::index_sequence<I...>) {
  return (call_if_pair<Model, Call, I>(k, ph, fn) || ...);
}
template <class Model, class Call, class Fn>
constexpr bool with_kernel_tags(kind k, phase ph, Fn&& fn) {
  return with_kernel_tags<Model, Call>(k, ph, fn, std::make_index_sequence<pair_count>{});
}
}  // namespace detail

namespace detail {
// The first pair `Used` has and the model lacks, or pair_count when there is none.
template <class Model, kind_phase_set Used, class Call, std::size_t... I>
constexpr std::size_t first_unbound() {
  std::size_t first = pair_count;
  ((first == pair_count && !pair_bound<Model, Used, Call, I> ? first = I : first), ...);
  return first;
}
// Its diagnostic: the check of that pair, unbound, or of none (pair 0, bound) — named only.
template <class Model, class Call, std::size_t J>
using check_of = std::conditional_t<
    J == pair_count, diag::model_lacks_kernel<Model, kind_of_pair<0>, phase_of_pair<0>, Call, true>,
    diag::model_lacks_kernel<Model, kind_of_pair<(J < pair_count ? J : 0)>,
                             phase_of_pair<(J < pair_count ? J : 0)>, Call, false>>;
}  // namespace detail

/// True when `Model` has a kernel for every pair in `Used`; otherwise compilation stops at the
/// first missing pair with `diag::model_lacks_kernel<Model, Kind, Phase, Call>`. (`Pairs`
/// numbers the (kind, phase) pairs; leave it.)
template <class Model, kind_phase_set Used, class Call = kernel_call,
          class Pairs = std::make_index_sequence<detail::pair_count>>
inline constexpr bool binds_all = false;
// A plain fold over the pairs, in the variable's own initializer: the error of the first unbound
// pair comes a few lines from the user's static_assert, and the result does not read the check,
// so no second error follows.
template <class Model, kind_phase_set Used, class Call, std::size_t... I>
inline constexpr bool binds_all<Model, Used, Call, std::index_sequence<I...>> =
    (void(sizeof(detail::check_of<Model, Call, detail::first_unbound<Model, Used, Call, I...>()>)),
     (detail::pair_bound<Model, Used, Call, I> && ...));

/// Whether `Model` has a kernel for (k, ph): the run-time question `binds_all` answers at
/// compile time, for schedules only known at run time.
template <class Model, class Call = kernel_call>
constexpr bool binds(kind k, phase ph) {
  return detail::with_kernel_tags<Model, Call>(k, ph, [](auto, auto) {});
}

/// Calls the model's kernel for `o`'s (kind, phase). Throws `config_error` naming the pair when
/// the model has none (a schedule known at compile time gets that as a `binds_all` error).
template <class Model, class Call>
void invoke_kernel(Model& model, const op& o, Call& call) {
  if (!detail::with_kernel_tags<Model, Call>(o.k, o.ph, [&](auto k, auto p) { model(k, p, call); }))
    throw config_error("weft: model binding: the model has no kernel for " +
                       std::string(name_of(o.k)) + " " + std::string(name_of(o.ph)));
}

}  // namespace weft
