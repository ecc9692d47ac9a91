// Multi-head self-attention with a mask (causal or any boolean pattern). A query row that may
// attend to no key gets a zero output (and passes no gradient), rather than NaN. The queries may
// be a run of rows of the input while the keys and values are all of it (AMPipe's sequence
// chunks): the chunks' outputs concatenated, and their input gradients summed, are the whole
// sequence's.
#pragma once

#include <vector>

#include <weft/config.hpp>
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

/// Scaled softmax attention, head by head (width d = heads x dh), of queries `q` — rows [first,
/// first + q.rows()) of the sequence — over keys `k` and values `v` (every row), where `mask`
/// allows: the output, and each head's probabilities in `p` (queries x keys).
template <class T>
matrix<T> attend(const matrix<T>& q, const matrix<T>& k, const matrix<T>& v,
                 const attention_mask& mask, Eigen::Index first, int heads,
                 std::vector<matrix<T>>& p);

/// The backward of `attend`: from the output's gradient `dout`, the gradients of q, k and v.
template <class T>
void attend_backward(const matrix<T>& dout, const matrix<T>& q, const matrix<T>& k,
                     const matrix<T>& v, const std::vector<matrix<T>>& p, int heads, matrix<T>& dq,
                     matrix<T>& dk, matrix<T>& dv);

template <class T>
struct attention {
  param<T> wq, wk, wv, wo;  ///< d x d each
  int heads = 1;

  struct context {
    matrix<T> x, q, k, v, o, dy, dq, dk, dv;
    std::vector<matrix<T>> p;  ///< per head: softmax probabilities, queries x keys
    Eigen::Index first = 0;    ///< the queries are rows [first, first + q.rows()) of x
  };

  /// Attention of every row of `x` (the whole sequence).
  matrix<T> forward(const matrix<T>& x, const attention_mask& mask, context& c) const {
    return forward(x, mask, c, 0, x.rows());
  }
  /// Attention of query rows [first, first + rows) of `x` over all of `x`, with the same rows of
  /// `mask` (a causal mask gives the chunk its offset): a `rows` x width output.
  matrix<T> forward(const matrix<T>& x, const attention_mask& mask, context& c, Eigen::Index first,
                    Eigen::Index rows) const;
  /// The gradient of every row of x (not only the query rows: keys and values are all of x).
  matrix<T> backward_dx(const matrix<T>& dy, context& c) const;
  void backward_dw(const context& c);
};

#ifdef WEFT_SEPARATE_COMPILATION
// Compiled once for float and double into weft::nn_compiled (src/nn_kernels.cpp).
extern template struct attention<float>;
extern template struct attention<double>;
#endif

}  // namespace weft::nn

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/nn/impl/attention.ipp>
#endif
