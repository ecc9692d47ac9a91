// Runs whole-block schedules of the dense model (dense_model.hpp) for real: the stream program of
// `lower` on a world of ranks x streams (runner.hpp), each block op bound to its stage's layers,
// activations and gradients moving between pipeline ranks through the communication interface.
// The loss and every gradient match the serial reference run bit for bit.
#pragma once

#include <memory>

#include <weft/config.hpp>
#include <weft/exec/dense_model.hpp>
#include <weft/exec/run_result.hpp>
#include <weft/exec/runner.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::exec {

namespace detail {
template <class T>
class dense_run;
}

/// Runs whole-block schedules on `model`, fp32 or fp64.
template <class T>
class dense_executor {
  static_assert(rt::wire_value<T>, "weft: the runtime moves fp32 or fp64 data");

 public:
  explicit dense_executor(const dense_model<T>& model, run_options opt = {});
  ~dense_executor();
  dense_executor(dense_executor&&) noexcept;
  dense_executor& operator=(dense_executor&&) noexcept;

  /// Lowers `s` (refusing it when it is not legal) and runs it.
  run_result<T> run(const schedule& s);
  /// Runs a program lowered already — `lower_unchecked` included, to see what the runtime does
  /// with a schedule the checker rejects.
  run_result<T> run(program prog);

 private:
  std::unique_ptr<detail::dense_run<T>> run_;
};

#ifdef WEFT_SEPARATE_COMPILATION
extern template class dense_executor<float>;
extern template class dense_executor<double>;
#endif

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/executor.ipp>
#endif
