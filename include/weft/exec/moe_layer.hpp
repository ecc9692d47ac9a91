// One MoE transformer layer, written as the seed's sub-stages so an executor can run them as
// separate ops: attention (with its norm and the router), dispatch (tokens to the experts they
// chose), the routed experts, combine (expert outputs back, weighted by their gates), and the
// shared expert beside the routed path. `forward`/`backward_dx`/`backward_dw` run them in order
// on one rank with all experts local: the serial reference.
#pragma once

#include <cstddef>
#include <vector>

#include <weft/nn/attention.hpp>
#include <weft/nn/experts.hpp>
#include <weft/nn/norm.hpp>

namespace weft::exec {

template <class T>
struct moe_layer {
  nn::rms_norm<T> norm1, norm2;
  nn::attention<T> attn;
  nn::router<T> route;
  std::vector<nn::expert_mlp<T>> experts;
  nn::expert_mlp<T> shared;

  /// The rows a rank's routed experts process: on one rank every (token, k) pair; across
  /// expert-parallel ranks, the pairs that chose this rank's experts, from every rank.
  struct expert_rows {
    std::vector<int> expert;  ///< per row: which expert
    nn::matrix<T> in, out, dout, din;
    std::vector<typename nn::expert_mlp<T>::context> e;  ///< per row
  };

  struct context {
    typename nn::rms_norm<T>::context n1, n2;
    typename nn::attention<T>::context a;
    typename nn::router<T>::context r;
    typename nn::router<T>::choice chosen;
    nn::matrix<T> h, z;  ///< after attention; normed for the experts
    typename nn::expert_mlp<T>::context s;
    // The token side's hand-offs, per (token, k) pair: what dispatch moves to the experts and
    // combine brings back, forward (`expert_in`, `routed_out`) and backward (`dexpert_out`,
    // `dexpert_in`); and the gradients the attention backward gathers.
    nn::matrix<T> expert_in, routed_out, dexpert_out, dexpert_in, shared_out, dgate, dz_shared;
    expert_rows rows;  ///< the expert side, on the rank that holds the experts
  };

  bool has_shared() const noexcept { return shared.w1.value.size() > 0; }

  /// y = h + sum_k gate_k * expert_k(z) + shared(z), h = x + attn(norm1(x)), z = norm2(h):
  /// the sub-stages below, one after the other; dispatch and combine are local moves here.
  nn::matrix<T> forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c) const {
    attn_forward(x, mask, c);
    local_dispatch(c);
    mlp_forward(c.rows);
    local_combine(c);
    shared_forward(c);
    return output(c);
  }
  nn::matrix<T> backward_dx(const nn::matrix<T>& dy, context& c) const {
    combine_backward(dy, c);
    local_combine_backward(c);
    mlp_backward_dx(c.rows);
    local_dispatch_backward(c);
    shared_backward_dx(dy, c);
    return attn_backward_dx(dy, c);
  }
  void backward_dw(const context& c) {
    attn_backward_dw(c);
    mlp_backward_dw(c.rows);
    shared_backward_dw(c);
  }

  /// AMPipe on one rank: the sequence in `cs.size()` chunks of equal length, each through every
  /// sub-stage with its own context (queries of its rows, keys and values of all of `x`); the
  /// output is the chunks' outputs one after the other.
  nn::matrix<T> forward_chunked(const nn::matrix<T>& x, const nn::attention_mask& mask,
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
  /// The input gradient of `forward_chunked`: every chunk's (which reaches all rows through the
  /// keys and values) summed in chunk order.
  nn::matrix<T> backward_dx_chunked(const nn::matrix<T>& dy, std::vector<context>& cs) const {
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
  void backward_dw_chunked(const std::vector<context>& cs) {
    for (const context& c : cs) backward_dw(c);
  }

  // The sub-stages. An executor runs them as separate ops in any order the dependencies allow
  // (the shared expert beside dispatch, dW deferred, ...) and gets the same results bit for bit;
  // dispatch and combine move `expert_in`/`routed_out` forward and `dexpert_out`/`dexpert_in`
  // backward through the communication interface.

  /// attn (F): attention with its norm, the router, the rows each chosen expert gets — of the
  /// tokens [first, first + rows) (all of them by default; an AMPipe chunk otherwise), whose
  /// queries attend to every token of `x`.
  void attn_forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c,
                    Eigen::Index first = 0, Eigen::Index rows = -1) const {
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
  /// mlp (F): each row through its expert, one row at a time, so a row's result does not
  /// depend on which other rows share the batch (on one rank or spread over many).
  void mlp_forward(expert_rows& b) const {
    b.e.assign(static_cast<std::size_t>(b.in.rows()), {});
    b.out.resize(b.in.rows(), b.in.cols());
    for (Eigen::Index i = 0; i < b.in.rows(); ++i)
      b.out.row(i) = expert(b, i).forward(b.in.row(i), b.e[static_cast<std::size_t>(i)]);
  }
  /// shared (F): the shared expert on every token; zeros for a layer without one.
  void shared_forward(context& c) const {
    c.shared_out =
        has_shared() ? shared.forward(c.z, c.s) : nn::matrix<T>::Zero(c.z.rows(), c.z.cols());
  }
  /// The layer's output, once combine has brought `routed_out` back and the shared expert ran.
  nn::matrix<T> output(const context& c) const {
    nn::matrix<T> y = c.h;
    const int k = route.k;
    for (Eigen::Index i = 0; i < y.rows(); ++i)
      for (int j = 0; j < k; ++j)
        if (c.chosen.kept[static_cast<std::size_t>(i * k + j)])
          y.row(i) += c.chosen.gate(i, j) * c.routed_out.row(i * k + j);
    return has_shared() ? nn::matrix<T>(y + c.shared_out) : y;
  }

  /// combine (B): the gradient of each expert output row, and of each gate.
  void combine_backward(const nn::matrix<T>& dy, context& c) const {
    combine_backward(dy, c, 0, dy.rows());
  }
  /// The same for tokens [first, first + rows) of the op's (a pipe-experts piece); `dy` is the
  /// gradient of all of them.
  void combine_backward(const nn::matrix<T>& dy, context& c, Eigen::Index first,
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
  /// mlp (dX): each row's input gradient through its expert.
  void mlp_backward_dx(expert_rows& b) const {
    b.din.resize(b.dout.rows(), b.dout.cols());
    for (Eigen::Index i = 0; i < b.dout.rows(); ++i)
      b.din.row(i) = expert(b, i).backward_dx(b.dout.row(i), b.e[static_cast<std::size_t>(i)]);
  }
  /// mlp (dW): into this layer's expert gradients, row by row in row order.
  void mlp_backward_dw(const expert_rows& b) {
    for (std::size_t i = 0; i < b.e.size(); ++i)
      experts[static_cast<std::size_t>(b.expert[i])].backward_dw(b.e[i]);
  }
  void shared_backward_dx(const nn::matrix<T>& dy, context& c) const {
    c.dz_shared =
        has_shared() ? shared.backward_dx(dy, c.s) : nn::matrix<T>::Zero(dy.rows(), dy.cols());
  }
  void shared_backward_dw(const context& c) {
    if (has_shared()) shared.backward_dw(c.s);
  }
  /// attn (dX): gathers the expert and shared gradients (dispatch has brought `dexpert_in`
  /// back), through the router, the norms and attention. `dy` is the gradient of this op's
  /// tokens; the result is of every token of the layer's input (an AMPipe chunk's keys and
  /// values are all of them), to be summed over the chunks.
  nn::matrix<T> attn_backward_dx(const nn::matrix<T>& dy, context& c) const {
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
  void attn_backward_dw(const context& c) {
    norm1.backward_dw(c.n1);
    attn.backward_dw(c.a);
    norm2.backward_dw(c.n2);
    route.backward_dw(c.r);
  }

  /// Every parameter: the replicated ones (attention, norms, router, shared expert), then each
  /// routed expert's.
  template <class Fn>
  void each_param(Fn&& fn) {
    for (nn::param<T>* p : {&norm1.g, &norm2.g, &attn.wq, &attn.wk, &attn.wv, &attn.wo, &route.w})
      fn(*p);
    if (has_shared()) {
      fn(shared.w1);
      fn(shared.w2);
    }
    for (auto& ex : experts) {
      fn(ex.w1);
      fn(ex.w2);
    }
  }

  /// The (token, choice) pairs the router kept, in pair order.
  static std::vector<int> kept_pairs(const context& c) {
    std::vector<int> kept;
    for (std::size_t q = 0; q < c.chosen.kept.size(); ++q)
      if (c.chosen.kept[q]) kept.push_back(static_cast<int>(q));
    return kept;
  }

 private:
  // dispatch and combine on one rank: the kept pairs' rows to the experts and back.
  static void local_dispatch(context& c) {
    const std::vector<int> kept = kept_pairs(c);
    c.rows.expert.resize(kept.size());
    c.rows.in.resize(static_cast<Eigen::Index>(kept.size()), c.expert_in.cols());
    for (std::size_t q = 0; q < kept.size(); ++q) {
      c.rows.expert[q] = c.chosen.expert[static_cast<std::size_t>(kept[q])];
      c.rows.in.row(static_cast<Eigen::Index>(q)) = c.expert_in.row(kept[q]);
    }
  }
  static void local_combine(context& c) { scatter_pairs(c, c.rows.out, c.routed_out); }
  static void local_combine_backward(context& c) {
    const std::vector<int> kept = kept_pairs(c);
    c.rows.dout.resize(static_cast<Eigen::Index>(kept.size()), c.dexpert_out.cols());
    for (std::size_t q = 0; q < kept.size(); ++q)
      c.rows.dout.row(static_cast<Eigen::Index>(q)) = c.dexpert_out.row(kept[q]);
  }
  static void local_dispatch_backward(context& c) { scatter_pairs(c, c.rows.din, c.dexpert_in); }
  /// Rows of the kept pairs back into pair order; a dropped pair's row is zero.
  static void scatter_pairs(const context& c, const nn::matrix<T>& rows, nn::matrix<T>& into) {
    const std::vector<int> kept = kept_pairs(c);
    into = nn::matrix<T>::Zero(static_cast<Eigen::Index>(c.chosen.kept.size()), rows.cols());
    for (std::size_t q = 0; q < kept.size(); ++q)
      into.row(kept[q]) = rows.row(static_cast<Eigen::Index>(q));
  }

  const nn::expert_mlp<T>& expert(const expert_rows& b, Eigen::Index row) const {
    return experts[static_cast<std::size_t>(b.expert[static_cast<std::size_t>(row)])];
  }
};

}  // namespace weft::exec
