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

  struct context {
    typename nn::rms_norm<T>::context n1, n2;
    typename nn::attention<T>::context a;
    typename nn::router<T>::context r;
    typename nn::router<T>::choice chosen;
    nn::matrix<T> h, z;  ///< after attention; normed for the experts
    std::vector<typename nn::expert_mlp<T>::context> e;  ///< per (token, k) pair
    nn::matrix<T> routed_out;  ///< per (token, k) pair: that expert's output
    typename nn::expert_mlp<T>::context s;
    // The sub-stages' hand-offs: what dispatch moves to the experts and back, and the gradients.
    nn::matrix<T> expert_in, expert_out, shared_out, dgate, dexpert_out, dexpert_in, dz_shared;
  };

  /// y = h + sum_k gate_k * expert_k(z) + shared(z), h = x + attn(norm1(x)), z = norm2(h):
  /// the sub-stages below, one after the other (dispatch and combine are plain copies here).
  nn::matrix<T> forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c) const {
    attn_forward(x, mask, c);
    mlp_forward(c);
    c.routed_out = c.expert_out;
    shared_forward(c);
    return output(c);
  }
  nn::matrix<T> backward_dx(const nn::matrix<T>& dy, context& c) const {
    combine_backward(dy, c);
    mlp_backward_dx(c);
    shared_backward_dx(dy, c);
    return attn_backward_dx(dy, c);
  }
  void backward_dw(const context& c) {
    attn_backward_dw(c);
    mlp_backward_dw(c);
    shared_backward_dw(c);
  }

  // The sub-stages. An executor runs them as separate ops in any order the dependencies allow
  // (the shared expert beside dispatch, dW deferred, ...) and gets the same results bit for bit;
  // dispatch and combine move `expert_in`/`routed_out` forward and `dexpert_out`/`dexpert_in`
  // backward through the communication interface.

  /// attn (F): attention with its norm, the router, the rows each chosen expert gets.
  void attn_forward(const nn::matrix<T>& x, const nn::attention_mask& mask, context& c) const {
    c.h = x + attn.forward(norm1.forward(x, c.n1), mask, c.a);
    c.z = norm2.forward(c.h, c.n2);
    c.chosen = route.forward(c.z, c.r);
    const int k = route.k;
    c.expert_in.resize(c.z.rows() * k, c.z.cols());
    for (Eigen::Index i = 0; i < c.z.rows(); ++i)
      for (int j = 0; j < k; ++j) c.expert_in.row(i * k + j) = c.z.row(i);
  }
  /// mlp (F): each (token, k) row through its expert.
  void mlp_forward(context& c) const {
    c.e.assign(static_cast<std::size_t>(c.expert_in.rows()), {});
    c.expert_out.resize(c.expert_in.rows(), c.expert_in.cols());
    for (Eigen::Index pair = 0; pair < c.expert_in.rows(); ++pair) {
      const auto& ex =
          experts[static_cast<std::size_t>(c.chosen.expert[static_cast<std::size_t>(pair)])];
      c.expert_out.row(pair) =
          ex.forward(c.expert_in.row(pair), c.e[static_cast<std::size_t>(pair)]);
    }
  }
  void shared_forward(context& c) const { c.shared_out = shared.forward(c.z, c.s); }
  /// The layer's output, once combine has brought `routed_out` back and the shared expert ran.
  nn::matrix<T> output(const context& c) const {
    nn::matrix<T> y = c.h;
    const int k = route.k;
    for (Eigen::Index i = 0; i < y.rows(); ++i)
      for (int j = 0; j < k; ++j) y.row(i) += c.chosen.gate(i, j) * c.routed_out.row(i * k + j);
    return y + c.shared_out;
  }

  /// combine (B): the gradient of each expert output row, and of each gate.
  void combine_backward(const nn::matrix<T>& dy, context& c) const {
    const int k = route.k;
    c.dgate.resize(dy.rows(), k);
    c.dexpert_out.resize(dy.rows() * k, dy.cols());
    for (Eigen::Index i = 0; i < dy.rows(); ++i)
      for (int j = 0; j < k; ++j) {
        c.dgate(i, j) = dy.row(i).dot(c.routed_out.row(i * k + j));
        c.dexpert_out.row(i * k + j) = c.chosen.gate(i, j) * dy.row(i);
      }
  }
  /// mlp (dX): each expert's input gradient for its rows.
  void mlp_backward_dx(context& c) const {
    c.dexpert_in.resize(c.dexpert_out.rows(), c.dexpert_out.cols());
    for (Eigen::Index pair = 0; pair < c.dexpert_out.rows(); ++pair) {
      const auto& ex =
          experts[static_cast<std::size_t>(c.chosen.expert[static_cast<std::size_t>(pair)])];
      c.dexpert_in.row(pair) =
          ex.backward_dx(c.dexpert_out.row(pair), c.e[static_cast<std::size_t>(pair)]);
    }
  }
  void mlp_backward_dw(const context& c) {
    for (std::size_t pair = 0; pair < c.e.size(); ++pair)
      experts[static_cast<std::size_t>(c.chosen.expert[pair])].backward_dw(c.e[pair]);
  }
  void shared_backward_dx(const nn::matrix<T>& dy, context& c) const {
    c.dz_shared = shared.backward_dx(dy, c.s);
  }
  void shared_backward_dw(const context& c) { shared.backward_dw(c.s); }
  /// attn (dX): gathers the expert and shared gradients (dispatch has brought `dexpert_in`
  /// back), through the router, the norms and attention.
  nn::matrix<T> attn_backward_dx(const nn::matrix<T>& dy, context& c) const {
    const int k = route.k;
    nn::matrix<T> dz = c.dz_shared;
    for (Eigen::Index i = 0; i < dz.rows(); ++i)
      for (int j = 0; j < k; ++j) dz.row(i) += c.dexpert_in.row(i * k + j);
    dz += route.backward_dx(c.dgate, c.r);
    const nn::matrix<T> dh = dy + norm2.backward_dx(dz, c.n2);
    return dh + norm1.backward_dx(attn.backward_dx(dh, c.a), c.n1);
  }
  void attn_backward_dw(const context& c) {
    norm1.backward_dw(c.n1);
    attn.backward_dw(c.a);
    norm2.backward_dw(c.n2);
    route.backward_dw(c.r);
  }

  template <class Fn>
  void each_param(Fn&& fn) {
    for (nn::param<T>* p : {&norm1.g, &norm2.g, &attn.wq, &attn.wk, &attn.wv, &attn.wo, &route.w,
                            &shared.w1, &shared.w2})
      fn(*p);
    for (auto& ex : experts) {
      fn(ex.w1);
      fn(ex.w2);
    }
  }
};

}  // namespace weft::exec
