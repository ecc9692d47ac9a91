// 2D tensor-parallel layers (MindSpeed's tp-2d note) on one rank of a tp_x x tp_y grid, through the
// communication interface: a linear layer, an MLP, attention, LayerNorm and RMSNorm, forward and
// backward. Activations between layers are [s / tp_x rows (chunk x), H / tp_y columns (chunk y)]
// of the token-major [s, H]; every layer takes and gives that layout.
//
// A linear layer with all-gather group `ag` and reduce-scatter group `rs` holds W's
// [in / |rs|, out / |ag|] shard (in-chunk: its place in rs, out-chunk: its place in ag) and takes
// X as [s / |ag|, in / |rs|]: forward all-gathers X's rows over ag, multiplies (a partial sum
// over rs), reduce-scatters the rows over rs, giving [s / |rs|, out / |ag|]. Backward
// all-gathers the gradient over rs and (kept from the forward) X over ag; dW = Xᵀ G exactly;
// dX = G Wᵀ, reduce-scattered over ag. The MLP's fc1 gathers over X and scatters over Y, fc2 the
// reverse, so the layer's output has its input's layout; attention's QKV likewise (its heads over
// tp_x), its projection the reverse.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/time.hpp>
#include <weft/nn/attention.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/rt/await.hpp>
#include <weft/rt/comm.hpp>
#include <weft/tp/grid.hpp>

namespace weft::tp {

/// What a rank sent, by collective: a ring all-gather of m bytes per member sends (n - 1) m, a
/// ring reduce-scatter of a bytes (n - 1) a / n, a ring all-reduce twice that (docs/tp-2d.md).
struct volume {
  double all_gather = 0, reduce_scatter = 0, all_reduce = 0;
  double total() const noexcept { return all_gather + reduce_scatter + all_reduce; }
};

/// A rank's end of the grid: its groups, blocking collectives on row-major matrices (rows are
/// tokens, so a row range is contiguous), what it sent, and a deadline per wait.
template <class T>
class rank_comm {
 public:
  rank_comm(rt::communicator& c, grid g, seconds timeout = seconds(30))
      : c_(c), g_(g), me_(c.rank()), x_(g.x_group(me_)), y_(g.y_group(me_)), timeout_(timeout) {}

  const grid& layout() const noexcept { return g_; }
  int x() const noexcept { return g_.x_of(me_); }
  int y() const noexcept { return g_.y_of(me_); }
  const std::vector<int>& x_group() const noexcept { return x_; }
  const std::vector<int>& y_group() const noexcept { return y_; }
  const volume& sent() const noexcept { return sent_; }
  void clear_sent() noexcept { sent_ = {}; }

  /// Every member's rows, in member order.
  nn::matrix<T> gather_rows(const nn::matrix<T>& mine, const std::vector<int>& group,
                            const char* what) {
    nn::matrix<T> all(mine.rows() * static_cast<Eigen::Index>(group.size()), mine.cols());
    const auto n = static_cast<double>(group.size());
    sent_.all_gather += (n - 1) * bytes(mine);
    wait(c_.all_gather(span(mine), span(all), group, channel(group)), what);
    return all;
  }
  /// The sum over the members of `all`; this rank's slice of its rows.
  nn::matrix<T> scatter_rows(const nn::matrix<T>& all, const std::vector<int>& group,
                             const char* what) {
    const auto n = static_cast<Eigen::Index>(group.size());
    if (all.rows() % n != 0)
      throw config_error("weft: tp-2d: " + std::to_string(all.rows()) + " rows do not split over " +
                         std::to_string(n) + " ranks");
    nn::matrix<T> mine(all.rows() / n, all.cols());
    sent_.reduce_scatter += (static_cast<double>(n) - 1) / static_cast<double>(n) * bytes(all);
    wait(c_.reduce_scatter_sum(span(all), span(mine), group, channel(group)), what);
    return mine;
  }
  /// The sum over the members, in place (member order: the same bits on every member).
  void sum(nn::matrix<T>& m, const std::vector<int>& group, const char* what) {
    const auto n = static_cast<double>(group.size());
    sent_.all_reduce += 2 * (n - 1) / n * bytes(m);
    wait(c_.all_reduce_sum(span(m), group, channel(group)), what);
  }

 private:
  rt::communicator& c_;
  grid g_;
  int me_;
  std::vector<int> x_, y_;
  seconds timeout_;
  volume sent_;

  // The two groups are communicators of their own; a rank is in one of each.
  int channel(const std::vector<int>& group) const noexcept { return &group == &x_ ? 0 : 1; }
  static double bytes(const nn::matrix<T>& m) { return static_cast<double>(m.size() * sizeof(T)); }
  static std::span<const T> span(const nn::matrix<T>& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }
  static std::span<T> span(nn::matrix<T>& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }
  void wait(rt::event e, const char* what) {
    const rt::deadline d = rt::deadline::after(timeout_);
    if (rt::await(e, d) != rt::await_end::done)
      throw run_error("weft: tp-2d: rank " + std::to_string(me_) + " timed out after " +
                          d.budget_words() + " in " + what,
                      me_);
  }
};

/// Which grid direction a linear layer gathers over (the other it scatters over).
enum class gather_over : unsigned char { x, y };

/// A 2D-sharded linear layer without bias (llama's): see the file's comment.
template <class T>
struct linear2d {
  gather_over ag = gather_over::x;
  nn::param<T> w;  ///< [in / |rs|, out / |ag|]

  struct context {
    nn::matrix<T> x_all;  ///< the gathered input, every row
  };

  /// This rank's shard of a full [in, out] weight.
  static linear2d shard(const nn::matrix<T>& full, gather_over ag, const rank_comm<T>& rc) {
    const grid& g = rc.layout();
    const int nag = ag == gather_over::x ? g.tp_x : g.tp_y,
              nrs = ag == gather_over::x ? g.tp_y : g.tp_x;
    check_linear(static_cast<int>(full.rows()), static_cast<int>(full.cols()), nag, nrs, ag);
    const int at_ag = ag == gather_over::x ? rc.x() : rc.y(),
              at_rs = ag == gather_over::x ? rc.y() : rc.x();
    const Eigen::Index in = full.rows() / nrs, out = full.cols() / nag;
    return {ag, nn::param<T>(full.block(at_rs * in, at_ag * out, in, out))};
  }

  const std::vector<int>& ag_group(const rank_comm<T>& rc) const {
    return ag == gather_over::x ? rc.x_group() : rc.y_group();
  }
  const std::vector<int>& rs_group(const rank_comm<T>& rc) const {
    return ag == gather_over::x ? rc.y_group() : rc.x_group();
  }

  /// [s / |ag|, in / |rs|] -> [s / |rs|, out / |ag|].
  nn::matrix<T> forward(rank_comm<T>& rc, const nn::matrix<T>& x, context& c) const {
    return forward_gathered(rc, rc.gather_rows(x, ag_group(rc), "a linear layer's input"), c);
  }
  /// The same from the input already gathered over ag ([s, in / |rs|]).
  nn::matrix<T> forward_gathered(rank_comm<T>& rc, nn::matrix<T> x_all, context& c) const {
    c.x_all = std::move(x_all);
    return rc.scatter_rows(c.x_all * w.value, rs_group(rc), "a linear layer's output");
  }
  /// From the output's gradient [s / |rs|, out / |ag|]: the input's [s / |ag|, in / |rs|], and
  /// this shard's weight gradient accumulated.
  nn::matrix<T> backward(rank_comm<T>& rc, const nn::matrix<T>& dy, const context& c) {
    const nn::matrix<T> dx = backward_all(rc, rc.gather_rows(dy, rs_group(rc), "a gradient"), c);
    return rc.scatter_rows(dx, ag_group(rc), "an input gradient");
  }
  /// From the output's gradient of every row [s, out / |ag|]: dW, and the input gradient of
  /// every row as this rank's partial sum over ag ([s, in / |rs|]).
  nn::matrix<T> backward_all(rank_comm<T>&, const nn::matrix<T>& dy_all, const context& c) {
    w.grad.noalias() += c.x_all.transpose() * dy_all;
    return dy_all * w.value.transpose();
  }

  static void check_linear(int in, int out, int nag, int nrs, gather_over ag) {
    const char* rs_name = ag == gather_over::x ? "tp-y" : "tp-x";
    const char* ag_name = ag == gather_over::x ? "tp-x" : "tp-y";
    if (in % nrs != 0)
      throw config_error(std::string("weft: tp-2d: input size should be divisible by ") + rs_name +
                         " (" + std::to_string(in) + " over " + std::to_string(nrs) + ")");
    if (out % nag != 0)
      throw config_error(std::string("weft: tp-2d: output size should be divisible by ") + ag_name +
                         " (" + std::to_string(out) + " over " + std::to_string(nag) + ")");
  }
};

/// GeLU (tanh form) and its derivative, element-wise.
template <class T>
nn::matrix<T> gelu(const nn::matrix<T>& x) {
  const T k = std::sqrt(T(2) / T(3.14159265358979323846));
  return x.unaryExpr(
      [k](T v) { return T(0.5) * v * (T(1) + std::tanh(k * (v + T(0.044715) * v * v * v))); });
}
template <class T>
nn::matrix<T> gelu_grad(const nn::matrix<T>& x) {
  const T k = std::sqrt(T(2) / T(3.14159265358979323846));
  return x.unaryExpr([k](T v) {
    const T t = std::tanh(k * (v + T(0.044715) * v * v * v));
    return T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * k * (T(1) + T(3 * 0.044715) * v * v);
  });
}

/// The MLP: fc1 (H -> F, gathers over X, scatters over Y), GeLU, fc2 (F -> H, the reverse).
template <class T>
struct mlp2d {
  linear2d<T> fc1, fc2;
  struct context {
    typename linear2d<T>::context c1, c2;
    nn::matrix<T> h;  ///< fc1's output, before GeLU
  };

  static mlp2d shard(const nn::matrix<T>& w1, const nn::matrix<T>& w2, const rank_comm<T>& rc) {
    return {linear2d<T>::shard(w1, gather_over::x, rc), linear2d<T>::shard(w2, gather_over::y, rc)};
  }
  nn::matrix<T> forward(rank_comm<T>& rc, const nn::matrix<T>& x, context& c) const {
    c.h = fc1.forward(rc, x, c.c1);
    return fc2.forward(rc, gelu(c.h), c.c2);
  }
  nn::matrix<T> backward(rank_comm<T>& rc, const nn::matrix<T>& dy, const context& c) {
    const nn::matrix<T> dg = fc2.backward(rc, dy, c.c2);
    return fc1.backward(rc, (dg.array() * gelu_grad(c.h).array()).matrix(), c.c1);
  }
};

/// Per row, the (mean, M2 = sum of squared deviations) of `n` values each member holds, merged
/// over the members in member order with Chan, Golub and LeVeque's pairwise update — no sum of
/// squares minus a squared sum, which cancels catastrophically — so every member computes the
/// same bits. `stats` holds the members' (mean, M2) rows one after another, 2 columns.
template <class T>
void merge_moments(const nn::matrix<T>& stats, Eigen::Index rows, int members, T n,
                   nn::matrix<T>& mean, nn::matrix<T>& m2) {
  mean = stats.block(0, 0, rows, 1);
  m2 = stats.block(0, 1, rows, 1);
  T count = n;  // values merged so far
  for (int k = 1; k < members; ++k, count += n) {
    const T total = count + n;
    for (Eigen::Index i = 0; i < rows; ++i) {
      const T delta = stats(k * rows + i, 0) - mean(i, 0);
      mean(i, 0) += delta * n / total;
      m2(i, 0) += stats(k * rows + i, 1) + delta * delta * count * n / total;
    }
  }
}

/// Per-row sums over the members of the columns of `local`, added in member order.
template <class T>
nn::matrix<T> ordered_row_sums(rank_comm<T>& rc, const nn::matrix<T>& local,
                               const std::vector<int>& group, const char* what) {
  const nn::matrix<T> all = rc.gather_rows(local, group, what);
  nn::matrix<T> sum = all.topRows(local.rows());
  for (std::size_t k = 1; k < group.size(); ++k)
    sum += all.middleRows(static_cast<Eigen::Index>(k) * local.rows(), local.rows());
  return sum;
}

/// LayerNorm over H split across TP-Y: each rank holds [s / tp_x, H / tp_y] and its scale and
/// shift chunks. Statistics: each rank's (mean, M2) over its columns, all-gathered over TP-Y and
/// merged in member order (`merge_moments`). Backward: the two row sums (of dx̂ and dx̂ · x̂)
/// over TP-Y the same way; the scale and shift gradients summed over TP-X (its rows).
template <class T>
struct layer_norm2d {
  nn::param<T> g, b;  ///< 1 x H / tp_y each
  T eps = T(1e-5);
  int width = 0;  ///< H
  struct context {
    nn::matrix<T> xhat, inv_std;
  };

  static layer_norm2d shard(const nn::matrix<T>& g, const nn::matrix<T>& b, T eps,
                            const rank_comm<T>& rc) {
    const int ty = rc.layout().tp_y;
    if (g.cols() % ty != 0)
      throw config_error("weft: tp-2d: the hidden size (" + std::to_string(g.cols()) +
                         ") should be divisible by tp-y (" + std::to_string(ty) + ")");
    const Eigen::Index w = g.cols() / ty;
    return {nn::param<T>(g.middleCols(rc.y() * w, w)), nn::param<T>(b.middleCols(rc.y() * w, w)),
            eps, static_cast<int>(g.cols())};
  }

  /// Per row, the mean and variance over all H columns (the same bits on every TP-Y member).
  static void moments(rank_comm<T>& rc, const nn::matrix<T>& x, nn::matrix<T>& mean,
                      nn::matrix<T>& var, int width) {
    const Eigen::Index rows = x.rows();
    nn::matrix<T> local(rows, 2);
    local.col(0) = x.rowwise().mean();
    local.col(1) = (x.colwise() - local.col(0)).array().square().rowwise().sum().matrix();
    const nn::matrix<T> stats = rc.gather_rows(local, rc.y_group(), "layer norm statistics");
    nn::matrix<T> m2;
    merge_moments(stats, rows, static_cast<int>(rc.y_group().size()), T(x.cols()), mean, m2);
    var = m2 / T(width);
  }

  nn::matrix<T> forward(rank_comm<T>& rc, const nn::matrix<T>& x, context& c) const {
    nn::matrix<T> mean, var;
    moments(rc, x, mean, var, width);
    c.inv_std = (var.array() + eps).rsqrt().matrix();
    c.xhat = ((x.colwise() - mean.col(0)).array().colwise() * c.inv_std.col(0).array()).matrix();
    return ((c.xhat.array().rowwise() * g.value.row(0).array()).rowwise() + b.value.row(0).array())
        .matrix();
  }
  nn::matrix<T> backward(rank_comm<T>& rc, const nn::matrix<T>& dy, const context& c) {
    const nn::matrix<T> dxhat = (dy.array().rowwise() * g.value.row(0).array()).matrix();
    nn::matrix<T> local(dy.rows(), 2);
    local.col(0) = dxhat.rowwise().sum();
    local.col(1) = (dxhat.array() * c.xhat.array()).rowwise().sum().matrix();
    const nn::matrix<T> s = ordered_row_sums(rc, local, rc.y_group(), "layer norm gradient sums");
    const T h = T(width);
    nn::matrix<T> dx = dxhat * h;
    dx = dx.colwise() - s.col(0);
    dx.array() -= c.xhat.array().colwise() * s.col(1).array();
    // The scale and shift: this rank's rows, then every TP-X member's, in member order.
    nn::matrix<T> dgb(2, g.value.cols());
    dgb.row(0) = (dy.array() * c.xhat.array()).colwise().sum().matrix();
    dgb.row(1) = dy.colwise().sum();
    const nn::matrix<T> all =
        ordered_row_sums(rc, dgb, rc.x_group(), "layer norm weight gradients");
    g.grad.row(0) += all.row(0);
    b.grad.row(0) += all.row(1);
    return (dx.array().colwise() * (c.inv_std.col(0).array() / h)).matrix();
  }
};

/// RMSNorm over H split across TP-Y: the mean square from each rank's sum of squares, summed
/// over TP-Y in member order (squares do not cancel).
template <class T>
struct rms_norm2d {
  nn::param<T> g;  ///< 1 x H / tp_y
  T eps = T(1e-6);
  int width = 0;
  struct context {
    nn::matrix<T> x, r;  ///< r: per row, 1 / rms
  };

  static rms_norm2d shard(const nn::matrix<T>& g, T eps, const rank_comm<T>& rc) {
    const int ty = rc.layout().tp_y;
    if (g.cols() % ty != 0)
      throw config_error("weft: tp-2d: the hidden size (" + std::to_string(g.cols()) +
                         ") should be divisible by tp-y (" + std::to_string(ty) + ")");
    const Eigen::Index w = g.cols() / ty;
    return {nn::param<T>(g.middleCols(rc.y() * w, w)), eps, static_cast<int>(g.cols())};
  }

  nn::matrix<T> forward(rank_comm<T>& rc, const nn::matrix<T>& x, context& c) const {
    const nn::matrix<T> sq = x.array().square().rowwise().sum().matrix();
    const nn::matrix<T> ms =
        ordered_row_sums(rc, sq, rc.y_group(), "rms norm statistics") / T(width);
    c.x = x;
    c.r = (ms.array() + eps).rsqrt().matrix();
    return ((x.array().colwise() * c.r.col(0).array()).rowwise() * g.value.row(0).array()).matrix();
  }
  nn::matrix<T> backward(rank_comm<T>& rc, const nn::matrix<T>& dy, const context& c) {
    const nn::matrix<T> gdy = (dy.array().rowwise() * g.value.row(0).array()).matrix();
    const nn::matrix<T> dot_local = (gdy.array() * c.x.array()).rowwise().sum().matrix();
    const nn::matrix<T> dot =
        ordered_row_sums(rc, dot_local, rc.y_group(), "rms norm gradient sums");
    nn::matrix<T> dx = gdy.array().colwise() * c.r.col(0).array();
    dx.array() -=
        c.x.array().colwise() * (c.r.col(0).array().cube() * dot.col(0).array() / T(width));
    const nn::matrix<T> dg_local =
        (dy.array() * (c.x.array().colwise() * c.r.col(0).array())).colwise().sum().matrix();
    g.grad.row(0) += ordered_row_sums(rc, dg_local, rc.x_group(), "rms norm weight gradients");
    return dx;
  }
};

/// Attention, as MindSpeed lays it out: QKV gathers over X and scatters over Y, each TP-X place
/// holding heads / tp_x heads' q, k and v columns for its s / tp_y rows; the keys and values are
/// all-gathered over Y, so each rank attends its own query rows (causal, offset by its place in
/// Y) over the whole sequence — no member of a TP-Y group repeats another's work; the projection
/// gathers the outputs' rows over Y and scatters over X. Backward, the keys' and values'
/// gradients (each member's queries contribute to every row) are reduce-scattered over Y.
template <class T>
struct attention2d {
  linear2d<T> qkv, proj;
  int heads = 1;  ///< of the whole layer
  struct context {
    typename linear2d<T>::context cq, cp;
    nn::matrix<T> q, k, v;
    std::vector<nn::matrix<T>> p;
  };

  /// From the unsharded layer's wq, wk, wv, wo ([H, H] each).
  static attention2d shard(const nn::attention<T>& full, const rank_comm<T>& rc) {
    const grid& g = rc.layout();
    if (full.heads % g.tp_x != 0)
      throw config_error("weft: tp-2d: the heads (" + std::to_string(full.heads) +
                         ") should be divisible by tp-x (" + std::to_string(g.tp_x) + ")");
    return {linear2d<T>::shard(fused_qkv(full, g.tp_x), gather_over::x, rc),
            linear2d<T>::shard(full.wo.value, gather_over::y, rc), full.heads};
  }
  /// QKV's columns grouped so that TP-X place x gets [q_x | k_x | v_x]: its heads' columns.
  static nn::matrix<T> fused_qkv(const nn::attention<T>& full, int tp_x) {
    const Eigen::Index h = full.wq.value.rows(), w = h / tp_x;
    nn::matrix<T> cat(h, 3 * h);
    for (int x = 0; x < tp_x; ++x) {
      cat.middleCols(3 * w * x, w) = full.wq.value.middleCols(w * x, w);
      cat.middleCols(3 * w * x + w, w) = full.wk.value.middleCols(w * x, w);
      cat.middleCols(3 * w * x + 2 * w, w) = full.wv.value.middleCols(w * x, w);
    }
    return cat;
  }

  /// The heads' outputs of this rank's query rows, from QKV's output [s / tp_y, 3 H / tp_x];
  /// `mask` over all s rows (causal when null).
  nn::matrix<T> attend_rows(rank_comm<T>& rc, const nn::matrix<T>& part, context& c,
                            const nn::attention_mask* mask = nullptr) const {
    const Eigen::Index w = part.cols() / 3, rows = part.rows();
    c.q = part.leftCols(w);
    const nn::matrix<T> kv = rc.gather_rows(part.rightCols(2 * w), rc.y_group(), "keys and values");
    c.k = kv.leftCols(w);
    c.v = kv.rightCols(w);
    const int h = heads / rc.layout().tp_x;
    if (mask) return nn::attend(c.q, c.k, c.v, *mask, rc.y() * rows, h, c.p);
    return nn::attend(c.q, c.k, c.v, nn::causal_mask(kv.rows()), rc.y() * rows, h, c.p);
  }
  /// The backward of `attend_rows`: QKV's output gradient, from the heads' outputs'.
  nn::matrix<T> attend_rows_backward(rank_comm<T>& rc, const nn::matrix<T>& dout,
                                     const context& c) const {
    nn::matrix<T> dq, dk, dv;
    nn::attend_backward(dout, c.q, c.k, c.v, c.p, heads / rc.layout().tp_x, dq, dk, dv);
    nn::matrix<T> dkv(dk.rows(), 2 * dk.cols());
    dkv << dk, dv;
    const nn::matrix<T> mine = rc.scatter_rows(dkv, rc.y_group(), "keys' and values' gradients");
    nn::matrix<T> dall(dq.rows(), 3 * dq.cols());
    dall << dq, mine;
    return dall;
  }

  nn::matrix<T> forward(rank_comm<T>& rc, const nn::matrix<T>& x, context& c) const {
    return proj.forward(rc, attend_rows(rc, qkv.forward(rc, x, c.cq), c), c.cp);
  }
  nn::matrix<T> backward(rank_comm<T>& rc, const nn::matrix<T>& dy, const context& c) {
    return qkv.backward(rc, attend_rows_backward(rc, proj.backward(rc, dy, c.cp), c), c.cq);
  }
};

}  // namespace weft::tp
