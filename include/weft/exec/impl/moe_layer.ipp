// The bodies of moe_layer.hpp's sub-stages: inline in header-only builds, compiled once for float
// and double into `weft::exec_compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include <weft/exec/moe_layer.hpp>

namespace weft::exec {

template <class T>
nn::matrix<T> moe_layer<T>::forward(const nn::matrix<T>& x, const nn::attention_mask& mask,
                                    context& c) const {
  attn_forward(x, mask, c);
  local_dispatch(c);
  mlp_forward(c.rows);
  local_combine(c);
  shared_forward(c);
  return output(c);
}

template <class T>
nn::matrix<T> moe_layer<T>::backward_dx(const nn::matrix<T>& dy, context& c) const {
  combine_backward(dy, c);
  local_combine_backward(c);
  mlp_backward_dx(c.rows);
  local_dispatch_backward(c);
  shared_backward_dx(dy, c);
  return attn_backward_dx(dy, c);
}

template <class T>
void moe_layer<T>::backward_dw(const context& c) {
  attn_backward_dw(c);
  mlp_backward_dw(c.rows);
  shared_backward_dw(c);
}

template <class T>
nn::matrix<T> moe_layer<T>::forward_chunked(const nn::matrix<T>& x, const nn::attention_mask& mask,
                                            std::vector<context>& cs) const {
  const auto len = x.rows() / static_cast<Eigen::Index>(cs.size());
  nn::matrix<T> y(x.rows(), x.cols());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    context& c = cs[i];
    attn_forward(x, mask, c, static_cast<Eigen::Index>(i) * len, len);
    local_dispatch(c);
    mlp_forward(c.rows);
    local_combine(c);
    shared_forward(c);
    y.middleRows(static_cast<Eigen::Index>(i) * len, len) = output(c);
  }
  return y;
}

template <class T>
nn::matrix<T> moe_layer<T>::backward_dx_chunked(const nn::matrix<T>& dy,
                                                std::vector<context>& cs) const {
  const auto len = dy.rows() / static_cast<Eigen::Index>(cs.size());
  nn::matrix<T> dx = nn::matrix<T>::Zero(dy.rows(), dy.cols());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const nn::matrix<T> dyc = dy.middleRows(static_cast<Eigen::Index>(i) * len, len);
    context& c = cs[i];
    combine_backward(dyc, c);
    local_combine_backward(c);
    mlp_backward_dx(c.rows);
    local_dispatch_backward(c);
    shared_backward_dx(dyc, c);
    dx += attn_backward_dx(dyc, c);
  }
  return dx;
}

template <class T>
void moe_layer<T>::backward_dw_chunked(const std::vector<context>& cs) {
  for (const context& c : cs) backward_dw(c);
}

template <class T>
void moe_layer<T>::attn_forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c,
                                Eigen::Index first, Eigen::Index rows) const {
  if (rows < 0) rows = x.rows();
  c.h = x.middleRows(first, rows) + attn.forward(norm1.forward(x, c.n1), mask, c.a, first, rows);
  c.z = norm2.forward(c.h, c.n2);
  c.chosen = route.forward(c.z, c.r);
  const int k = route.k;
  const Eigen::Index pairs = c.z.rows() * k, d = c.z.cols();
  c.expert_in.resize(pairs, d);
  for (Eigen::Index i = 0; i < c.z.rows(); ++i)
    for (int j = 0; j < k; ++j) c.expert_in.row(i * k + j) = c.z.row(i);
  // What the routed path's pieces fill in later, each its own rows (zero where dropped).
  c.routed_out = nn::matrix<T>::Zero(pairs, d);
  c.dexpert_in = nn::matrix<T>::Zero(pairs, d);
  c.dexpert_out = nn::matrix<T>::Zero(pairs, d);
  c.dgate = nn::matrix<T>::Zero(c.z.rows(), k);
}

template <class T>
void moe_layer<T>::mlp_forward(expert_rows& b) const {
  b.e.assign(static_cast<std::size_t>(b.in.rows()), {});
  b.out.resize(b.in.rows(), b.in.cols());
  for (Eigen::Index i = 0; i < b.in.rows(); ++i)
    b.out.row(i) = expert(b, i).forward(b.in.row(i), b.e[static_cast<std::size_t>(i)]);
}

template <class T>
void moe_layer<T>::shared_forward(context& c) const {
  c.shared_out =
      has_shared() ? shared.forward(c.z, c.s) : nn::matrix<T>::Zero(c.z.rows(), c.z.cols());
}

template <class T>
nn::matrix<T> moe_layer<T>::output(const context& c) const {
  nn::matrix<T> y = c.h;
  const int k = route.k;
  for (Eigen::Index i = 0; i < y.rows(); ++i)
    for (int j = 0; j < k; ++j)
      if (c.chosen.kept[static_cast<std::size_t>(i * k + j)])
        y.row(i) += c.chosen.gate(i, j) * c.routed_out.row(i * k + j);
  return has_shared() ? nn::matrix<T>(y + c.shared_out) : y;
}

template <class T>
void moe_layer<T>::combine_backward(const nn::matrix<T>& dy, context& c) const {
  combine_backward(dy, c, 0, dy.rows());
}

template <class T>
void moe_layer<T>::combine_backward(const nn::matrix<T>& dy, context& c, Eigen::Index first,
                                    Eigen::Index rows) const {
  const int k = route.k;
  for (Eigen::Index i = first; i < first + rows; ++i)
    for (int j = 0; j < k; ++j) {
      if (!c.chosen.kept[static_cast<std::size_t>(i * k + j)]) {  // dropped: no gradient
        c.dgate(i, j) = 0;
        c.dexpert_out.row(i * k + j).setZero();
        continue;
      }
      c.dgate(i, j) = dy.row(i).dot(c.routed_out.row(i * k + j));
      c.dexpert_out.row(i * k + j) = c.chosen.gate(i, j) * dy.row(i);
    }
}

template <class T>
void moe_layer<T>::mlp_backward_dx(expert_rows& b) const {
  b.din.resize(b.dout.rows(), b.dout.cols());
  for (Eigen::Index i = 0; i < b.dout.rows(); ++i)
    b.din.row(i) = expert(b, i).backward_dx(b.dout.row(i), b.e[static_cast<std::size_t>(i)]);
}

template <class T>
void moe_layer<T>::mlp_backward_dw(const expert_rows& b) {
  for (std::size_t i = 0; i < b.e.size(); ++i)
    experts[static_cast<std::size_t>(b.expert[i])].backward_dw(b.e[i]);
}

template <class T>
void moe_layer<T>::shared_backward_dx(const nn::matrix<T>& dy, context& c) const {
  c.dz_shared =
      has_shared() ? shared.backward_dx(dy, c.s) : nn::matrix<T>::Zero(dy.rows(), dy.cols());
}

template <class T>
void moe_layer<T>::shared_backward_dw(const context& c) {
  if (has_shared()) shared.backward_dw(c.s);
}

template <class T>
nn::matrix<T> moe_layer<T>::attn_backward_dx(const nn::matrix<T>& dy, context& c) const {
  const int k = route.k;
  nn::matrix<T> dz = has_shared() ? c.dz_shared : nn::matrix<T>::Zero(c.z.rows(), c.z.cols());
  for (Eigen::Index i = 0; i < dz.rows(); ++i)
    for (int j = 0; j < k; ++j) dz.row(i) += c.dexpert_in.row(i * k + j);
  dz += route.backward_dx(c.dgate, c.r);
  const nn::matrix<T> dh = dy + norm2.backward_dx(dz, c.n2);
  if (dh.rows() == c.a.x.rows()) return dh + norm1.backward_dx(attn.backward_dx(dh, c.a), c.n1);
  nn::matrix<T> dx = norm1.backward_dx(attn.backward_dx(dh, c.a), c.n1);
  dx.middleRows(c.a.first, dh.rows()) += dh;
  return dx;
}

template <class T>
void moe_layer<T>::attn_backward_dw(const context& c) {
  norm1.backward_dw(c.n1);
  attn.backward_dw(c.a);
  norm2.backward_dw(c.n2);
  route.backward_dw(c.r);
}

template <class T>
std::vector<int> moe_layer<T>::kept_pairs(const context& c) {
  std::vector<int> kept;
  for (std::size_t q = 0; q < c.chosen.kept.size(); ++q)
    if (c.chosen.kept[q]) kept.push_back(static_cast<int>(q));
  return kept;
}

template <class T>
void moe_layer<T>::local_dispatch(context& c) {
  const std::vector<int> kept = kept_pairs(c);
  c.rows.expert.resize(kept.size());
  c.rows.in.resize(static_cast<Eigen::Index>(kept.size()), c.expert_in.cols());
  for (std::size_t q = 0; q < kept.size(); ++q) {
    c.rows.expert[q] = c.chosen.expert[static_cast<std::size_t>(kept[q])];
    c.rows.in.row(static_cast<Eigen::Index>(q)) = c.expert_in.row(kept[q]);
  }
}

template <class T>
void moe_layer<T>::local_combine(context& c) {
  scatter_pairs(c, c.rows.out, c.routed_out);
}

template <class T>
void moe_layer<T>::local_combine_backward(context& c) {
  const std::vector<int> kept = kept_pairs(c);
  c.rows.dout.resize(static_cast<Eigen::Index>(kept.size()), c.dexpert_out.cols());
  for (std::size_t q = 0; q < kept.size(); ++q)
    c.rows.dout.row(static_cast<Eigen::Index>(q)) = c.dexpert_out.row(kept[q]);
}

template <class T>
void moe_layer<T>::local_dispatch_backward(context& c) {
  scatter_pairs(c, c.rows.din, c.dexpert_in);
}

template <class T>
void moe_layer<T>::scatter_pairs(const context& c, const nn::matrix<T>& rows, nn::matrix<T>& into) {
  const std::vector<int> kept = kept_pairs(c);
  into = nn::matrix<T>::Zero(static_cast<Eigen::Index>(c.chosen.kept.size()), rows.cols());
  for (std::size_t q = 0; q < kept.size(); ++q)
    into.row(kept[q]) = rows.row(static_cast<Eigen::Index>(q));
}

template <class T>
const nn::expert_mlp<T>& moe_layer<T>::expert(const expert_rows& b, Eigen::Index row) const {
  return experts[static_cast<std::size_t>(b.expert[static_cast<std::size_t>(row)])];
}

}  // namespace weft::exec
