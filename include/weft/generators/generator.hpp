// A generator is one name: its steps are a constexpr function `gen::NAME(params)`, and
// `inline constexpr generator<gen::NAME> NAME{};` is what users call. The call runs the steps in
// constant evaluation (the compile-time proof, `static_assert(check(NAME(p)))`), and at run time
// through `detail::compiled_steps`: a plain function, so g++ never tries to evaluate a run-time
// call with constant arguments at compile time, and with WEFT_SEPARATE_COMPILATION one copy,
// compiled into `weft::compiled` (WEFT_COMPILE_STEPS in generators/impl/*.ipp), that a trainer's
// file calls instead of compiling (WEFT_EXTERN_STEPS beside the generator).
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft {

namespace detail {
template <class Steps>
struct steps_traits;
template <class Params>
struct steps_traits<schedule (*)(const Params&)> {
  using params = Params;
};
/// The parameters a generator's steps take.
template <auto Steps>
using params_of = typename steps_traits<decltype(Steps)>::params;

/// The steps at run time: not constexpr, so compiled once (or inline in header-only builds).
template <auto Steps>
schedule compiled_steps(const params_of<Steps>& p) {
  return Steps(p);
}
}  // namespace detail

/// A schedule generator made of its steps: callable as a function of the steps' parameters.
template <auto Steps>
struct generator {
  using params = detail::params_of<Steps>;
  constexpr schedule operator()(const params& p) const {
    if (std::is_constant_evaluated()) return Steps(p);
    return detail::compiled_steps<Steps>(p);
  }
};

}  // namespace weft

#ifdef WEFT_SEPARATE_COMPILATION
/// The steps' run-time copy is the library's: a trainer's file does not compile it.
#define WEFT_EXTERN_STEPS(steps)                                        \
  extern template ::weft::schedule weft::detail::compiled_steps<steps>( \
      const ::weft::detail::params_of<steps>&);
#else
#define WEFT_EXTERN_STEPS(steps)
#endif
/// The library's copy of the steps' run-time function (in `weft::compiled` only).
#define WEFT_COMPILE_STEPS(steps)                                \
  template ::weft::schedule weft::detail::compiled_steps<steps>( \
      const ::weft::detail::params_of<steps>&);
