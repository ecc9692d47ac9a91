// The MoE pieces that compute: a router choosing the top-k experts of each token, and an expert
// (or shared expert) MLP with SiLU. Moving tokens to experts (dispatch) and back (combine) is the
// communication around them.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <weft/config.hpp>
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

  choice forward(const matrix<T>& x, context& c) const;
  /// `dgate`: tokens x k, the loss gradient of each chosen gate. Returns the input gradient.
  matrix<T> backward_dx(const matrix<T>& dgate, context& c) const;
  void backward_dw(const context& c);
};

/// y = silu(x W1) W2: a routed expert or the shared expert.
template <class T>
struct expert_mlp {
  param<T> w1, w2;  ///< d x f, f x d

  struct context {
    matrix<T> x, h, a, dy, dh;  ///< h = x W1, a = silu(h)
  };

  static T sigmoid(T z) { return T(1) / (T(1) + std::exp(-z)); }

  matrix<T> forward(const matrix<T>& x, context& c) const;
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const;
  void backward_dw(const context& c);
};

#ifdef WEFT_SEPARATE_COMPILATION
// Compiled once for float and double into weft::nn_compiled (src/nn_kernels.cpp).
extern template struct router<float>;
extern template struct router<double>;
extern template struct expert_mlp<float>;
extern template struct expert_mlp<double>;
#endif

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

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/nn/impl/experts.ipp>
#endif
