// Runs MoE sub-stage schedules (attn, dispatch, mlp, combine, shared; F, B, dX, dW) of the MoE
// model (moe_model.hpp) for real, with or without fb-overlap: the stream program of `lower` on
// ranks x streams (runner.hpp), each op bound to its moe_layer sub-stage, dispatch and combine
// as all-to-alls over the expert-parallel group of every pipeline rank, activations and
// gradients between pipeline ranks as point-to-point transfers. The loss and every gradient
// match the serial reference within rounding (fp32 or fp64); repeated runs are equal bit for bit.
#pragma once

#include <memory>

#include <weft/config.hpp>
#include <weft/exec/moe_model.hpp>
#include <weft/exec/run_result.hpp>
#include <weft/exec/runner.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::exec {

namespace detail {
template <class T>
class moe_run;
}

/// Runs schedules of MoE sub-stages on `model`, fp32 or fp64.
template <class T>
class moe_executor {
  static_assert(rt::wire_value<T>, "weft: the runtime moves fp32 or fp64 data");

 public:
  explicit moe_executor(const moe_model<T>& model, run_options opt = {});
  ~moe_executor();
  moe_executor(moe_executor&&) noexcept;
  moe_executor& operator=(moe_executor&&) noexcept;

  /// Runs `s` on ranks x replicas (world rank = rank * replicas + replica). Throws
  /// `config_error` when the schedule does not fit the model, `run_error` when the run fails.
  run_result<T> run(const schedule& s);

 private:
  std::unique_ptr<detail::moe_run<T>> run_;
};

#ifdef WEFT_SEPARATE_COMPILATION
extern template class moe_executor<float>;
extern template class moe_executor<double>;
#endif

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/moe_executor.ipp>
#endif
