// A tiny dense transformer for executing whole-block schedules: each model stage is a stack of
// pre-norm layers (RMSNorm, causal attention, residual; RMSNorm, MLP, residual), the loss is the
// mean squared error of the last stage's output against a target. Parameters and data come from
// a seed, so a pipelined run and the serial reference start from the same numbers.
#pragma once

#include <cstdint>
#include <vector>

#include <weft/config.hpp>
#include <weft/nn/attention.hpp>
#include <weft/nn/experts.hpp>
#include <weft/nn/norm.hpp>

namespace weft::exec {

struct dense_config {
  int stages = 2;  ///< model stages (a pipeline's chunks carry them)
  int layers = 1;  ///< layers per stage
  int tokens = 8;  ///< per micro-batch
  int width = 8;
  int heads = 2;
  int ffn = 16;
  int micro = 4;
  std::uint64_t seed = 1;
};

template <class T>
struct dense_layer {
  nn::rms_norm<T> norm1, norm2;
  nn::attention<T> attn;
  nn::expert_mlp<T> mlp;

  struct context {
    typename nn::rms_norm<T>::context n1, n2;
    typename nn::attention<T>::context a;
    typename nn::expert_mlp<T>::context m;
  };

  nn::matrix<T> forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c) const {
    const nn::matrix<T> h = x + attn.forward(norm1.forward(x, c.n1), mask, c.a);
    return h + mlp.forward(norm2.forward(h, c.n2), c.m);
  }
  /// The input gradient; keeps what `backward_dw` needs in `c`.
  nn::matrix<T> backward_dx(const nn::matrix<T>& dy, context& c) const {
    const nn::matrix<T> dh = dy + norm2.backward_dx(mlp.backward_dx(dy, c.m), c.n2);
    return dh + norm1.backward_dx(attn.backward_dx(dh, c.a), c.n1);
  }
  void backward_dw(const context& c) {
    norm1.backward_dw(c.n1);
    attn.backward_dw(c.a);
    norm2.backward_dw(c.n2);
    mlp.backward_dw(c.m);
  }
  template <class Fn>
  void each_param(Fn&& fn) {
    for (nn::param<T>* p :
         {&norm1.g, &norm2.g, &attn.wq, &attn.wk, &attn.wv, &attn.wo, &mlp.w1, &mlp.w2})
      fn(*p);
  }
};

/// Everything seeded: the layers of every stage, every micro-batch's input and target.
template <class T>
struct dense_model {
  dense_config cfg;
  std::vector<std::vector<dense_layer<T>>> stages;  ///< [stage][layer]
  std::vector<nn::matrix<T>> inputs, targets;       ///< [micro-batch]
  nn::attention_mask mask;

  explicit dense_model(const dense_config& c);

  /// The loss and every gradient of a serial run: each micro-batch through every stage forward
  /// and back, one after the other. The reference a pipelined run must match.
  T serial_step();
};

#ifdef WEFT_SEPARATE_COMPILATION
extern template struct dense_model<float>;
extern template struct dense_model<double>;
#endif

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/dense_model.ipp>
#endif
