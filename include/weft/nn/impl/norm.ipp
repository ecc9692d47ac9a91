// The bodies of norm.hpp's kernels: inline in header-only builds, compiled once for float and
// double into `weft::nn_compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/nn/norm.hpp>

namespace weft::nn {

template <class T>
matrix<T> rms_norm<T>::forward(const matrix<T>& x, context& c) const {
  c.x = x;
  c.r = ((x.array().square().rowwise().sum() / T(x.cols())) + eps).rsqrt().matrix();
  return (x.array().colwise() * c.r.col(0).array()).rowwise() * g.value.row(0).array();
}

template <class T>
matrix<T> rms_norm<T>::backward_dx(const matrix<T>& dy, context& c) const {
  c.dy = dy;
  const auto d = T(c.x.cols());
  const matrix<T> gdy = (dy.array().rowwise() * g.value.row(0).array()).matrix();
  const matrix<T> dot = (gdy.array() * c.x.array()).rowwise().sum().matrix();  // rows x 1
  matrix<T> dx = gdy.array().colwise() * c.r.col(0).array();
  dx.array() -= c.x.array().colwise() * (c.r.col(0).array().cube() * dot.col(0).array() / d);
  return dx;
}

template <class T>
void rms_norm<T>::backward_dw(const context& c) {
  g.grad.row(0) +=
      (c.dy.array() * (c.x.array().colwise() * c.r.col(0).array())).colwise().sum().matrix();
}

template <class T>
matrix<T> layer_norm<T>::forward(const matrix<T>& x, context& c) const {
  const auto d = T(x.cols());
  const matrix<T> mean = x.rowwise().sum() / d;
  const matrix<T> centred = x.colwise() - mean.col(0);
  c.inv_std = ((centred.array().square().rowwise().sum() / d) + eps).rsqrt().matrix();
  c.xhat = centred.array().colwise() * c.inv_std.col(0).array();
  return ((c.xhat.array().rowwise() * g.value.row(0).array()).rowwise() + b.value.row(0).array())
      .matrix();
}

template <class T>
matrix<T> layer_norm<T>::backward_dx(const matrix<T>& dy, context& c) const {
  c.dy = dy;
  const auto d = T(dy.cols());
  const matrix<T> dxhat = (dy.array().rowwise() * g.value.row(0).array()).matrix();
  const matrix<T> sum_dxhat = dxhat.rowwise().sum();
  const matrix<T> sum_dxhat_xhat = (dxhat.array() * c.xhat.array()).rowwise().sum().matrix();
  matrix<T> dx = dxhat * d;
  dx = dx.colwise() - sum_dxhat.col(0);
  dx.array() -= c.xhat.array().colwise() * sum_dxhat_xhat.col(0).array();
  return (dx.array().colwise() * (c.inv_std.col(0).array() / d)).matrix();
}

template <class T>
void layer_norm<T>::backward_dw(const context& c) {
  g.grad.row(0) += (c.dy.array() * c.xhat.array()).colwise().sum().matrix();
  b.grad.row(0) += c.dy.colwise().sum();
}

}  // namespace weft::nn
