// RMSNorm and LayerNorm over each row (token), with a learned scale (and shift for LayerNorm).
#pragma once

#include <weft/config.hpp>
#include <weft/nn/tensor.hpp>

namespace weft::nn {

template <class T>
struct rms_norm {
  param<T> g;  ///< 1 x d
  T eps = T(1e-6);

  struct context {
    matrix<T> x;
    matrix<T> r;  ///< per row, 1 / rms
    matrix<T> dy;
  };

  matrix<T> forward(const matrix<T>& x, context& c) const;
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const;
  void backward_dw(const context& c);
};

template <class T>
struct layer_norm {
  param<T> g, b;  ///< 1 x d each
  T eps = T(1e-5);

  struct context {
    matrix<T> xhat;
    matrix<T> inv_std;  ///< rows x 1
    matrix<T> dy;
  };

  matrix<T> forward(const matrix<T>& x, context& c) const;
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const;
  void backward_dw(const context& c);
};

#ifdef WEFT_SEPARATE_COMPILATION
// Compiled once for float and double into weft::nn_compiled (src/nn_kernels.cpp).
extern template struct rms_norm<float>;
extern template struct rms_norm<double>;
extern template struct layer_norm<float>;
extern template struct layer_norm<double>;
#endif

}  // namespace weft::nn

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/nn/impl/norm.ipp>
#endif
