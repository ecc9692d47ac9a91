// Runs a schedule for real: the stream program of `lower` on a world of ranks x streams, each
// op bound to its kernel, activations and gradients moving between pipeline ranks through the
// communication interface. This executor runs whole-block schedules of the dense model
// (dense_model.hpp); the loss and every gradient match the serial reference run.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <weft/exec/dense_model.hpp>
#include <weft/io/format.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/rt/stream.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/simulate.hpp>

namespace weft::exec {

struct run_options {
  unsigned workers = 2;
  rt::delay_model delay{};  ///< emulated link for pipeline transfers
  /// A run that has not finished by then is stopped and reported, naming the op every rank is
  /// waiting at.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  /// Called on the worker right before each op runs (tracing, fault injection); may throw,
  /// which fails the op.
  std::function<void(int rank, const op&)> before_op{};
};

/// A run that stopped: an op threw, or the run timed out.
struct run_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
struct run_result {
  T loss = 0;
  program prog;
  timeline time;  ///< measured, in seconds from the start of the run
  /// Per model stage and layer, the gradient of every parameter (summed over the chunks that
  /// carry the stage), in `dense_layer::each_param` order.
  std::vector<std::vector<std::vector<nn::matrix<T>>>> grads;
};

template <class T>
class dense_executor {
  static_assert(std::is_same_v<T, float>, "weft: the runtime moves fp32 data");

 public:
  dense_executor(const dense_model<T>& model, run_options opt = {}) : model_(model), opt_(opt) {}

  run_result<T> run(const schedule& s) {
    run_result<T> out;
    out.prog = lower(s);
    const program& p = out.prog;
    const model_desc& m = p.source.model;
    check_fits(m);
    setup(m);

    rt::worker_pool pool(opt_.workers);
    rt::inproc_world world(p.ranks(), opt_.delay);
    std::vector<std::unique_ptr<rt::stream>> streams;
    for (std::uint32_t q = 0; q + 1 < p.queue_begin.size(); ++q)
      streams.push_back(std::make_unique<rt::stream>(pool));
    std::vector<rt::event> done(p.size());
    out.time.start.assign(p.size(), -1.0);
    out.time.finish.assign(p.size(), -1.0);
    std::vector<std::atomic<std::uint32_t>> at(streams.size());
    for (auto& a : at) a.store(program::none);
    const auto origin = std::chrono::steady_clock::now();
    const auto now = [origin] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
    };

    for (std::uint32_t q = 0; q < streams.size(); ++q) {
      rt::stream& st = *streams[q];
      for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
        const std::uint32_t i = p.queue[k];
        for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
          st.wait(done[p.waits[w]]);
        const op o = p.at(i);
        const int rank = p.rank[i];
        if (is_p2p(o.k)) {
          st.enqueue_async(
              [this, &world, &out, &at, q, i, o, rank, now] {
                at[q].store(i);
                if (opt_.before_op) opt_.before_op(rank, o);
                out.time.start[i] = now();
                return transfer(world.at(rank), o);
              },
              i);
          st.enqueue([&out, i, now] { out.time.finish[i] = now(); }, i);
        } else {
          st.enqueue(
              [this, &out, &at, q, i, o, rank, now] {
                at[q].store(i);
                if (opt_.before_op) opt_.before_op(rank, o);
                out.time.start[i] = now();
                compute(o);
                out.time.finish[i] = now();
              },
              i);
        }
        st.record(done[i]);
      }
    }

    // Wait for every stream, but stop early when an op has failed (its consumers would wait
    // for data that never comes) and give up at the deadline.
    const auto deadline = std::chrono::steady_clock::now() + opt_.timeout;
    bool finished = false;
    while (!finished && !pool.failed() && std::chrono::steady_clock::now() < deadline) {
      finished = true;
      for (auto& st : streams)
        if (!st->synchronize_for(std::chrono::milliseconds(5))) {
          finished = false;
          break;
        }
    }
    if (pool.failed()) {
      for (auto& st : streams) st->abandon();
      finished = true;
    }
    if (!finished) {
      std::string why =
          "weft: run: not finished after " + std::to_string(opt_.timeout.count()) + " ms; waiting:";
      for (std::uint32_t q = 0; q < streams.size(); ++q) {
        if (streams[q]->synchronize_for(std::chrono::milliseconds(0))) continue;
        const std::uint32_t i = at[q].load();
        const std::uint32_t head = next_op(p, q, out.time);
        why += "\n  rank " + std::to_string(q / streams_per_rank) + ": " +
               (head != program::none ? to_string(p.at(head)) : std::string("?")) +
               (i != program::none ? " (after " + to_string(p.at(i)) + ")" : std::string());
      }
      for (auto& st : streams) st->abandon();
      throw run_error(why);
    }
    if (pool.failed()) {
      const rt::task_failure f = pool.failure();
      std::string what = "unknown error";
      try {
        std::rethrow_exception(f.error);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      const auto i = static_cast<std::uint32_t>(f.tag);
      throw run_error("weft: run: rank " + std::to_string(p.rank[i]) + ", " + to_string(p.at(i)) +
                      " failed: " + what);
    }
    for (const double f : out.time.finish) out.time.makespan = std::max(out.time.makespan, f);
    finish(m, out);
    return out;
  }

 private:
  struct unit {  // one (micro-batch, chunk)
    std::vector<typename dense_layer<T>::context> ctx;
    std::vector<dense_layer<T>> grad;  ///< this unit's weight gradients, kept apart
    nn::matrix<T> in_act, out_act, in_grad, out_grad;
    T loss = 0;
  };

  void check_fits(const model_desc& m) const {
    if (!(m.stages == stage_set::whole_block()))
      throw std::invalid_argument("weft: run: the dense model runs whole-block schedules");
    if (m.micro != model_.cfg.micro)
      throw std::invalid_argument("weft: run: the schedule has " + std::to_string(m.micro) +
                                  " micro-batches, the model " + std::to_string(model_.cfg.micro));
    if (stage_of(m, m.chunks() - 1) + 1 != model_.cfg.stages)
      throw std::invalid_argument("weft: run: the schedule's chunks do not carry the model's " +
                                  std::to_string(model_.cfg.stages) + " stages");
    if (m.layers != 1)
      throw std::invalid_argument("weft: run: a whole-block op runs a whole stage: layers = 1");
  }
  /// DualPipe carries the model twice: chunk c and c + chunks/2 hold the same stage.
  static int stage_of(const model_desc& m, int chunk) {
    return m.bidirectional && chunk >= m.chunks() / 2 ? chunk - m.chunks() / 2 : chunk;
  }

  void setup(const model_desc& m) {
    model_desc_ = m;
    units_.assign(static_cast<std::size_t>(m.micro * m.chunks()), unit{});
    for (int mb = 0; mb < m.micro; ++mb)
      for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c) {
        unit& u = at(mb, c);
        const auto& layers = model_.stages[static_cast<std::size_t>(stage_of(m, c))];
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
    const auto& layers = model_.stages[static_cast<std::size_t>(stage_of(m, c))];
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

  /// A pipeline transfer: the chunk's output (F) or input gradient (B), tagged by payload.
  rt::event transfer(rt::communicator& comm, const op& o) {
    const model_desc& m = model_desc_;
    const op_index ix(m, false);
    const int peer_chunk = ix.transfer_peer(o);
    const int peer = m.rank_of(peer_chunk);
    unit& u = at(o.mb, o.chunk);
    // Both ends name the payload by (phase, micro-batch, receiving chunk).
    const int to_chunk = o.k == kind::send ? peer_chunk : o.chunk;
    const int tag = (o.mb * m.chunks() + to_chunk) * 2 + (o.ph == phase::F ? 0 : 1);
    if (o.k == kind::send) {  // untouched until the transfer completes: nothing rewrites it
      const nn::matrix<T>& data = o.ph == phase::F ? u.out_act : u.out_grad;
      return comm.isend({data.data(), static_cast<std::size_t>(data.size())}, peer, tag);
    }
    nn::matrix<T>& into = o.ph == phase::F ? u.in_act : u.in_grad;
    return comm.irecv({into.data(), static_cast<std::size_t>(into.size())}, peer, tag);
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
          if (stage_of(m, c) != s) continue;
          for (int l = 0; l < model_.cfg.layers; ++l) {
            auto& g = stage[static_cast<std::size_t>(l)];
            std::size_t k = 0;
            at(mb, c).grad[static_cast<std::size_t>(l)].each_param([&](nn::param<T>& pr) {
              if (g.size() <= k) g.push_back(nn::matrix<T>::Zero(pr.grad.rows(), pr.grad.cols()));
              g[k++] += pr.grad;
            });
          }
        }
    }
  }

  static std::uint32_t next_op(const program& p, std::uint32_t q, const timeline& t) {
    for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k)
      if (t.finish[p.queue[k]] < 0) return p.queue[k];
    return program::none;
  }

  const dense_model<T>& model_;
  run_options opt_;
  model_desc model_desc_;
  std::vector<unit> units_;
};

}  // namespace weft::exec
