// The bodies of experts.hpp's kernels: inline in header-only builds, compiled once for float and
// double into `weft::nn_compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include <weft/nn/experts.hpp>

namespace weft::nn {

template <class T>
typename router<T>::choice router<T>::forward(const matrix<T>& x, context& c) const {
  const Eigen::Index n = x.rows(), e = w.value.cols();
  c.x = x;
  matrix<T> logits = x * w.value;
  c.probs.resize(n, e);
  for (Eigen::Index i = 0; i < n; ++i) {
    const T top = logits.row(i).maxCoeff();
    c.probs.row(i) = (logits.row(i).array() - top).exp().matrix();
    c.probs.row(i) /= c.probs.row(i).sum();
  }
  c.chosen.expert.assign(static_cast<std::size_t>(n * k), 0);
  c.chosen.gate.resize(n, k);
  std::vector<int> order(static_cast<std::size_t>(e));
  for (Eigen::Index i = 0; i < n; ++i) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return c.probs(i, a) > c.probs(i, b); });
    for (int j = 0; j < k; ++j) {
      c.chosen.expert[static_cast<std::size_t>(i * k + j)] = order[static_cast<std::size_t>(j)];
      c.chosen.gate(i, j) = c.probs(i, order[static_cast<std::size_t>(j)]);
    }
  }
  c.chosen.kept.assign(static_cast<std::size_t>(n * k), 1);
  if (capacity_factor > 0) {
    const long long cap = capacity(n);
    std::vector<long long> taken(static_cast<std::size_t>(e), 0);
    for (int j = 0; j < k; ++j)
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto pair = static_cast<std::size_t>(i * k + j);
        if (taken[static_cast<std::size_t>(c.chosen.expert[pair])]++ >= cap)
          c.chosen.kept[pair] = 0;
      }
  }
  return c.chosen;
}

template <class T>
matrix<T> router<T>::backward_dx(const matrix<T>& dgate, context& c) const {
  const Eigen::Index n = c.x.rows(), e = w.value.cols();
  matrix<T> dprobs = matrix<T>::Zero(n, e);
  for (Eigen::Index i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j)
      dprobs(i, c.chosen.expert[static_cast<std::size_t>(i * k + j)]) += dgate(i, j);
  const matrix<T> dot = (dprobs.array() * c.probs.array()).rowwise().sum().matrix();
  c.dlogits = (c.probs.array() * (dprobs.colwise() - dot.col(0)).array()).matrix();
  return c.dlogits * w.value.transpose();
}

template <class T>
void router<T>::backward_dw(const context& c) {
  w.grad.noalias() += c.x.transpose() * c.dlogits;
}

template <class T>
matrix<T> expert_mlp<T>::forward(const matrix<T>& x, context& c) const {
  c.x = x;
  c.h = x * w1.value;
  c.a = c.h.unaryExpr([](T z) { return z * sigmoid(z); });
  return c.a * w2.value;
}

template <class T>
matrix<T> expert_mlp<T>::backward_dx(const matrix<T>& dy, context& c) const {
  c.dy = dy;
  const matrix<T> da = dy * w2.value.transpose();
  const matrix<T> dsilu =
      c.h.unaryExpr([](T z) { return sigmoid(z) * (T(1) + z * (T(1) - sigmoid(z))); });
  c.dh = (da.array() * dsilu.array()).matrix();
  return c.dh * w1.value.transpose();
}

template <class T>
void expert_mlp<T>::backward_dw(const context& c) {
  w1.grad.noalias() += c.x.transpose() * c.dh;
  w2.grad.noalias() += c.a.transpose() * c.dy;
}

}  // namespace weft::nn
