// Multi-head self-attention with a mask (causal or any boolean pattern). A query row that may
// attend to no key gets a zero output (and passes no gradient), rather than NaN.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <weft/nn/tensor.hpp>

namespace weft::nn {

/// mask(i, j): query i may attend to key j.
using attention_mask = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline attention_mask causal_mask(Eigen::Index s) {
  attention_mask m(s, s);
  for (Eigen::Index i = 0; i < s; ++i)
    for (Eigen::Index j = 0; j < s; ++j) m(i, j) = j <= i;
  return m;
}

template <class T>
struct attention {
  param<T> wq, wk, wv, wo;  ///< d x d each
  int heads = 1;

  struct context {
    matrix<T> x, q, k, v, o, dy, dq, dk, dv;
    std::vector<matrix<T>> p;  ///< per head: softmax probabilities
  };

  matrix<T> forward(const matrix<T>& x, const attention_mask& mask, context& c) const {
    const Eigen::Index s = x.rows(), d = x.cols(), dh = d / heads;
    if (d % heads != 0) throw std::invalid_argument("weft: attention: heads must divide the width");
    if (mask.rows() != s || mask.cols() != s)
      throw std::invalid_argument("weft: attention: the mask must be tokens x tokens");
    const T scale = T(1) / std::sqrt(T(dh));
    c.x = x;
    c.q = x * wq.value;
    c.k = x * wk.value;
    c.v = x * wv.value;
    c.o = matrix<T>::Zero(s, d);
    c.p.assign(static_cast<std::size_t>(heads), matrix<T>());
    for (int h = 0; h < heads; ++h) {
      matrix<T> sc = c.q.middleCols(h * dh, dh) * c.k.middleCols(h * dh, dh).transpose() * scale;
      matrix<T>& p = c.p[static_cast<std::size_t>(h)];
      p = matrix<T>::Zero(s, s);
      for (Eigen::Index i = 0; i < s; ++i) {
        T top = -std::numeric_limits<T>::infinity();
        for (Eigen::Index j = 0; j < s; ++j)
          if (mask(i, j)) top = std::max(top, sc(i, j));
        if (top == -std::numeric_limits<T>::infinity()) continue;  // attends to nothing
        T sum = 0;
        for (Eigen::Index j = 0; j < s; ++j)
          if (mask(i, j)) sum += p(i, j) = std::exp(sc(i, j) - top);
        p.row(i) /= sum;
      }
      c.o.middleCols(h * dh, dh) = p * c.v.middleCols(h * dh, dh);
    }
    return c.o * wo.value;
  }

  matrix<T> backward_dx(const matrix<T>& dy, context& c) const {
    const Eigen::Index s = c.x.rows(), d = c.x.cols(), dh = d / heads;
    const T scale = T(1) / std::sqrt(T(dh));
    c.dy = dy;
    const matrix<T> dout = dy * wo.value.transpose();
    c.dq = matrix<T>::Zero(s, d);
    c.dk = matrix<T>::Zero(s, d);
    c.dv = matrix<T>::Zero(s, d);
    for (int h = 0; h < heads; ++h) {
      const matrix<T>& p = c.p[static_cast<std::size_t>(h)];
      const auto doh = dout.middleCols(h * dh, dh);
      const matrix<T> dp = doh * c.v.middleCols(h * dh, dh).transpose();
      c.dv.middleCols(h * dh, dh) = p.transpose() * doh;
      const matrix<T> rows = (dp.array() * p.array()).rowwise().sum().matrix();
      const matrix<T> ds = (p.array() * (dp.colwise() - rows.col(0)).array()).matrix() * scale;
      c.dq.middleCols(h * dh, dh) = ds * c.k.middleCols(h * dh, dh);
      c.dk.middleCols(h * dh, dh) = ds.transpose() * c.q.middleCols(h * dh, dh);
    }
    return c.dq * wq.value.transpose() + c.dk * wk.value.transpose() + c.dv * wv.value.transpose();
  }

  void backward_dw(const context& c) {
    wq.grad.noalias() += c.x.transpose() * c.dq;
    wk.grad.noalias() += c.x.transpose() * c.dk;
    wv.grad.noalias() += c.x.transpose() * c.dv;
    wo.grad.noalias() += c.o.transpose() * c.dy;
  }
};

}  // namespace weft::nn
