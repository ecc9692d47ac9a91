// The MoE pieces that compute: a router choosing the top-k experts of each token, and an expert
// (or shared expert) MLP with SiLU. Moving tokens to experts (dispatch) and back (combine) is the
// communication around them.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <weft/nn/tensor.hpp>

namespace weft::nn {

/// Top-k routing: softmax over experts, the k largest probabilities (ties to the lower expert
/// index, so every run routes alike) become the gates of the chosen experts.
///
/// Dropless by default: every (token, choice) pair reaches its expert. With a capacity factor
/// cf > 0 an expert takes at most C = max(min_capacity, ceil(tokens * k / experts * cf)) pairs,
/// at most `tokens`, of one routing call, first choices before second ones and each in token
/// order (DeepSpeed's top-k gating); a dropped pair contributes nothing and gets no gradient.
/// C counts the tokens of one call: the whole sequence, or one AMPipe chunk — so with a capacity
/// chunking changes which pairs are dropped (what MindSpeed's AMPipe does), dropless it does not.
template <class T>
struct router {
  param<T> w;  ///< d x experts
  int k = 1;
  double capacity_factor = 0;  ///< 0: dropless
  int min_capacity = 0;

  struct choice {
    std::vector<int> expert;          ///< tokens x k
    matrix<T> gate;                   ///< tokens x k
    std::vector<unsigned char> kept;  ///< tokens x k: 0 where the capacity dropped the pair
  };

  /// Pairs an expert takes from a call routing `tokens` tokens (`tokens * k` when dropless).
  long long capacity(long long tokens) const {
    const long long experts = w.value.cols();
    if (capacity_factor <= 0) return tokens * k;
    const auto c = static_cast<long long>(std::ceil(
        static_cast<double>(tokens) * k / static_cast<double>(experts) * capacity_factor));
    return std::min(tokens, std::max<long long>(c, min_capacity));
  }
  struct context {
    matrix<T> x, probs, dlogits;
    choice chosen;
  };

  choice forward(const matrix<T>& x, context& c) const {
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
  /// `dgate`: tokens x k, the loss gradient of each chosen gate. Returns the input gradient.
  matrix<T> backward_dx(const matrix<T>& dgate, context& c) const {
    const Eigen::Index n = c.x.rows(), e = w.value.cols();
    matrix<T> dprobs = matrix<T>::Zero(n, e);
    for (Eigen::Index i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j)
        dprobs(i, c.chosen.expert[static_cast<std::size_t>(i * k + j)]) += dgate(i, j);
    const matrix<T> dot = (dprobs.array() * c.probs.array()).rowwise().sum().matrix();
    c.dlogits = (c.probs.array() * (dprobs.colwise() - dot.col(0)).array()).matrix();
    return c.dlogits * w.value.transpose();
  }
  void backward_dw(const context& c) { w.grad.noalias() += c.x.transpose() * c.dlogits; }
};

/// y = silu(x W1) W2: a routed expert or the shared expert.
template <class T>
struct expert_mlp {
  param<T> w1, w2;  ///< d x f, f x d

  struct context {
    matrix<T> x, h, a, dy, dh;  ///< h = x W1, a = silu(h)
  };

  static T sigmoid(T z) { return T(1) / (T(1) + std::exp(-z)); }

  matrix<T> forward(const matrix<T>& x, context& c) const {
    c.x = x;
    c.h = x * w1.value;
    c.a = c.h.unaryExpr([](T z) { return z * sigmoid(z); });
    return c.a * w2.value;
  }
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const {
    c.dy = dy;
    const matrix<T> da = dy * w2.value.transpose();
    const matrix<T> dsilu =
        c.h.unaryExpr([](T z) { return sigmoid(z) * (T(1) + z * (T(1) - sigmoid(z))); });
    c.dh = (da.array() * dsilu.array()).matrix();
    return c.dh * w1.value.transpose();
  }
  void backward_dw(const context& c) {
    w1.grad.noalias() += c.x.transpose() * c.dh;
    w2.grad.noalias() += c.a.transpose() * c.dy;
  }
};

/// Mean squared error against a target: L = sum((y - t)^2) / (2 * rows).
template <class T>
struct mse_loss {
  static T value(const matrix<T>& y, const matrix<T>& t) {
    return (y - t).squaredNorm() / (T(2) * T(y.rows()));
  }
  static matrix<T> gradient(const matrix<T>& y, const matrix<T>& t) {
    return (y - t) / T(y.rows());
  }
};

}  // namespace weft::nn
