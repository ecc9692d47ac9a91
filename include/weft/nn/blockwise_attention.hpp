// The pieces of attention computed a block at a time (the online softmax): one query slice's
// attention over one key/value slice with its rows' log-sum-exp, two such partial results merged
// into the softmax over the union of their keys, and a slice pair's gradients given the final
// statistics. Context parallelism (cp/attention.hpp) runs them across ranks; each is exact, so
// merged partials equal attention over every key at once. Templated on the element type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <weft/nn/tensor.hpp>

namespace weft::nn {

/// Attention of queries `q` over keys `k` and values `v` where `attends(a, b)` (query row a, key
/// row b), scaled by 1/sqrt(d): the output, normalised, and each row's log-sum-exp of its scaled
/// scores (-inf, with a zero output, for a row that attends to nothing).
template <class T>
struct partial {
  matrix<T> o;
  std::vector<T> lse;
};

template <class T, class Attends>
partial<T> attend(const matrix<T>& q, const matrix<T>& k, const matrix<T>& v, Attends&& attends) {
  const T scale = T(1) / std::sqrt(T(q.cols()));
  const matrix<T> s = q * k.transpose() * scale;
  partial<T> out{
      matrix<T>::Zero(q.rows(), v.cols()),
      std::vector<T>(static_cast<std::size_t>(q.rows()), -std::numeric_limits<T>::infinity())};
  for (Eigen::Index a = 0; a < q.rows(); ++a) {
    T top = -std::numeric_limits<T>::infinity();
    for (Eigen::Index b = 0; b < k.rows(); ++b)
      if (attends(a, b)) top = std::max(top, s(a, b));
    if (top == -std::numeric_limits<T>::infinity()) continue;
    T sum = 0;
    for (Eigen::Index b = 0; b < k.rows(); ++b)
      if (attends(a, b)) {
        const T p = std::exp(s(a, b) - top);
        sum += p;
        out.o.row(a) += p * v.row(b);
      }
    out.o.row(a) /= sum;
    out.lse[static_cast<std::size_t>(a)] = top + std::log(sum);
  }
  return out;
}

/// Merges `b` into `a` row by row: the softmax over the union of their keys.
template <class T>
void merge(partial<T>& a, const partial<T>& b) {
  for (Eigen::Index r = 0; r < a.o.rows(); ++r) {
    T& la = a.lse[static_cast<std::size_t>(r)];
    const T lb = b.lse[static_cast<std::size_t>(r)];
    if (lb == -std::numeric_limits<T>::infinity()) continue;
    if (la == -std::numeric_limits<T>::infinity()) {
      a.o.row(r) = b.o.row(r);
      la = lb;
      continue;
    }
    const T top = std::max(la, lb);
    const T wa = std::exp(la - top), wb = std::exp(lb - top);
    a.o.row(r) = (wa * a.o.row(r) + wb * b.o.row(r)) / (wa + wb);
    la = top + std::log(wa + wb);
  }
}

/// The gradients of one task: dQ of its query slice, dK and dV of its key/value slice, given
/// dO, the final log-sum-exp and D = rowsum(dO * O) of its queries.
template <class T, class Attends>
void attend_backward(const matrix<T>& q, const matrix<T>& k, const matrix<T>& v,
                     const matrix<T>& d_o, const std::vector<T>& lse, const std::vector<T>& D,
                     Attends&& attends, matrix<T>& dq, matrix<T>& dk, matrix<T>& dv) {
  const T scale = T(1) / std::sqrt(T(q.cols()));
  const matrix<T> s = q * k.transpose() * scale;
  const matrix<T> dp = d_o * v.transpose();
  matrix<T> ds = matrix<T>::Zero(q.rows(), k.rows());
  matrix<T> p = matrix<T>::Zero(q.rows(), k.rows());
  for (Eigen::Index a = 0; a < q.rows(); ++a) {
    const T l = lse[static_cast<std::size_t>(a)];
    if (l == -std::numeric_limits<T>::infinity()) continue;
    for (Eigen::Index b = 0; b < k.rows(); ++b)
      if (attends(a, b)) {
        p(a, b) = std::exp(s(a, b) - l);
        ds(a, b) = p(a, b) * (dp(a, b) - D[static_cast<std::size_t>(a)]) * scale;
      }
  }
  dv = p.transpose() * d_o;
  dq = ds * k;
  dk = ds.transpose() * q;
}

}  // namespace weft::nn
