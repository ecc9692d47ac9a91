// The dense executor's work (exec/executor.hpp): part of the header in header-only builds,
// compiled once for float and double into `weft::exec_compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/exec/collect.hpp>
#include <weft/exec/executor.hpp>
#include <weft/schedule/lower.hpp>

namespace weft::exec::detail {

template <class T>
class dense_run {
 public:
  dense_run(const dense_model<T>& model, run_options opt) : model_(model), opt_(std::move(opt)) {}

  run_result<T> run(const schedule& s) { return run(lower(s)); }
  /// Runs a program lowered already — `lower_unchecked` included, to see what the runtime does
  /// with a schedule the checker rejects.
  run_result<T> run(program prog) {
    run_result<T> out;
    out.prog = static_cast<program&&>(prog);
    const program& p = out.prog;
    const model_desc& m = p.source.model;
    check_fits(m);
    setup(m);

    kernels k{*this};
    out.time = run_program(p, 1, k, opt_, &out);
    if (opt_.comm) collect(m);
    finish(m, out);
    return out;
  }

 private:
  // The model binding: a whole stage per block op, its output or input gradient per transfer.
  struct kernels {
    dense_run& ex;
    int comm_steps(const op&) const { return 1; }
    template <phase_tag P>
    void operator()(kinds::block, P, run_call& c) {
      ex.compute(c.op);
    }
    template <phase_tag P>
    requires(P::value == phase::F || P::value == phase::B) void operator()(kinds::send, P,
                                                                           run_call& c) {
      c.started = ex.transfer(c);
    }
    template <phase_tag P>
    requires(P::value == phase::F || P::value == phase::B) void operator()(kinds::recv, P,
                                                                           run_call& c) {
      c.started = ex.transfer(c);
    }
    /// The loss all-reduce for logging (MindSpeed's pp-cross-dc-comm-overlap note).
    template <phase_tag P>
    requires(P::value == phase::F) void operator()(kinds::all_reduce, P, run_call& c) {
      c.started = ex.log_loss(c);
    }
  };

  struct unit {  // one (micro-batch, chunk)
    std::vector<typename dense_layer<T>::context> ctx;
    std::vector<dense_layer<T>> grad;  ///< this unit's weight gradients, kept apart
    nn::matrix<T> in_act, out_act, in_grad, out_grad;
    T loss = 0;
    T logged = 0;  ///< the loss as the logging all-reduce leaves it
  };

  void check_fits(const model_desc& m) const {
    if (!(m.stages == stage_set::whole_block()))
      throw config_error("weft: run: the dense model runs whole-block schedules");
    if (m.micro != model_.cfg.micro)
      throw config_error("weft: run: the schedule has " + std::to_string(m.micro) +
                         " micro-batches, the model " + std::to_string(model_.cfg.micro));
    if (stage_of_chunk(m, m.chunks() - 1) + 1 != model_.cfg.stages)
      throw config_error("weft: run: the schedule's chunks do not carry the model's " +
                         std::to_string(model_.cfg.stages) + " stages");
    if (m.layers != 1)
      throw config_error("weft: run: a whole-block op runs a whole stage: layers = 1");
  }
  void setup(const model_desc& m) {
    model_desc_ = m;
    units_.assign(static_cast<std::size_t>(m.micro * m.chunks()), unit{});
    for (int mb = 0; mb < m.micro; ++mb)
      for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
        unit& u = at(mb, c);
        const auto& layers = model_.stages[static_cast<std::size_t>(stage_of_chunk(m, c))];
        u.ctx.resize(layers.size());
        u.grad = layers;
        for (auto& layer : u.grad) layer.each_param([](nn::param<T>& pr) { pr.zero_grad(); });
        const Eigen::Index rows = model_.cfg.tokens, cols = model_.cfg.width;
        u.in_act = u.in_grad = nn::matrix<T>::Zero(rows, cols);
      }
  }
  unit& at(int mb, int c) {
    return units_[static_cast<std::size_t>(mb * model_desc_.chunks() + c)];
  }

  /// A compute op: the forward, backward or backward half of a whole stage.
  void compute(const op& o) {
    const model_desc& m = model_desc_;
    const int mb = o.mb, c = o.chunk;
    unit& u = at(mb, c);
    const auto& layers = model_.stages[static_cast<std::size_t>(stage_of_chunk(m, c))];
    const bool first = c == m.first_chunk(mb), last = c == m.end_chunk(mb) - 1;
    const op_index ix(m, false);
    if (o.ph == phase::F) {
      nn::matrix<T> x = first ? model_.inputs[static_cast<std::size_t>(mb)]
                              : (ix.crosses_ranks(c, c - 1) ? u.in_act : at(mb, c - 1).out_act);
      for (std::size_t l = 0; l < layers.size(); ++l)
        x = layers[l].forward(x, model_.mask, u.ctx[l]);
      u.out_act = x;
      if (last) {
        const auto& t = model_.targets[static_cast<std::size_t>(mb)];
        u.loss = nn::mse_loss<T>::value(x, t) / T(m.micro);
      }
      return;
    }
    if (o.ph == phase::dW) {
      for (std::size_t l = 0; l < layers.size(); ++l) u.grad[l].backward_dw(u.ctx[l]);
      return;
    }
    nn::matrix<T> dy;
    if (last)
      dy = nn::mse_loss<T>::gradient(u.out_act, model_.targets[static_cast<std::size_t>(mb)]) /
           T(m.micro);
    else
      dy = ix.crosses_ranks(c, c + 1) ? u.in_grad : at(mb, c + 1).out_grad;
    for (std::size_t l = layers.size(); l-- > 0;) {
      // The unit's own copy computes with the stage's weights and keeps its own gradients.
      dy = layers[l].backward_dx(dy, u.ctx[l]);
      if (o.ph == phase::B) u.grad[l].backward_dw(u.ctx[l]);
    }
    u.out_grad = dy;
  }

  /// A pipeline transfer: the chunk's output (F) or input gradient (B), to or from the peer the
  /// runner paired it with (FIFO per channel, as the checker pairs them).
  rt::event transfer(const run_call& c) {
    unit& u = at(c.op.mb, c.op.chunk);
    if (c.op.k == kind::send) {  // untouched until the transfer completes: nothing rewrites it
      const nn::matrix<T>& data = c.op.ph == phase::F ? u.out_act : u.out_grad;
      return c.comm->isend({data.data(), static_cast<std::size_t>(data.size())}, c.peer, c.tag);
    }
    nn::matrix<T>& into = c.op.ph == phase::F ? u.in_act : u.in_grad;
    return c.comm->irecv({into.data(), static_cast<std::size_t>(into.size())}, c.peer, c.tag);
  }

  /// The micro-batch's loss summed over the data-parallel group for logging. The dense model
  /// has no data parallelism: the group is the rank itself, and the sum its own loss.
  rt::event log_loss(const run_call& c) {
    unit& u = at(c.op.mb, c.op.chunk);
    u.logged = u.loss;
    const int members[1] = {c.world_rank};
    return c.comm->all_reduce_sum({&u.logged, 1}, members, c.op.lane);
  }

  /// A run over a world of processes: each unit's loss and gradients to rank 0, which then
  /// finishes as an in-process run does.
  void collect(const model_desc& m) {
    collect_units<T>(
        *opt_.comm, units_,
        [&](std::size_t u) { return m.rank_of(static_cast<int>(u) % m.chunks()); }, opt_.timeout);
  }

  /// After the run: the loss, and each stage's gradients summed in micro-batch order, as the
  /// serial reference sums them.
  void finish(const model_desc& m, run_result<T>& out) {
    out.loss = 0;
    for (int mb = 0; mb < m.micro; ++mb) out.loss += at(mb, m.end_chunk(mb) - 1).loss;
    out.grads.assign(static_cast<std::size_t>(model_.cfg.stages), {});
    for (int s = 0; s < model_.cfg.stages; ++s) {
      auto& stage = out.grads[static_cast<std::size_t>(s)];
      stage.resize(static_cast<std::size_t>(model_.cfg.layers));
      for (int mb = 0; mb < m.micro; ++mb)
        for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
          if (stage_of_chunk(m, c) != s) continue;
          for (int l = 0; l < model_.cfg.layers; ++l)
            add_grads(at(mb, c).grad[static_cast<std::size_t>(l)],
                      stage[static_cast<std::size_t>(l)]);
        }
    }
  }

  const dense_model<T>& model_;
  run_options opt_;
  model_desc model_desc_;
  std::vector<unit> units_;
};

}  // namespace weft::exec::detail

namespace weft::exec {

template <class T>
dense_executor<T>::dense_executor(const dense_model<T>& model, run_options opt)
    : run_(std::make_unique<detail::dense_run<T>>(model, std::move(opt))) {}
template <class T>
dense_executor<T>::~dense_executor() = default;
template <class T>
dense_executor<T>::dense_executor(dense_executor&&) noexcept = default;
template <class T>
dense_executor<T>& dense_executor<T>::operator=(dense_executor&&) noexcept = default;
template <class T>
run_result<T> dense_executor<T>::run(const schedule& s) {
  return run_->run(lower(s));
}
template <class T>
run_result<T> dense_executor<T>::run(program prog) {
  return run_->run(std::move(prog));
}

}  // namespace weft::exec
