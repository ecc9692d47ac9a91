// Dense tensors for the reference kernels: row-major Eigen matrices, one row per token. Kernels
// are templates on the scalar (float for runs, double for gradient checks).
#pragma once

#include <Eigen/Core>

namespace weft::nn {

template <class T>
using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using row_vector = Eigen::Matrix<T, 1, Eigen::Dynamic>;

/// A parameter and the gradient accumulated into it.
template <class T>
struct param {
  matrix<T> value, grad;

  param() = default;
  explicit param(matrix<T> v)
      : value(std::move(v)), grad(matrix<T>::Zero(value.rows(), value.cols())) {}
  void zero_grad() { grad.setZero(value.rows(), value.cols()); }
};

}  // namespace weft::nn
