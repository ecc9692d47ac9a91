// y = x W + b. The backward splits: `backward_dx` gives the input gradient and keeps what the
// weight gradient needs; `backward_dw` accumulates it later (zero-bubble's deferred W).
#pragma once

#include <weft/nn/tensor.hpp>

namespace weft::nn {

template <class T>
struct linear {
  param<T> w, b;  ///< w: in x out, b: 1 x out

  struct context {
    matrix<T> x, dy;
  };

  matrix<T> forward(const matrix<T>& x, context& c) const {
    c.x = x;
    return (x * w.value).rowwise() + b.value.row(0);
  }
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const {
    c.dy = dy;
    return dy * w.value.transpose();
  }
  void backward_dw(const context& c) {
    w.grad.noalias() += c.x.transpose() * c.dy;
    b.grad.row(0) += c.dy.colwise().sum();
  }
};

}  // namespace weft::nn
