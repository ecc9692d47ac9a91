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

#include <cstdint>
#include <string>
#include <type_traits>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <weft/core/error.hpp>
#include <weft/core/kinds.hpp>
#include <weft/core/op.hpp>

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

/// The (kind, phase) pairs a schedule uses, as a structural value.
struct kind_phase_set {
  std::uint64_t bits = 0;
  constexpr bool has(kind k, phase p) const noexcept {
    return (bits >> (static_cast<int>(k) * phase_count + static_cast<int>(p))) & 1u;
  }
  constexpr kind_phase_set with(kind k, phase p) const noexcept {
    return {bits | (std::uint64_t{1} << (static_cast<int>(k) * phase_count + static_cast<int>(p)))};
  }
  friend constexpr bool operator==(kind_phase_set, kind_phase_set) = default;
};

/// The (kind, phase) pairs of a range of ops (a schedule's `ops`, or any container of `op`).
template <class Ops>
constexpr kind_phase_set uses_ops(const Ops& ops) noexcept {
  kind_phase_set s;
  for (const op& o : ops) s = s.with(o.k, o.ph);
  return s;
}
/// The (kind, phase) pairs anything with an `ops` member uses (a schedule, a fixed schedule).
template <class Sched>
requires requires(const Sched& s) { s.ops; }
constexpr kind_phase_set uses(const Sched& s) noexcept { return uses_ops(s.ops); }

namespace detail {
inline constexpr auto all_kinds =
    boost::hana::tuple_t<kinds::block, kinds::attn, kinds::dispatch, kinds::mlp, kinds::combine,
                         kinds::shared, kinds::send, kinds::recv, kinds::all_reduce,
                         kinds::all_gather, kinds::reduce_scatter>;
inline constexpr auto all_phases = boost::hana::tuple_t<phases::forward, phases::backward,
                                                        phases::backward_dx, phases::backward_dw>;
}  // namespace detail

namespace diag {
template <class Model, class Kind, class Phase>
struct model_lacks_kernel {
  static_assert(has_kernel<Model, Kind, Phase>,
                "weft: model binding: the model has no kernel for a (kind, phase) the schedule "
                "uses; add `void operator()(Kind, Phase, weft::kernel_call&)` (the model, kind "
                "and phase are the arguments of 'model_lacks_kernel<Model, Kind, Phase>')");
};
}  // namespace diag

/// True when `Model` has a kernel for every pair in `Used`; otherwise compilation stops at the
/// first missing pair with `diag::model_lacks_kernel<Model, Kind, Phase>`.
template <class Model, kind_phase_set Used, class Call = kernel_call>
inline constexpr bool binds_all = [] {
  bool all = true;
  boost::hana::for_each(detail::all_kinds, [&](auto k) {
    using Kind = typename std::remove_cvref_t<decltype(k)>::type;
    boost::hana::for_each(detail::all_phases, [&](auto p) {
      using Phase = typename std::remove_cvref_t<decltype(p)>::type;
      if constexpr (Used.has(Kind::value, Phase::value) && !has_kernel<Model, Kind, Phase, Call>) {
        (void)sizeof(diag::model_lacks_kernel<Model, Kind, Phase>);
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
