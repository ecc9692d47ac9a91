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

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

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
// Every kind's and phase's tag, from the kind table (a new kind needs no entry here).
template <std::size_t... I>
constexpr auto kind_tags(std::index_sequence<I...>) {
  return boost::hana::tuple_t<kinds::tag<static_cast<kind>(I)>...>;
}
inline constexpr auto all_kinds = kind_tags(std::make_index_sequence<kind_count>{});
inline constexpr auto all_phases = boost::hana::tuple_t<phases::forward, phases::backward,
                                                        phases::backward_dx, phases::backward_dw>;
}  // namespace detail

namespace diag {
template <class Model, class Kind, class Phase, class Call = kernel_call>
struct model_lacks_kernel {
  static_assert(has_kernel<Model, Kind, Phase, Call>,
                "weft: model binding: the model has no kernel for a (kind, phase) the schedule "
                "uses; add `void operator()(Kind, Phase, Call&)` (the model, kind, phase and "
                "call are the arguments of 'model_lacks_kernel<Model, Kind, Phase, Call>')");
};
}  // namespace diag

/// True when `Model` has a kernel for every pair in `Used`; otherwise compilation stops at the
/// first missing pair with `diag::model_lacks_kernel<Model, Kind, Phase, Call>`.
template <class Model, kind_phase_set Used, class Call = kernel_call>
inline constexpr bool binds_all = [] {
  bool all = true;
  boost::hana::for_each(detail::all_kinds, [&](auto k) {
    using Kind = typename std::remove_cvref_t<decltype(k)>::type;
    boost::hana::for_each(detail::all_phases, [&](auto p) {
      using Phase = typename std::remove_cvref_t<decltype(p)>::type;
      if constexpr (Used.has(Kind::value, Phase::value) && !has_kernel<Model, Kind, Phase, Call>) {
        (void)sizeof(diag::model_lacks_kernel<Model, Kind, Phase, Call>);
        all = false;
      }
    });
  });
  return all;
}();

namespace detail {
// Calls `fn(Kind{}, Phase{})` for the tags of (k, ph) if the model has that kernel; false if not.
template <class Model, class Call, class Fn>
constexpr bool with_kernel_tags(kind k, phase ph, Fn&& fn) {
  bool found = false;
  boost::hana::for_each(all_kinds, [&](auto kt) {
    using Kind = typename std::remove_cvref_t<decltype(kt)>::type;
    if (Kind::value != k) return;
    boost::hana::for_each(all_phases, [&](auto pt) {
      using Phase = typename std::remove_cvref_t<decltype(pt)>::type;
      if constexpr (has_kernel<Model, Kind, Phase, Call>) {
        if (Phase::value != ph) return;
        found = true;
        fn(Kind{}, Phase{});
      }
    });
  });
  return found;
}
}  // namespace detail

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
