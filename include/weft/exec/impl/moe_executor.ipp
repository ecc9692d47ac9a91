// The MoE executor's work (exec/moe_executor.hpp): part of the header in header-only builds,
// compiled once for float and double into `weft::exec_compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <cstddef>
#include <functional>
#include <range/v3/action/stable_sort.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <weft/exec/collect.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/schedule/lower.hpp>

namespace weft::exec::detail {

template <class T>
class moe_run {
 public:
  moe_run(const moe_model<T>& model, run_options opt) : model_(model), opt_(std::move(opt)) {}

  /// Runs `s` on ranks x replicas (world rank = rank * replicas + replica). Throws
  /// `config_error` when the schedule does not fit the model, `run_error` when the run fails.
  run_result<T> run(const schedule& s) {
    run_result<T> out;
    out.prog = lower(s);
    const model_desc& m = out.prog.source.model;
    check_fits(out.prog);
    setup(m);
    kernels k{*this};
    out.time = run_program(out.prog, model_.cfg.replicas, k, opt_, &out);
    losses(m);
    if (opt_.comm) collect(m);
    finish(m, out);
    return out;
  }

  /// An op's sub-stage kernels, one per (kind, phase), for `binds`/`binds_all`.
  struct kernels;

 private:
  // One all-to-all's buffers; they stay put until its event fires. A layer's four all-to-alls
  // (dispatch and combine, forward and backward) follow one another, so they share one set.
  struct exchange {
    std::vector<T> send, recv;
    std::vector<std::size_t> send_counts, recv_counts;
  };
  struct layer_state {
    typename moe_layer<T>::context ctx;
    /// This split's part of the layer's input gradient (attn B or dX): of every token, since
    /// its queries attended to all of them; the layer's is the sum over its splits.
    nn::matrix<T> dx;
  };
  /// One piece of a split's routed-expert path (the whole split without pipe-experts): its
  /// tokens' (token, k) pairs in the order they are sent, grouped by the replica that holds
  /// their expert; how many go to and come from each replica; the rows its experts process.
  struct piece_state {
    std::vector<int> order;
    std::vector<std::size_t> rows_to, rows_from;
    exchange a2a;
    typename moe_layer<T>::expert_rows rows;
  };
  struct unit {                       // one (replica, micro-batch, chunk)
    std::vector<layer_state> layers;  ///< [layer * splits + split]
    std::vector<piece_state> pieces;  ///< [layer * parts + part]
    std::vector<moe_layer<T>> grad;   ///< this unit's weight gradients, kept apart
    nn::matrix<T> in_act, in_grad, out_act, out_grad;
    T loss = 0;    ///< the last chunk's: its part of the step's loss
    T logged = 0;  ///< the micro-batch's loss as the logging all-reduce leaves it
  };

  void check_fits(const program& p) const {
    const model_desc& m = p.source.model;
    const moe_config& c = model_.cfg;
    const stage_set want = c.shared_expert ? stage_set::moe_with_shared() : stage_set::moe();
    if (!(m.stages == want))
      throw config_error(std::string("weft: run: the MoE model runs schedules of its sub-stages "
                                     "(attn, dispatch, mlp, combine") +
                         (c.shared_expert ? ", shared" : "") + ")");
    if (c.tokens % m.splits != 0)
      throw config_error("weft: run: the AMPipe degree (splits = " + std::to_string(m.splits) +
                         ") must divide the tokens per micro-batch (" + std::to_string(c.tokens) +
                         ")");
    if (m.micro != c.micro)
      throw config_error("weft: run: the schedule has " + std::to_string(m.micro) +
                         " micro-batches, the model " + std::to_string(c.micro));
    if (m.layers != c.layers)
      throw config_error("weft: run: the schedule has " + std::to_string(m.layers) +
                         " layers per chunk, the model " + std::to_string(c.layers));
    if (stage_of_chunk(m, m.chunks() - 1) + 1 != c.stages)
      throw config_error("weft: run: the schedule's chunks do not carry the model's " +
                         std::to_string(c.stages) + " stages");
    if ((c.tokens / m.splits) % m.pieces != 0)
      throw config_error("weft: run: pipe-experts pieces (" + std::to_string(m.pieces) +
                         ") must divide the tokens of an AMPipe chunk (" +
                         std::to_string(c.tokens / m.splits) + ")");
    // The replicas of a pipeline rank run one stream program, so each comm lane issues its
    // all-to-alls in one order on every member of the group; the lane is the collective's
    // channel (rt::communicator), so two lanes may interleave theirs freely.
  }

  void setup(const model_desc& m) {
    m_ = m;
    ix_ = op_index(m, false);
    const int R = model_.cfg.replicas;
    units_.assign(static_cast<std::size_t>(R * m.micro * m.chunks()), unit{});
    for (int r = 0; r < R; ++r)
      for (int mb = 0; mb < m.micro; ++mb)
        for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
          unit& u = at(r, mb, c);
          u.layers.resize(static_cast<std::size_t>(m.layers * m.splits));
          u.pieces.resize(static_cast<std::size_t>(m.layers * m.parts()));
          u.grad = stage(c);
          for (auto& layer : u.grad) layer.each_param([](nn::param<T>& pr) { pr.zero_grad(); });
        }
    members_.assign(static_cast<std::size_t>(m.ranks), {});
    for (int rank = 0; rank < m.ranks; ++rank)
      for (int r = 0; r < R; ++r) members_[static_cast<std::size_t>(rank)].push_back(rank * R + r);
  }

  unit& at(int r, int mb, int c) {
    return units_[static_cast<std::size_t>((r * m_.micro + mb) * m_.chunks() + c)];
  }
  layer_state& state(int r, int mb, int c, int l, int sp) {
    return at(r, mb, c).layers[static_cast<std::size_t>(l * m_.splits + sp)];
  }
  /// The split an op belongs to (a piece's split for the routed-expert path).
  int split_of(const op& o) const { return m_.split_of(o.k, o.split); }
  layer_state& state(const run_call& k) {
    return state(k.replica, k.op.mb, k.op.chunk, k.op.layer, split_of(k.op));
  }
  piece_state& piece(const run_call& k) {
    return at(k.replica, k.op.mb, k.op.chunk)
        .pieces[static_cast<std::size_t>(k.op.layer * m_.parts() + k.op.split)];
  }
  /// A piece's tokens within its split: rows [first, first + rows) of the split's.
  Eigen::Index piece_rows() const { return split_rows() / m_.pieces; }
  Eigen::Index piece_first(const op& o) const { return o.split % m_.pieces * piece_rows(); }
  /// An AMPipe chunk's tokens: rows [split * rows, (split + 1) * rows) of the micro-batch.
  Eigen::Index split_rows() const { return model_.cfg.tokens / m_.splits; }
  Eigen::Index first_row(const op& o) const { return split_of(o) * split_rows(); }
  const std::vector<moe_layer<T>>& stage(int c) const {
    return model_.stages[static_cast<std::size_t>(stage_of_chunk(m_, c))];
  }
  const moe_layer<T>& layer(const op& o) const { return stage(o.chunk)[o.layer]; }
  moe_layer<T>& grad_layer(const run_call& k) {
    return at(k.replica, k.op.mb, k.op.chunk).grad[k.op.layer];
  }

  // Activations and gradients between layers and chunks. Layer outputs are not stored: each
  // consumer computes h + routed + shared from the layer's contexts (one per split, its rows of
  // the output), which no op rewrites after combine F and shared F (what every consumer waits
  // for). Likewise a layer's input gradient is summed from its splits' where it is needed.
  nn::matrix<T> output(int r, int mb, int c, int l) {
    const auto& lay = stage(c)[static_cast<std::size_t>(l)];
    if (m_.splits == 1) return lay.output(state(r, mb, c, l, 0).ctx);
    nn::matrix<T> y(model_.cfg.tokens, model_.cfg.width);
    for (int sp = 0; sp < m_.splits; ++sp)
      y.middleRows(sp * split_rows(), split_rows()) = lay.output(state(r, mb, c, l, sp).ctx);
    return y;
  }
  nn::matrix<T> input_grad(int r, int mb, int c, int l) {
    nn::matrix<T> dx = state(r, mb, c, l, 0).dx;
    for (int sp = 1; sp < m_.splits; ++sp) dx += state(r, mb, c, l, sp).dx;
    return dx;
  }
  nn::matrix<T> input(int r, int mb, int c, int l) {
    if (l > 0) return output(r, mb, c, l - 1);
    if (c == m_.first_chunk(mb))
      return model_.inputs[static_cast<std::size_t>(r)][static_cast<std::size_t>(mb)];
    if (ix_.crosses_ranks(c, c - 1)) return at(r, mb, c).in_act;
    return output(r, mb, c - 1, m_.layers - 1);
  }
  nn::matrix<T> output_grad(int r, int mb, int c, int l) {
    if (l + 1 < m_.layers) return input_grad(r, mb, c, l + 1);
    if (c == m_.end_chunk(mb) - 1)
      return nn::mse_loss<T>::gradient(output(r, mb, c, l), target(r, mb)) / model_.loss_divisor();
    if (ix_.crosses_ranks(c, c + 1)) return at(r, mb, c).in_grad;
    return input_grad(r, mb, c + 1, 0);
  }
  /// The output gradient of an op's own tokens (its split's rows).
  nn::matrix<T> op_output_grad(const run_call& k) {
    const nn::matrix<T> g = output_grad(k.replica, k.op.mb, k.op.chunk, k.op.layer);
    if (m_.splits == 1) return g;
    return g.middleRows(first_row(k.op), split_rows());
  }
  const nn::matrix<T>& target(int r, int mb) const {
    return model_.targets[static_cast<std::size_t>(r)][static_cast<std::size_t>(mb)];
  }

  static rt::event fired() {
    rt::event e;
    e.fire();
    return e;
  }
  /// Starts an all-to-all of rows `width` values wide: `send_rows[j]` rows to member j,
  /// `recv_rows[j]` from member j.
  rt::event exchange_rows(const run_call& k, exchange& x, const std::vector<std::size_t>& send_rows,
                          const std::vector<std::size_t>& recv_rows, std::size_t width) {
    x.send_counts.resize(send_rows.size());
    x.recv_counts.resize(recv_rows.size());
    std::size_t total = 0;
    for (std::size_t j = 0; j < send_rows.size(); ++j) x.send_counts[j] = send_rows[j] * width;
    for (std::size_t j = 0; j < recv_rows.size(); ++j)
      total += x.recv_counts[j] = recv_rows[j] * width;
    x.recv.assign(total, T(0));
    return k.comm->all_to_all_v(x.send, x.send_counts, x.recv, x.recv_counts,
                                members_[static_cast<std::size_t>(k.rank)], k.op.lane);
  }
  /// Appends rows of `m`, in `order` (or all rows in order when `order` is empty), to `out`.
  static void pack(const nn::matrix<T>& m, const std::vector<int>* order, std::vector<T>& out) {
    out.clear();
    const auto rows = static_cast<Eigen::Index>(order ? order->size() : std::size_t(m.rows()));
    for (Eigen::Index q = 0; q < rows; ++q) {
      const Eigen::Index i = order ? (*order)[static_cast<std::size_t>(q)] : q;
      out.insert(out.end(), m.row(i).data(), m.row(i).data() + m.cols());
    }
  }

  // The sub-stages. Each all-to-all is a few steps on its comm stream: start the exchange,
  // then, once it is complete, place what arrived (so the data is in place when the op's event
  // fires and the consumers run).

  void dispatch_forward(run_call& k) {
    auto& c = state(k).ctx;
    piece_state& s = piece(k);
    const Eigen::Index width = c.z.cols();
    const auto R = static_cast<std::size_t>(model_.cfg.replicas);
    exchange& x = s.a2a;
    if (k.step == 0) {  // how many rows go where, so every member can size what it receives
      // The piece's kept (token, k) pairs grouped by the replica owning their expert, in token
      // order within a group, and the group sizes.
      const auto owner_of = [&](int pair) {
        return static_cast<std::size_t>(
            model_.owner(c.chosen.expert[static_cast<std::size_t>(pair)]));
      };
      const int k_ = layer(k.op).route.k;
      const auto first = static_cast<int>(piece_first(k.op)) * k_;
      const auto last = first + static_cast<int>(piece_rows()) * k_;
      s.order.clear();
      for (int pair = first; pair < last; ++pair)
        if (c.chosen.kept[static_cast<std::size_t>(pair)]) s.order.push_back(pair);
      s.order |= ranges::actions::stable_sort(std::less<>{}, owner_of);
      s.rows_to.assign(R, 0);
      for (const int pair : s.order) ++s.rows_to[owner_of(pair)];
      x.send.assign(s.rows_to.begin(), s.rows_to.end());
      k.started =
          exchange_rows(k, x, std::vector<std::size_t>(R, 1), std::vector<std::size_t>(R, 1), 1);
      return;
    }
    if (k.step == 1) {  // the rows, each with its expert's number in an extra column
      s.rows_from.resize(R);
      for (std::size_t j = 0; j < R; ++j) s.rows_from[j] = static_cast<std::size_t>(x.recv[j]);
      x.send.clear();
      for (const int pair : s.order) {
        const auto row = c.expert_in.row(pair);
        x.send.insert(x.send.end(), row.data(), row.data() + width);
        x.send.push_back(static_cast<T>(c.chosen.expert[static_cast<std::size_t>(pair)]));
      }
      k.started = exchange_rows(k, x, s.rows_to, s.rows_from, static_cast<std::size_t>(width) + 1);
      return;
    }
    auto& rows = s.rows;  // the expert side: what this replica's experts process
    const auto n = static_cast<Eigen::Index>(x.recv.size()) / (width + 1);
    rows.in.resize(n, width);
    rows.expert.resize(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) {
      const T* src = x.recv.data() + i * (width + 1);
      std::copy(src, src + width, rows.in.row(i).data());
      rows.expert[static_cast<std::size_t>(i)] = static_cast<int>(src[width]);
    }
    k.started = fired();
  }

  void combine_forward(run_call& k) {
    rows_to_tokens(k, piece(k).rows.out, state(k).ctx.routed_out);
  }

  void combine_backward(run_call& k) {
    auto& c = state(k).ctx;
    piece_state& s = piece(k);
    const Eigen::Index width = c.z.cols();
    if (k.step == 0) {
      // The gradient of the piece's tokens' outputs: its rows of the split's.
      const nn::matrix<T> dy = op_output_grad(k);
      layer(k.op).combine_backward(dy, c, piece_first(k.op), piece_rows());
      pack(c.dexpert_out, &s.order, s.a2a.send);
      k.started = exchange_rows(k, s.a2a, s.rows_to, s.rows_from, static_cast<std::size_t>(width));
      return;
    }
    const auto& x = s.a2a.recv;
    s.rows.dout.resize(static_cast<Eigen::Index>(x.size()) / width, width);
    std::copy(x.begin(), x.end(), s.rows.dout.data());
    k.started = fired();
  }

  void dispatch_backward(run_call& k) {
    rows_to_tokens(k, piece(k).rows.din, state(k).ctx.dexpert_in);
  }

  /// combine F and dispatch B: the expert side's rows back to the replicas their tokens live on,
  /// then into pair order there. Each piece writes only its own pairs' rows (sized by attn F,
  /// zero for pairs the capacity dropped), so pieces on different streams never touch a row
  /// twice.
  void rows_to_tokens(run_call& k, const nn::matrix<T>& rows, nn::matrix<T>& into) {
    piece_state& s = piece(k);
    const Eigen::Index width = into.cols();
    if (k.step == 0) {
      pack(rows, nullptr, s.a2a.send);
      k.started = exchange_rows(k, s.a2a, s.rows_from, s.rows_to, static_cast<std::size_t>(width));
      return;
    }
    for (std::size_t q = 0; q < s.order.size(); ++q)
      std::copy(s.a2a.recv.data() + static_cast<Eigen::Index>(q) * width,
                s.a2a.recv.data() + static_cast<Eigen::Index>(q + 1) * width,
                into.row(s.order[q]).data());
    k.started = fired();
  }

  /// A pipeline transfer: the chunk's output (F) or input gradient (B), to or from the peer the
  /// runner paired it with (FIFO per channel, as the checker pairs them).
  rt::event transfer(const run_call& k) {
    const op& o = k.op;
    unit& u = at(k.replica, o.mb, o.chunk);
    if (o.k == kind::send) {
      if (o.ph == phase::F)
        u.out_act = output(k.replica, o.mb, o.chunk, m_.layers - 1);
      else
        u.out_grad = input_grad(k.replica, o.mb, o.chunk, 0);
      const nn::matrix<T>& data = o.ph == phase::F ? u.out_act : u.out_grad;
      return k.comm->isend({data.data(), static_cast<std::size_t>(data.size())}, k.peer, k.tag);
    }
    nn::matrix<T>& into = o.ph == phase::F ? u.in_act : u.in_grad;
    into.resize(model_.cfg.tokens, model_.cfg.width);
    return k.comm->irecv({into.data(), static_cast<std::size_t>(into.size())}, k.peer, k.tag);
  }

  /// The loss all-reduce for logging (MindSpeed's pp-cross-dc-comm-overlap note): this replica's
  /// micro-batch loss summed over the replicas, the data-parallel group of the layers outside
  /// the experts.
  rt::event log_loss(const run_call& k) {
    unit& u = at(k.replica, k.op.mb, k.op.chunk);
    u.logged = nn::mse_loss<T>::value(output(k.replica, k.op.mb, k.op.chunk, m_.layers - 1),
                                      target(k.replica, k.op.mb)) /
               model_.loss_divisor();
    return k.comm->all_reduce_sum({&u.logged, 1}, members_[static_cast<std::size_t>(k.rank)],
                                  k.op.lane);
  }

  /// The world rank that ran unit (r, mb, c).
  int owner(int r, int c) const { return m_.rank_of(c) * model_.cfg.replicas + r; }

  /// After the run, where the last chunks ran: each micro-batch's loss on each replica.
  void losses(const model_desc& m) {
    for (int r = 0; r < model_.cfg.replicas; ++r)
      for (int mb = 0; mb < m.micro; ++mb) {
        const int last = m.end_chunk(mb) - 1;
        if (opt_.comm && owner(r, last) != opt_.comm->rank()) continue;
        at(r, mb, last).loss =
            nn::mse_loss<T>::value(output(r, mb, last, m.layers - 1), target(r, mb)) /
            model_.loss_divisor();
      }
  }

  /// A run over a world of processes: each unit's loss and gradients to rank 0, which then
  /// finishes as an in-process run does.
  void collect(const model_desc& m) {
    const auto C = static_cast<std::size_t>(m.chunks()), M = static_cast<std::size_t>(m.micro);
    collect_units<T>(
        *opt_.comm, units_,
        [&](std::size_t u) {
          return owner(static_cast<int>(u / (M * C)), static_cast<int>(u % C));
        },
        opt_.timeout);
  }

  /// After the run: the loss, and each stage's gradients summed over micro-batches, then
  /// chunks, then replicas — a fixed order, so repeated runs agree bit for bit.
  void finish(const model_desc& m, run_result<T>& out) {
    const int R = model_.cfg.replicas;
    out.loss = 0;
    for (int mb = 0; mb < m.micro; ++mb)
      for (int r = 0; r < R; ++r) out.loss += at(r, mb, m.end_chunk(mb) - 1).loss;
    out.grads.assign(static_cast<std::size_t>(model_.cfg.stages), {});
    for (int st = 0; st < model_.cfg.stages; ++st) {
      auto& g = out.grads[static_cast<std::size_t>(st)];
      g.resize(static_cast<std::size_t>(model_.cfg.layers));
      for (int mb = 0; mb < m.micro; ++mb)
        for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
          if (stage_of_chunk(m, c) != st) continue;
          for (int r = 0; r < R; ++r)
            for (int l = 0; l < m.layers; ++l)
              add_grads(at(r, mb, c).grad[static_cast<std::size_t>(l)],
                        g[static_cast<std::size_t>(l)]);
        }
    }
  }

  const moe_model<T>& model_;
  run_options opt_;
  model_desc m_;
  op_index ix_{model_desc{}, false};  ///< of `m_`, for the run
  std::vector<unit> units_;
  std::vector<std::vector<int>> members_;  ///< per pipeline rank: its expert-parallel group
};

template <class T>
struct moe_run<T>::kernels {
  moe_run& ex;

  /// The all-to-alls take steps: dispatch F exchanges counts, then rows, then places them;
  /// the others exchange rows, then place them.
  int comm_steps(const op& o) const {
    if (o.k == kind::dispatch && o.ph == phase::F) return 3;
    return o.k == kind::dispatch || o.k == kind::combine ? 2 : 1;
  }

  // attn: attention, its norms and the router.
  void operator()(kinds::attn, phases::forward, run_call& k) {
    ex.layer(k.op).attn_forward(ex.input(k.replica, k.op.mb, k.op.chunk, k.op.layer),
                                ex.model_.mask, ex.state(k).ctx, ex.first_row(k.op),
                                ex.split_rows());
  }
  void operator()(kinds::attn, phases::backward, run_call& k) {
    (*this)(kinds::attn{}, phases::backward_dx{}, k);
    (*this)(kinds::attn{}, phases::backward_dw{}, k);
  }
  void operator()(kinds::attn, phases::backward_dx, run_call& k) {
    layer_state& s = ex.state(k);
    s.dx = ex.layer(k.op).attn_backward_dx(ex.op_output_grad(k), s.ctx);
  }
  void operator()(kinds::attn, phases::backward_dw, run_call& k) {
    ex.grad_layer(k).attn_backward_dw(ex.state(k).ctx);
  }

  // mlp: the routed experts on the rows this replica received.
  void operator()(kinds::mlp, phases::forward, run_call& k) {
    ex.layer(k.op).mlp_forward(ex.piece(k).rows);
  }
  void operator()(kinds::mlp, phases::backward, run_call& k) {
    (*this)(kinds::mlp{}, phases::backward_dx{}, k);
    (*this)(kinds::mlp{}, phases::backward_dw{}, k);
  }
  void operator()(kinds::mlp, phases::backward_dx, run_call& k) {
    ex.layer(k.op).mlp_backward_dx(ex.piece(k).rows);
  }
  void operator()(kinds::mlp, phases::backward_dw, run_call& k) {
    ex.grad_layer(k).mlp_backward_dw(ex.piece(k).rows);
  }

  // shared: the shared expert, beside the routed path.
  void operator()(kinds::shared, phases::forward, run_call& k) {
    ex.layer(k.op).shared_forward(ex.state(k).ctx);
  }
  void operator()(kinds::shared, phases::backward, run_call& k) {
    (*this)(kinds::shared{}, phases::backward_dx{}, k);
    (*this)(kinds::shared{}, phases::backward_dw{}, k);
  }
  void operator()(kinds::shared, phases::backward_dx, run_call& k) {
    ex.layer(k.op).shared_backward_dx(ex.op_output_grad(k), ex.state(k).ctx);
  }
  void operator()(kinds::shared, phases::backward_dw, run_call& k) {
    ex.grad_layer(k).shared_backward_dw(ex.state(k).ctx);
  }

  // dispatch and combine: all-to-alls over the expert-parallel group.
  void operator()(kinds::dispatch, phases::forward, run_call& k) { ex.dispatch_forward(k); }
  void operator()(kinds::dispatch, phases::backward, run_call& k) { ex.dispatch_backward(k); }
  void operator()(kinds::combine, phases::forward, run_call& k) { ex.combine_forward(k); }
  void operator()(kinds::combine, phases::backward, run_call& k) { ex.combine_backward(k); }

  // Pipeline transfers.
  template <phase_tag P>
  requires(P::value == phase::F || P::value == phase::B) void operator()(kinds::send, P,
                                                                         run_call& k) {
    k.started = ex.transfer(k);
  }
  template <phase_tag P>
  requires(P::value == phase::F || P::value == phase::B) void operator()(kinds::recv, P,
                                                                         run_call& k) {
    k.started = ex.transfer(k);
  }

  /// The loss all-reduce for logging.
  template <phase_tag P>
  requires(P::value == phase::F) void operator()(kinds::all_reduce, P, run_call& k) {
    k.started = ex.log_loss(k);
  }
};

}  // namespace weft::exec::detail

namespace weft::exec {

template <class T>
moe_executor<T>::moe_executor(const moe_model<T>& model, run_options opt)
    : run_(std::make_unique<detail::moe_run<T>>(model, std::move(opt))) {}
template <class T>
moe_executor<T>::~moe_executor() = default;
template <class T>
moe_executor<T>::moe_executor(moe_executor&&) noexcept = default;
template <class T>
moe_executor<T>& moe_executor<T>::operator=(moe_executor&&) noexcept = default;
template <class T>
run_result<T> moe_executor<T>::run(const schedule& s) {
  return run_->run(s);
}

}  // namespace weft::exec
