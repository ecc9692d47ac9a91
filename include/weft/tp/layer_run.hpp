// One transformer layer — causal attention, then an MLP — on every rank of a tensor-parallel
// grid, its four linears run as schedules (tp/run.hpp) under one overlap, the attention between
// them on the ranks' threads: the step `weft tp2d` measures, predicts and checks against the
// unsharded layer. The grid tp x 1 is Megatron's 1D tensor parallelism, run by the same code.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/exec/runner.hpp>
#include <weft/nn/attention.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/prediction.hpp>
#include <weft/tp/layers.hpp>
#include <weft/tp/run.hpp>

namespace weft::tp {

/// The layer's sizes: `batch` sequences of `seq` tokens (rows sequence-major, as Megatron's
/// [s, b, h], so sharding rows shards the sequence), width `hidden` in `heads` heads, MLP inner
/// width `ffn` (GeLU).
struct layer_shape {
  Eigen::Index seq = 64, batch = 1, hidden = 96, heads = 24, ffn = 384;
  constexpr Eigen::Index tokens() const noexcept { return seq * batch; }
};

/// The unsharded layer's weights, random (std normal scaled by 1 / sqrt(fan-in)), from `seed`.
template <class T>
struct layer_weights {
  nn::attention<T> attention;
  nn::matrix<T> w1, w2;

  static layer_weights random(const layer_shape& shape, unsigned seed) {
    std::mt19937 rng(seed);
    const auto draw = [&](Eigen::Index r, Eigen::Index c) {
      std::normal_distribution<double> d(0, 1 / std::sqrt(static_cast<double>(r)));
      nn::matrix<T> m(r, c);
      for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng));
      return m;
    };
    layer_weights w;
    w.attention.heads = static_cast<int>(shape.heads);
    for (nn::param<T>* p : {&w.attention.wq, &w.attention.wk, &w.attention.wv, &w.attention.wo})
      *p = nn::param<T>(draw(shape.hidden, shape.hidden));
    w.w1 = draw(shape.hidden, shape.ffn);
    w.w2 = draw(shape.ffn, shape.hidden);
    return w;
  }
};

/// The causal mask of `batch` sequences of `seq` tokens, rows sequence-major (row t b + i is
/// token t of sequence i).
inline nn::attention_mask batched_causal_mask(Eigen::Index seq, Eigen::Index batch) {
  const Eigen::Index n = seq * batch;
  nn::attention_mask m(n, n);
  for (Eigen::Index a = 0; a < n; ++a)
    for (Eigen::Index b = 0; b < n; ++b) m(a, b) = a % batch == b % batch && b / batch <= a / batch;
  return m;
}

/// A random [tokens, hidden] activation (standard normal) from `seed`: a layer's input or its
/// output gradient.
template <class T>
nn::matrix<T> random_activation(const layer_shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0, 1);
  nn::matrix<T> m(shape.tokens(), shape.hidden);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng));
  return m;
}

/// Every rank's block of a [s, H] activation, in rank order: rows chunk x, columns chunk y.
template <class T>
std::vector<nn::matrix<T>> blocks_of(const nn::matrix<T>& full, const grid& g) {
  const Eigen::Index rows = full.rows() / g.tp_x, cols = full.cols() / g.tp_y;
  std::vector<nn::matrix<T>> out;
  for (int r = 0; r < g.size(); ++r)
    out.emplace_back(full.block(g.x_of(r) * rows, g.y_of(r) * cols, rows, cols));
  return out;
}

/// One of the layer's linears: its binding, its forward program and its backward fragment, and
/// a runner for each.
template <class T>
struct layer_linear {
  std::string name;
  linear_binding<T> binding;
  std::unique_ptr<exec::runner> forward, backward;
};

/// What one timed phase of a step took: a program's run (its timeline, and what calibrates a
/// prediction of it), or the attention between two programs (no program).
struct phase_timing {
  std::string what;
  seconds wall{0};
  const program* prog = nullptr;
  int replicas = 1;
  timeline measured;
  run_measures measures;
};

/// Why a layer of `shape` cannot be sharded on grid `g` (heads over TP-X, the hidden size over
/// both axes), naming the grid; empty when it can.
inline std::string unfit_reason(const grid& g, const layer_shape& shape) {
  const auto n = [](auto v) { return std::to_string(v); };
  const std::string on = " on the " + n(g.tp_x) + "x" + n(g.tp_y) + " grid";
  if (shape.heads < 1 || shape.hidden % shape.heads != 0)
    return "the heads (" + n(shape.heads) + ") should divide the hidden size (" + n(shape.hidden) +
           ")";
  if (shape.heads % g.tp_x != 0)
    return "the heads (" + n(shape.heads) + ") should be divisible by tp-x (" + n(g.tp_x) + ")" +
           on;
  for (const auto& [size, name] : {std::pair{g.tp_x, "tp-x"}, std::pair{g.tp_y, "tp-y"}})
    if (shape.hidden % size != 0)
      return "the hidden size (" + n(shape.hidden) + ") should be divisible by " + name + " (" +
             n(size) + ")" + on;
  return {};
}

/// The layer on a grid: built once, stepped (forward and backward) with the inputs and output
/// gradients of every rank.
template <class T>
class layer_runner {
 public:
  layer_runner(const grid& g, const layer_shape& shape, const layer_weights<T>& w, tp_overlap o,
               exec::run_options opt = {})
      : grid_(g),
        shape_(shape),
        opt_(opt),
        mask_(batched_causal_mask(shape.seq, shape.batch)),
        glue_world_(g.size(), opt.delay) {
    const Eigen::Index s = shape.tokens();
    if (const std::string why = unfit_reason(g, shape); !why.empty())
      throw config_error("weft: tp2d: " + why);
    heads_ = static_cast<int>(shape.heads);
    add("qkv", gather_over::x, attention2d<T>::fused_qkv(w.attention, g.tp_x), s, o);
    add("proj", gather_over::y, w.attention.wo.value, s, o);
    add("fc1", gather_over::x, w.w1, s, o);
    add("fc2", gather_over::y, w.w2, s, o);
    for (int r = 0; r < g.size(); ++r)
      comms_.push_back(std::make_unique<rank_comm<T>>(glue_world_.at(r), g, opt.timeout));
    ctx_.resize(static_cast<std::size_t>(g.size()));
  }

  const grid& layout() const noexcept { return grid_; }
  layer_linear<T>& linear(std::size_t i) { return *linears_.at(i); }
  std::size_t linears() const noexcept { return linears_.size(); }

  /// The forward and backward of every rank: `x[r]` its input block [s / tp_x, H / tp_y],
  /// `dy[r]` its output gradient block; returns the outputs, leaves the input gradients in
  /// `dx` and the weight gradients in the bindings. Each phase's timing lands in `timings`.
  std::vector<nn::matrix<T>> step(const std::vector<nn::matrix<T>>& x,
                                  const std::vector<nn::matrix<T>>& dy,
                                  std::vector<nn::matrix<T>>& dx,
                                  std::vector<phase_timing>& timings) {
    const int n = grid_.size();
    if (static_cast<int>(x.size()) != n || static_cast<int>(dy.size()) != n)
      throw config_error("weft: tp2d: a step needs one input and one gradient per rank");
    timings.clear();
    for (auto& l : linears_) l->binding.clear_sent();
    for (auto& c : comms_) c->clear_sent();
    attention2d<T> att{{}, {}, heads_};
    for (int r = 0; r < n; ++r) linear(0).binding.set_input(r, x[static_cast<std::size_t>(r)]);
    run_forward(0, timings);
    on_ranks("attention", timings, [&](int r) {
      linear(1).binding.set_input(
          r, att.attend_rows(*comms_[static_cast<std::size_t>(r)], linear(0).binding.output(r),
                             ctx_[static_cast<std::size_t>(r)], &mask_));
    });
    run_forward(1, timings);
    for (int r = 0; r < n; ++r) linear(2).binding.set_input(r, linear(1).binding.output(r));
    run_forward(2, timings);
    for (int r = 0; r < n; ++r) linear(3).binding.set_input(r, gelu(linear(2).binding.output(r)));
    run_forward(3, timings);
    std::vector<nn::matrix<T>> y;
    for (int r = 0; r < n; ++r) y.push_back(linear(3).binding.output(r));

    for (int r = 0; r < n; ++r)
      linear(3).binding.set_output_grad(r, dy[static_cast<std::size_t>(r)]);
    run_backward(3, timings);
    for (int r = 0; r < n; ++r)
      linear(2).binding.set_output_grad(r, (linear(3).binding.input_grad(r).array() *
                                            gelu_grad(linear(2).binding.output(r)).array())
                                               .matrix());
    run_backward(2, timings);
    for (int r = 0; r < n; ++r)
      linear(1).binding.set_output_grad(r, linear(2).binding.input_grad(r));
    run_backward(1, timings);
    on_ranks("attention backward", timings, [&](int r) {
      linear(0).binding.set_output_grad(
          r, att.attend_rows_backward(*comms_[static_cast<std::size_t>(r)],
                                      linear(1).binding.input_grad(r),
                                      ctx_[static_cast<std::size_t>(r)]));
    });
    run_backward(0, timings);
    dx.clear();
    for (int r = 0; r < n; ++r) dx.push_back(linear(0).binding.input_grad(r));
    return y;
  }

  /// What rank `r` sent in the last step: its linears' collectives and the attention's.
  volume sent(int r) const {
    volume v = comms_.at(static_cast<std::size_t>(r))->sent();
    for (const auto& l : linears_) {
      const volume& lv = l->binding.sent(r);
      v.all_gather += lv.all_gather;
      v.reduce_scatter += lv.reduce_scatter;
      v.all_reduce += lv.all_reduce;
    }
    return v;
  }

 private:
  grid grid_;
  layer_shape shape_;
  exec::run_options opt_;
  int heads_ = 1;
  nn::attention_mask mask_;
  rt::inproc_world glue_world_;
  std::vector<std::unique_ptr<rank_comm<T>>> comms_;
  std::vector<typename attention2d<T>::context> ctx_;
  std::vector<std::unique_ptr<layer_linear<T>>> linears_;

  void add(const char* name, gather_over ag, const nn::matrix<T>& w, Eigen::Index s, tp_overlap o) {
    auto l = std::make_unique<layer_linear<T>>(
        layer_linear<T>{name, linear_binding<T>(grid_, ag, w, s, o), nullptr, nullptr});
    const int n = grid_.size();
    l->forward = std::make_unique<exec::runner>(lower(l->binding.forward_schedule()), n, opt_);
    l->backward = std::make_unique<exec::runner>(
        lower(l->binding.backward_schedule(), assuming(forward_done)), n, opt_);
    linears_.push_back(std::move(l));
  }

  void run(exec::runner& r, linear_binding<T>& b, const std::string& what,
           std::vector<phase_timing>& timings) {
    phase_timing t{what, seconds(0), &r.prog(), grid_.size(), {}, {}};
    const auto start = std::chrono::steady_clock::now();
    t.measured = r.run(b, &t.measures);
    t.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
    timings.push_back(std::move(t));
  }
  void run_forward(std::size_t i, std::vector<phase_timing>& timings) {
    run(*linear(i).forward, linear(i).binding, linear(i).name + " forward", timings);
  }
  void run_backward(std::size_t i, std::vector<phase_timing>& timings) {
    run(*linear(i).backward, linear(i).binding, linear(i).name + " backward", timings);
  }

  /// Runs `fn(r)` for every rank on a thread of its own (the ranks meet in collectives), and
  /// rethrows the first failure.
  template <class Fn>
  void on_ranks(const std::string& what, std::vector<phase_timing>& timings, Fn&& fn) {
    const int n = grid_.size();
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    const auto start = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> threads;
      for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          try {
            fn(r);
          } catch (...) {
            errors[static_cast<std::size_t>(r)] = std::current_exception();
          }
        });
    }
    timings.push_back({what,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start),
                       nullptr,
                       1,
                       {},
                       {}});
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
};

/// What a run of a phase would take by the simulator: its program with costs calibrated on the
/// run itself (`calibrated`), on the runtime's `workers`, with the runtime's measured latencies;
/// a phase without a program (the attention) as measured.
inline seconds predicted(const phase_timing& t, unsigned workers) {
  if (!t.prog) return t.wall;
  return predicted_run(*t.prog, t.measured, t.measures, workers, t.replicas).makespan;
}
/// What a phase took: a program's makespan as the runner timed it, the attention's wall time.
inline seconds measured(const phase_timing& t) { return t.prog ? t.measured.makespan : t.wall; }

}  // namespace weft::tp
