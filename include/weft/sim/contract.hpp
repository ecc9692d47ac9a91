// Performance contracts the compiler checks:
//
//   constexpr auto c = weft::unit_cost_model::pipeline({.F = 1, .B = 2});
//   static_assert(weft::kept<weft::contract(weft::one_f_one_b({.ranks = 4, .micro = 8}), c,
//                                           {.makespan = 33, .bubble = 0.28})>);
//
// `contract` lowers the schedule, simulates it under the costs and measures it, all in constant
// evaluation, and keeps the figures as integers (so the compiler can print them); `kept<C>`
// instantiates, for a broken contract, a template whose name says which bound and whose
// arguments are the figure and the bound.
#pragma once

#include <limits>

#include <weft/schedule/lower.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

/// What a step may take: a makespan in the cost model's time unit (seconds or schedule units)
/// and a bubble ratio; either left open.
struct performance_bound {
  double makespan = std::numeric_limits<double>::infinity();
  double bubble = 1;
};

/// A contract's outcome, a structural type: whether each bound holds (compared exactly), and
/// the figures and bounds as integers for the compiler to print — makespans in thousandths of
/// the cost model's time unit, the bubble in thousandths of the step, rounded to the nearest.
struct contract_check {
  bool makespan_kept = true, bubble_kept = true;
  long long makespan = 0, makespan_bound = 0;
  long long bubble = 0, bubble_bound = 0;
  constexpr bool kept() const noexcept { return makespan_kept && bubble_kept; }
};

namespace detail {
constexpr long long thousandths(double x) noexcept {
  constexpr auto most = std::numeric_limits<long long>::max();
  if (!(x * 1000 < static_cast<double>(most))) return most;  // an open bound
  const double t = x * 1000 + 0.5;
  const auto n = static_cast<long long>(t);
  return static_cast<double>(n) > t ? n - 1 : n;
}
}  // namespace detail

/// The contract of `s` under `c`: lowered (checked: an illegal schedule throws, so a constant
/// expression fails there), simulated and measured. `s` by value: clang 14 does not free a
/// temporary bound to a reference within a template argument before checking for leaks.
template <time_type T>
constexpr contract_check contract(schedule s, const basic_cost_model<T>& c, performance_bound b) {
  const program p = lower(s);
  const basic_step_metrics<T> m = measure(p, simulate(p, c));
  const double makespan = m.makespan.count();
  return {.makespan_kept = makespan <= b.makespan,
          .bubble_kept = m.bubble_ratio <= b.bubble,
          .makespan = detail::thousandths(makespan),
          .makespan_bound = detail::thousandths(b.makespan),
          .bubble = detail::thousandths(m.bubble_ratio),
          .bubble_bound = detail::thousandths(b.bubble)};
}

namespace diag {
template <long long N>
struct makespan_thousandths {};
template <long long N>
struct bubble_thousandths {};
template <long long N>
struct at_most {};

template <class Figure, class Bound>
struct performance_contract_makespan_over_bound {
  static_assert(sizeof(Figure) == 0,
                "weft: performance contract: the simulated makespan exceeds its bound (see "
                "'performance_contract_makespan_over_bound<makespan_thousandths<...>, "
                "at_most<...>>', thousandths of the cost model's time unit)");
};
template <class Figure, class Bound>
struct performance_contract_bubble_over_bound {
  static_assert(sizeof(Figure) == 0,
                "weft: performance contract: the simulated bubble ratio exceeds its bound (see "
                "'performance_contract_bubble_over_bound<bubble_thousandths<...>, "
                "at_most<...>>', thousandths of the step)");
};
struct contract_kept {};

template <contract_check C>
constexpr auto contract_diagnostic_of() {
  if constexpr (!C.makespan_kept)
    return std::type_identity<performance_contract_makespan_over_bound<
        makespan_thousandths<C.makespan>, at_most<C.makespan_bound>>>{};
  else if constexpr (!C.bubble_kept)
    return std::type_identity<performance_contract_bubble_over_bound<bubble_thousandths<C.bubble>,
                                                                     at_most<C.bubble_bound>>>{};
  else
    return std::type_identity<contract_kept>{};
}
template <contract_check C>
using contract_diagnostic_t = typename decltype(contract_diagnostic_of<C>())::type;
}  // namespace diag

/// True for a kept contract; for a broken one, compilation stops naming the bound, the figure
/// and the bound's value. Use as `static_assert(kept<contract(s, c, {.makespan = ...})>)`.
template <contract_check C>
inline constexpr bool kept = (void(sizeof(diag::contract_diagnostic_t<C>)), C.kept());

}  // namespace weft
