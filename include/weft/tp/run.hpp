// Running a tensor-parallel linear's schedule (tp/schedule.hpp) for real: a binding whose
// kernels are the all-gather (whole, or a ring step), the matmul pieces and the reduce-scatter
// (whole, a strided chunk, or a ring piece's rows to their owners) on every rank of a grid, as
// the runner (exec/runner.hpp) calls them — each rank one replica of the schedule's one pipeline
// rank, its collectives over its grid groups through the communication interface.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/exec/runner.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/tp/grid.hpp>
#include <weft/tp/layers.hpp>
#include <weft/tp/schedule.hpp>

namespace weft::tp {

/// A run of rows of the sequence.
struct row_range {
  Eigen::Index first = 0, count = 0;
};

/// One linear [in, out] sharded on a grid and overlapped as `overlap`: each rank's input
/// [s / |gather|, in / |scatter|], weight shard and output [s / |scatter|, out / |gather|] (the
/// layouts of `linear2d`), and the kernels the runner calls on them.
template <class T>
class linear_binding {
 public:
  /// Shards `w_full` ([in, out]) for every rank of `g`; the input will have `seq` rows in all.
  /// `config_error` for sizes the groups or the overlap's pieces do not divide.
  linear_binding(const grid& g, gather_over ag, const nn::matrix<T>& w_full, Eigen::Index seq,
                 tp_overlap overlap)
      : grid_(g), ag_(ag), overlap_(overlap), seq_(seq) {
    const int G = ag == gather_over::x ? g.tp_x : g.tp_y,
              S = ag == gather_over::x ? g.tp_y : g.tp_x;
    linear2d<T>::check_linear(static_cast<int>(w_full.rows()), static_cast<int>(w_full.cols()), G,
                              S, ag);
    pieces_ = pieces_for(overlap, {G, S});
    const auto bad = [&](const std::string& what, Eigen::Index by) {
      throw config_error("weft: tp2d: the sequence (" + std::to_string(seq) +
                         ") should be divisible by " + what + " (" + std::to_string(by) + ")");
    };
    if (seq < 1) bad("a positive length", 1);
    if (seq % G != 0) bad("the gather group's size", G);
    if (seq % S != 0) bad("the scatter group's size", S);
    if (overlap == tp_overlap::matmul_rs && seq % (static_cast<Eigen::Index>(S) * pieces_) != 0)
      bad("the scatter group's size squared, for matmul-rs overlap",
          static_cast<Eigen::Index>(S) * pieces_);
    in_ = w_full.rows() / S;
    out_ = w_full.cols() / G;
    for (int r = 0; r < g.size(); ++r) {
      rank_state st;
      st.gather = ag == gather_over::x ? g.x_group(r) : g.y_group(r);
      st.scatter = ag == gather_over::x ? g.y_group(r) : g.x_group(r);
      st.g = index_in(st.gather, r);
      st.s = index_in(st.scatter, r);
      st.w = nn::param<T>(w_full.block(st.s * in_, st.g * out_, in_, out_));
      ranks_.push_back(std::move(st));
    }
  }

  int pieces() const noexcept { return pieces_; }
  tp_overlap overlap() const noexcept { return overlap_; }
  int gather_size() const noexcept { return static_cast<int>(ranks_[0].gather.size()); }
  int scatter_size() const noexcept { return static_cast<int>(ranks_[0].scatter.size()); }

  /// The schedule this binding runs: the forward alone, or the backward as a fragment.
  schedule forward_schedule() const { return linear_schedule(overlap_, pieces_, false); }
  schedule backward_schedule(bool split = false) const {
    return linear_backward(overlap_, pieces_, split);
  }

  /// Rank `r`'s input [s / |gather|, in / |scatter|], before a forward.
  void set_input(int r, const nn::matrix<T>& x) {
    rank_state& st = at(r);
    expect(x, seq_ / gather_size(), in_, "input");
    st.x_all.resize(seq_, in_);
    st.x_all.middleRows(st.g * x.rows(), x.rows()) = x;  // a ring starts from its own rows
    st.partial = nn::matrix<T>::Zero(seq_, out_);
    st.y.resize(seq_ / scatter_size(), out_);
    st.send.assign(static_cast<std::size_t>(pieces_), nn::matrix<T>());
    st.recv.assign(static_cast<std::size_t>(pieces_), nn::matrix<T>());
    st.x_own = x;
  }
  /// Rank `r`'s output [s / |scatter|, out / |gather|], after a forward.
  const nn::matrix<T>& output(int r) const { return at(r).y; }
  /// Rank `r`'s output gradient, before a backward.
  void set_output_grad(int r, const nn::matrix<T>& dy) {
    rank_state& st = at(r);
    expect(dy, seq_ / scatter_size(), out_, "output gradient");
    st.dy = dy;
    st.dy_all.resize(seq_, out_);
    st.dx_partial = nn::matrix<T>::Zero(seq_, in_);
    st.dx.resize(seq_ / gather_size(), in_);
  }
  /// Rank `r`'s input gradient, after a backward.
  const nn::matrix<T>& input_grad(int r) const { return at(r).dx; }
  nn::param<T>& weight(int r) { return at(r).w; }
  /// What rank `r` sent since the last `clear_sent`, as rings send (`rank_comm`'s accounting): a
  /// ring step its block, a fused piece the rows it sends to other owners.
  const volume& sent(int r) const { return at(r).sent; }
  void clear_sent() {
    for (rank_state& st : ranks_) st.sent = {};
  }
  const nn::param<T>& weight(int r) const { return at(r).w; }

  // The kernels.
  void operator()(kinds::all_gather, phases::forward, exec::run_call& c) {
    rank_state& st = mine(c);
    if (!ring()) {
      st.sent.all_gather += (gather_size() - 1.0) * bytes(st.x_own);
      c.started =
          c.comm->all_gather(const_view(st.x_own), view(st.x_all), st.gather, gather_channel);
      return;
    }
    // Ring step j: the rows of member g - j arrive from the previous member while this rank
    // passes on those of member g - j + 1 (its own at step 1).
    const int G = gather_size(), j = c.op.split;
    const Eigen::Index block = seq_ / G;
    const auto at_member = [&](int k) { return ((k % G) + G) % G; };
    const int prev = st.gather[static_cast<std::size_t>(at_member(st.g - 1))];
    const int next = st.gather[static_cast<std::size_t>(at_member(st.g + 1))];
    if (c.step == 0) {
      st.sent.all_gather += static_cast<double>(block * in_) * sizeof(T);
      st.ring_recv =
          c.comm->irecv(rows(st.x_all, {at_member(st.g - j) * block, block}), prev, ring_tag);
      c.started =
          c.comm->isend(rows(st.x_all, {at_member(st.g - j + 1) * block, block}), next, ring_tag);
      return;
    }
    c.started = st.ring_recv;
  }
  void operator()(kinds::block, phases::forward, exec::run_call& c) {
    rank_state& st = mine(c);
    const int j = c.op.split;
    if (overlap_ == tp_overlap::matmul_rs) {  // owner-major rows, as the reduce-scatter sends them
      const std::vector<row_range> r = piece_rows(st, j);
      nn::matrix<T>& send = st.send[static_cast<std::size_t>(j)];
      send.resize(r[0].count * static_cast<Eigen::Index>(r.size()), out_);
      for (std::size_t k = 0; k < r.size(); ++k)
        send.middleRows(static_cast<Eigen::Index>(k) * r[k].count, r[k].count).noalias() =
            st.x_all.middleRows(r[k].first, r[k].count) * st.w.value;
      return;
    }
    for (const row_range& r : piece_rows(st, j))
      st.partial.middleRows(r.first, r.count).noalias() =
          st.x_all.middleRows(r.first, r.count) * st.w.value;
  }
  void operator()(kinds::reduce_scatter, phases::forward, exec::run_call& c) {
    rank_state& st = mine(c);
    const int j = c.op.split;
    switch (overlap_) {
      case tp_overlap::matmul_rs: {
        const Eigen::Index r = seq_ / scatter_size() / pieces_;
        st.sent.reduce_scatter +=
            share_sent(scatter_size()) * bytes(st.send[static_cast<std::size_t>(j)]);
        c.started = c.comm->reduce_scatter_sum(const_view(st.send[static_cast<std::size_t>(j)]),
                                               rows(st.y, {j * r, r}), st.scatter, scatter_channel);
        return;
      }
      case tp_overlap::fused:
        return to_owners(st, j, c);
      default:
        st.sent.reduce_scatter += share_sent(scatter_size()) * bytes(st.partial);
        c.started = c.comm->reduce_scatter_sum(const_view(st.partial), view(st.y), st.scatter,
                                               scatter_channel);
    }
  }
  void operator()(kinds::all_gather, phases::backward, exec::run_call& c) {
    rank_state& st = mine(c);
    st.sent.all_gather += (scatter_size() - 1.0) * bytes(st.dy);
    c.started = c.comm->all_gather(const_view(st.dy), view(st.dy_all), st.scatter, scatter_channel);
  }
  void operator()(kinds::block, phases::backward, exec::run_call& c) {
    input_grad_piece(mine(c), c.op.split);
    weight_grad_piece(mine(c), c.op.split);
  }
  void operator()(kinds::block, phases::backward_dx, exec::run_call& c) {
    input_grad_piece(mine(c), c.op.split);
  }
  void operator()(kinds::block, phases::backward_dw, exec::run_call& c) {
    weight_grad_piece(mine(c), c.op.split);
  }
  void operator()(kinds::reduce_scatter, phases::backward, exec::run_call& c) {
    rank_state& st = mine(c);
    st.sent.reduce_scatter += share_sent(gather_size()) * bytes(st.dx_partial);
    c.started = c.comm->reduce_scatter_sum(const_view(st.dx_partial), view(st.dx), st.gather,
                                           gather_channel);
  }
  /// A ring step posts its two transfers, then waits for the receive; a fused piece's rows go
  /// to their owners, then each owner adds what it received.
  int comm_steps(const op& o) const noexcept {
    if (o.ph != phase::F) return 1;
    if (o.k == kind::all_gather &&
        (overlap_ == tp_overlap::ag_matmul || overlap_ == tp_overlap::fused))
      return 2;
    if (o.k == kind::reduce_scatter && overlap_ == tp_overlap::fused) return 2;
    return 1;
  }

  /// The rows piece `j` of rank `r`'s matmul covers: all of them; a ring's block of member
  /// g - j; or matmul-rs's strided chunk (slice j of every member's share of the output).
  std::vector<row_range> piece_rows(int r, int j) const { return piece_rows(at(r), j); }

 private:
  static constexpr int ring_tag = 1;
  static constexpr int gather_channel = 0, scatter_channel = 1;

  struct rank_state {
    std::vector<int> gather, scatter;
    int g = 0, s = 0;  ///< this rank's place in each group
    nn::param<T> w;
    nn::matrix<T> x_own, x_all, partial, y;
    std::vector<nn::matrix<T>> send, recv;  ///< per piece (matmul-rs, fused)
    std::vector<std::size_t> send_counts, recv_counts;
    nn::matrix<T> dy, dy_all, dx_partial, dx;
    rt::event ring_recv;
    volume sent;
  };

  grid grid_;
  gather_over ag_;
  tp_overlap overlap_;
  Eigen::Index seq_, in_ = 0, out_ = 0;
  int pieces_ = 1;
  std::vector<rank_state> ranks_;

  bool ring() const noexcept {
    return overlap_ == tp_overlap::ag_matmul || overlap_ == tp_overlap::fused;
  }
  rank_state& at(int r) {
    if (r < 0 || r >= static_cast<int>(ranks_.size()))
      throw config_error("weft: tp2d: rank " + std::to_string(r) + " is outside the grid");
    return ranks_[static_cast<std::size_t>(r)];
  }
  const rank_state& at(int r) const { return const_cast<linear_binding*>(this)->at(r); }
  rank_state& mine(const exec::run_call& c) { return at(c.world_rank); }
  static int index_in(const std::vector<int>& group, int r) {
    return static_cast<int>(std::find(group.begin(), group.end(), r) - group.begin());
  }
  static void expect(const nn::matrix<T>& m, Eigen::Index rows, Eigen::Index cols,
                     const char* what) {
    if (m.rows() != rows || m.cols() != cols)
      throw config_error(std::string("weft: tp2d: the ") + what + " is " +
                         std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                         ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  static double bytes(const nn::matrix<T>& m) { return static_cast<double>(m.size() * sizeof(T)); }
  /// A ring reduce-scatter over n members sends (n - 1) / n of its input.
  static double share_sent(int n) { return (n - 1.0) / n; }
  static rt::const_data const_view(const nn::matrix<T>& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }
  static rt::mutable_data view(nn::matrix<T>& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }
  static rt::mutable_data rows(nn::matrix<T>& m, row_range r) {
    return {m.data() + r.first * m.cols(), static_cast<std::size_t>(r.count * m.cols())};
  }

  std::vector<row_range> piece_rows(const rank_state& st, int j) const {
    if (pieces_ == 1) return {{0, seq_}};
    if (ring()) {
      const int G = gather_size();
      const Eigen::Index block = seq_ / G;
      return {{static_cast<Eigen::Index>(((st.g - j) % G + G) % G) * block, block}};
    }
    const int S = scatter_size();
    const Eigen::Index share = seq_ / S, slice = share / pieces_;
    std::vector<row_range> out;
    for (int k = 0; k < S; ++k) out.push_back({k * share + j * slice, slice});
    return out;
  }

  // A fused piece: its ring block's rows, partial sums, go to the members that own them (rows
  // [k s / S, (k + 1) s / S) are member k's); step 1 adds what this rank received, in member
  // order, into its output.
  void to_owners(rank_state& st, int j, exec::run_call& c) {
    const row_range b = piece_rows(st, j)[0];
    const int S = scatter_size();
    const Eigen::Index share = seq_ / S;
    const auto overlap_of = [&](Eigen::Index first, Eigen::Index count) {
      const Eigen::Index lo = std::max(first, b.first),
                         hi = std::min(first + count, b.first + b.count);
      return row_range{lo, std::max<Eigen::Index>(0, hi - lo)};
    };
    const row_range own = overlap_of(st.s * share, share);
    nn::matrix<T>& in = st.recv[static_cast<std::size_t>(j)];
    if (c.step == 1) {
      // A piece none of whose rows this rank owns adds nothing (and its empty range may lie
      // outside the output: no block of it is taken).
      for (int k = 0; k < S && own.count > 0; ++k) {
        const auto block = in.middleRows(k * own.count, own.count);
        auto out = st.y.middleRows(own.first - st.s * share, own.count);
        if (k == 0)
          out = block;
        else
          out += block;
      }
      rt::event done;
      done.fire();
      c.started = done;
      return;
    }
    std::vector<std::size_t> send_counts, recv_counts;
    for (int k = 0; k < S; ++k) {
      send_counts.push_back(static_cast<std::size_t>(overlap_of(k * share, share).count * out_));
      recv_counts.push_back(static_cast<std::size_t>(own.count * out_));
    }
    for (int k = 0; k < S; ++k)
      if (k != st.s)
        st.sent.reduce_scatter +=
            static_cast<double>(send_counts[static_cast<std::size_t>(k)]) * sizeof(T);
    in.resize(own.count * S, out_);
    st.send_counts = std::move(send_counts);
    st.recv_counts = std::move(recv_counts);
    c.started = c.comm->all_to_all_v(rows(st.partial, b), st.send_counts, view(in), st.recv_counts,
                                     st.scatter, scatter_channel);
  }

  void input_grad_piece(rank_state& st, int j) {
    for (const row_range& r : piece_rows(st, j))
      st.dx_partial.middleRows(r.first, r.count).noalias() =
          st.dy_all.middleRows(r.first, r.count) * st.w.value.transpose();
  }
  void weight_grad_piece(rank_state& st, int j) {
    for (const row_range& r : piece_rows(st, j))
      st.w.grad.noalias() += st.x_all.middleRows(r.first, r.count).transpose() *
                             st.dy_all.middleRows(r.first, r.count);
  }
};

}  // namespace weft::tp
