// One MoE transformer layer, written as the sub-stages of MindSpeed's moe-fb-overlap note so an
// executor can run them as separate ops: attention (with its norm and the router), dispatch (tokens
// to the experts they chose), the routed experts, combine (expert outputs back, weighted by their
// gates), and the shared expert beside the routed path. `forward`/`backward_dx`/`backward_dw` run
// them in order on one rank with all experts local: the serial reference.
#pragma once

#include <cstddef>
#include <vector>

#include <weft/config.hpp>
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
  nn::matrix<T> forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c) const;
  nn::matrix<T> backward_dx(const nn::matrix<T>& dy, context& c) const;
  void backward_dw(const context& c);

  /// AMPipe on one rank: the sequence in `cs.size()` chunks of equal length, each through every
  /// sub-stage with its own context (queries of its rows, keys and values of all of `x`); the
  /// output is the chunks' outputs one after the other.
  nn::matrix<T> forward_chunked(const nn::matrix<T>& x, const nn::attention_mask& mask,
                                std::vector<context>& cs) const;
  /// The input gradient of `forward_chunked`: every chunk's (which reaches all rows through the
  /// keys and values) summed in chunk order.
  nn::matrix<T> backward_dx_chunked(const nn::matrix<T>& dy, std::vector<context>& cs) const;
  void backward_dw_chunked(const std::vector<context>& cs);

  // The sub-stages. An executor runs them as separate ops in any order the dependencies allow
  // (the shared expert beside dispatch, dW deferred, ...) and gets the same results bit for bit;
  // dispatch and combine move `expert_in`/`routed_out` forward and `dexpert_out`/`dexpert_in`
  // backward through the communication interface.

  /// attn (F): attention with its norm, the router, the rows each chosen expert gets — of the
  /// tokens [first, first + rows) (all of them by default; an AMPipe chunk otherwise), whose
  /// queries attend to every token of `x`.
  void attn_forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c,
                    Eigen::Index first = 0, Eigen::Index rows = -1) const;
  /// mlp (F): each row through its expert, one row at a time, so a row's result does not
  /// depend on which other rows share the batch (on one rank or spread over many).
  void mlp_forward(expert_rows& b) const;
  /// shared (F): the shared expert on every token; zeros for a layer without one.
  void shared_forward(context& c) const;
  /// The layer's output, once combine has brought `routed_out` back and the shared expert ran.
  nn::matrix<T> output(const context& c) const;

  /// combine (B): the gradient of each expert output row, and of each gate.
  void combine_backward(const nn::matrix<T>& dy, context& c) const;
  /// The same for tokens [first, first + rows) of the op's (a pipe-experts piece); `dy` is the
  /// gradient of all of them.
  void combine_backward(const nn::matrix<T>& dy, context& c, Eigen::Index first,
                        Eigen::Index rows) const;
  /// mlp (dX): each row's input gradient through its expert.
  void mlp_backward_dx(expert_rows& b) const;
  /// mlp (dW): into this layer's expert gradients, row by row in row order.
  void mlp_backward_dw(const expert_rows& b);
  void shared_backward_dx(const nn::matrix<T>& dy, context& c) const;
  void shared_backward_dw(const context& c);
  /// attn (dX): gathers the expert and shared gradients (dispatch has brought `dexpert_in`
  /// back), through the router, the norms and attention. `dy` is the gradient of this op's
  /// tokens; the result is of every token of the layer's input (an AMPipe chunk's keys and
  /// values are all of them), to be summed over the chunks.
  nn::matrix<T> attn_backward_dx(const nn::matrix<T>& dy, context& c) const;
  void attn_backward_dw(const context& c);

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
  static std::vector<int> kept_pairs(const context& c);

 private:
  // dispatch and combine on one rank: the kept pairs' rows to the experts and back.
  static void local_dispatch(context& c);
  static void local_combine(context& c);
  static void local_combine_backward(context& c);
  static void local_dispatch_backward(context& c);
  /// Rows of the kept pairs back into pair order; a dropped pair's row is zero.
  static void scatter_pairs(const context& c, const nn::matrix<T>& rows, nn::matrix<T>& into);

  const nn::expert_mlp<T>& expert(const expert_rows& b, Eigen::Index row) const;
};

#ifdef WEFT_SEPARATE_COMPILATION
// Compiled once for float and double into weft::exec_compiled (src/exec_float.cpp and
// src/exec_double.cpp).
extern template struct moe_layer<float>;
extern template struct moe_layer<double>;
#endif

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/moe_layer.ipp>
#endif
