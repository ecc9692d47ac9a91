// The bodies of attention.hpp's kernels: inline in header-only builds, compiled once for float
// and double into `weft::nn_compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/nn/attention.hpp>

namespace weft::nn {

template <class T>
matrix<T> attend(const matrix<T>& q, const matrix<T>& k, const matrix<T>& v,
                 const attention_mask& mask, Eigen::Index first, int heads,
                 std::vector<matrix<T>>& p) {
  const Eigen::Index rows = q.rows(), s = k.rows(), d = q.cols(), dh = d / heads;
  const T scale = T(1) / std::sqrt(T(dh));
  matrix<T> o = matrix<T>::Zero(rows, d);
  p.assign(static_cast<std::size_t>(heads), matrix<T>());
  for (int h = 0; h < heads; ++h) {
    matrix<T> sc = q.middleCols(h * dh, dh) * k.middleCols(h * dh, dh).transpose() * scale;
    matrix<T>& ph = p[static_cast<std::size_t>(h)];
    ph = matrix<T>::Zero(rows, s);
    for (Eigen::Index i = 0; i < rows; ++i) {
      T top = -std::numeric_limits<T>::infinity();
      for (Eigen::Index j = 0; j < s; ++j)
        if (mask(first + i, j)) top = std::max(top, sc(i, j));
      if (top == -std::numeric_limits<T>::infinity()) continue;  // attends to nothing
      T sum = 0;
      for (Eigen::Index j = 0; j < s; ++j)
        if (mask(first + i, j)) sum += ph(i, j) = std::exp(sc(i, j) - top);
      ph.row(i) /= sum;
    }
    o.middleCols(h * dh, dh) = ph * v.middleCols(h * dh, dh);
  }
  return o;
}

template <class T>
void attend_backward(const matrix<T>& dout, const matrix<T>& q, const matrix<T>& k,
                     const matrix<T>& v, const std::vector<matrix<T>>& p, int heads, matrix<T>& dq,
                     matrix<T>& dk, matrix<T>& dv) {
  const Eigen::Index s = k.rows(), n = q.rows(), d = q.cols(), dh = d / heads;
  const T scale = T(1) / std::sqrt(T(dh));
  dq = matrix<T>::Zero(n, d);
  dk = matrix<T>::Zero(s, d);
  dv = matrix<T>::Zero(s, d);
  for (int h = 0; h < heads; ++h) {
    const matrix<T>& ph = p[static_cast<std::size_t>(h)];
    const auto doh = dout.middleCols(h * dh, dh);
    const matrix<T> dp = doh * v.middleCols(h * dh, dh).transpose();
    dv.middleCols(h * dh, dh) = ph.transpose() * doh;
    const matrix<T> rows = (dp.array() * ph.array()).rowwise().sum().matrix();
    const matrix<T> ds = (ph.array() * (dp.colwise() - rows.col(0)).array()).matrix() * scale;
    dq.middleCols(h * dh, dh) = ds * k.middleCols(h * dh, dh);
    dk.middleCols(h * dh, dh) = ds.transpose() * q.middleCols(h * dh, dh);
  }
}

template <class T>
matrix<T> attention<T>::forward(const matrix<T>& x, const attention_mask& mask, context& c,
                                Eigen::Index first, Eigen::Index rows) const {
  const Eigen::Index s = x.rows(), d = x.cols();
  if (d % heads != 0) throw config_error("weft: attention: heads must divide the width");
  if (mask.rows() != s || mask.cols() != s)
    throw config_error("weft: attention: the mask must be tokens x tokens");
  if (first < 0 || rows < 0 || first + rows > s)
    throw config_error("weft: attention: the query rows must lie within the tokens");
  c.x = x;
  c.first = first;
  c.q = x.middleRows(first, rows) * wq.value;
  c.k = x * wk.value;
  c.v = x * wv.value;
  c.o = attend(c.q, c.k, c.v, mask, first, heads, c.p);
  return c.o * wo.value;
}

template <class T>
matrix<T> attention<T>::backward_dx(const matrix<T>& dy, context& c) const {
  const Eigen::Index s = c.x.rows(), n = c.q.rows();
  c.dy = dy;
  attend_backward<T>(dy * wo.value.transpose(), c.q, c.k, c.v, c.p, heads, c.dq, c.dk, c.dv);
  if (n == s)
    return c.dq * wq.value.transpose() + c.dk * wk.value.transpose() + c.dv * wv.value.transpose();
  matrix<T> dx = c.dk * wk.value.transpose() + c.dv * wv.value.transpose();
  dx.middleRows(c.first, n) += c.dq * wq.value.transpose();
  return dx;
}

template <class T>
void attention<T>::backward_dw(const context& c) {
  wq.grad.noalias() += c.x.middleRows(c.first, c.q.rows()).transpose() * c.dq;
  wk.grad.noalias() += c.x.transpose() * c.dk;
  wv.grad.noalias() += c.x.transpose() * c.dv;
  wo.grad.noalias() += c.o.transpose() * c.dy;
}

}  // namespace weft::nn
