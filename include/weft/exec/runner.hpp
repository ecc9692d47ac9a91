// Runs a lowered stream program for real, whatever the model. When an op may start is the one
// semantics' answer (schedule/semantics.hpp), exactly as in the simulators: the runner keeps a
// `readiness` over the program with atomic counters and, as units become ready, hands them to
// the rank's `rt::stream`s — a unit of compute (an op, or an overlapped forward/backward pair as
// one piece of work) once all its members have arrived, each member of a transfer or collective
// as soon as it has arrived, to meet its peers in the communication backend. Each op is bound to
// the model's kernel for its (kind, phase) through the model-binding concept (core/binding.hpp).
// Every executor (dense_executor, moe_executor) is a binding plus this loop, so what a run
// measures, how it stops on a failure and how it reports a hang live in one place.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <weft/core/binding.hpp>
#include <weft/core/error.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/rt/stream.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/text.hpp>
#include <weft/sim/program.hpp>

namespace weft::exec {

struct run_options {
  unsigned workers = 2;  ///< threads that run compute streams, shared by every rank
  /// Threads that run comm streams (start transfers and all-to-alls, place what arrived), as an
  /// accelerator's communication engines do beside its compute units; 0: the compute workers
  /// run them too, first come, first served.
  unsigned comm_workers = 1;
  rt::delay_model delay{};  ///< emulated link for transfers and all-to-alls
  /// A run that has not finished by then is stopped and reported, naming the op every rank is
  /// waiting at.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  /// Called on the worker right before each op runs (tracing, fault injection), with the world
  /// rank; may throw, which fails the op.
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
  timeline time;  ///< measured (replica 0), in seconds from the start of the run
  /// Per comm op (replica 0): seconds from the moment every party had started it (both ends of
  /// a transfer, every member of a collective) to its completion — its own time, without the
  /// wait for late peers. What `calibrated` takes for communication.
  std::vector<double> comm_span;
  /// Per model stage and layer, the gradient of every parameter (summed over micro-batches,
  /// replicas and the chunks that carry the stage), in the layer's `each_param` order.
  std::vector<std::vector<std::vector<nn::matrix<T>>>> grads;
};

/// The model stage chunk `c` carries: DualPipe carries the model twice, chunk c and
/// c + chunks/2 hold the same stage.
constexpr int stage_of_chunk(const model_desc& m, int c) noexcept {
  return m.bidirectional && c >= m.chunks() / 2 ? c - m.chunks() / 2 : c;
}

/// Adds every parameter gradient of `layer` into `into` (one matrix per parameter, in
/// `each_param` order), creating them on first use. Callers add in a fixed order, so repeated
/// runs are equal bit for bit.
template <class Layer, class T>
void add_grads(Layer& layer, std::vector<nn::matrix<T>>& into) {
  std::size_t k = 0;
  layer.each_param([&](nn::param<T>& p) {
    if (into.size() <= k) into.push_back(nn::matrix<T>::Zero(p.grad.rows(), p.grad.cols()));
    into[k++] += p.grad;
  });
}

/// The largest relative error (Frobenius norm of the difference over the reference's norm) of
/// any parameter gradient of a run against a reference model that has run its `serial_step`.
template <class T, class Model>
double max_grad_rel_err(const run_result<T>& run, Model& reference) {
  double worst = 0;
  for (std::size_t s = 0; s < reference.stages.size(); ++s)
    for (std::size_t l = 0; l < reference.stages[s].size(); ++l) {
      std::size_t k = 0;
      reference.stages[s][l].each_param([&](nn::param<T>& p) {
        const nn::matrix<T>& g = run.grads.at(s).at(l).at(k++);
        const double scale = std::max(1e-30, static_cast<double>(p.grad.norm()));
        worst = std::max(worst, static_cast<double>((g - p.grad).norm()) / scale);
      });
    }
  return worst;
}

/// What a kernel is told when the runner calls it. A compute kernel does its work; a comm
/// kernel starts an operation on `comm` and leaves its completion event in `started`. An op
/// whose binding asks for several steps (`comm_steps`) is called once per step, in order, each
/// after the previous step's event: an all-to-all that first exchanges its counts.
struct run_call : kernel_call {
  int replica = 0;     ///< the copy of the pipeline rank (expert parallelism), 0 without
  int world_rank = 0;  ///< rank * replicas + replica
  rt::communicator* comm = nullptr;
  int step = 0;
  /// A transfer's peer (world rank) and the tag both ends use: transfers match FIFO per channel,
  /// as the checker pairs them, so every transfer of a channel carries `transfer_tag`.
  int peer = -1;
  int tag = 0;
  std::optional<rt::event> started;
};

/// The tag of every pipeline transfer: one per channel, so a backend's FIFO matching per
/// (source, destination, tag) is the checker's FIFO matching per channel.
inline constexpr int transfer_tag = 0;

/// A model a runner can drive: one kernel per (kind, phase) it meets, taking a `run_call`.
template <class Model>
concept run_binding = requires(Model& m, const op& o) {
  { m.comm_steps(o) } -> std::convertible_to<int>;
};

namespace detail {
inline std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

/// Counters that workers decrement concurrently, for `readiness`.
class atomic_counters {
 public:
  explicit atomic_counters(std::size_t n) : c_(std::make_unique<std::atomic<std::uint32_t>[]>(n)) {}
  std::atomic<std::uint32_t>& operator[](std::size_t i) noexcept { return c_[i]; }
  std::atomic<std::uint32_t>* data() noexcept { return c_.get(); }
  const std::atomic<std::uint32_t>& operator[](std::size_t i) const noexcept { return c_[i]; }

 private:
  std::unique_ptr<std::atomic<std::uint32_t>[]> c_;
};

/// What the runner does as the semantics announces work: a comm op is posted as soon as it has
/// arrived, a unit of compute runs once it is ready.
struct launcher : readiness_events {
  static constexpr bool announces_arrivals = true;
  std::function<void(std::uint32_t)> post, run;
  void arrived(std::uint32_t x) { post(x); }
  void ready(std::uint32_t u) { run(u); }
};
}  // namespace detail

/// Runs `p` on `replicas` copies of each pipeline rank (world rank = rank * replicas + replica)
/// and returns replica 0's timeline in seconds from the start. Throws `run_error` when an op
/// throws (naming its rank and op) or when the run is not finished after `opt.timeout` (naming
/// the op every unfinished rank waits at, and what it waits for); either way every stream is
/// abandoned and every thread joined before it returns.
template <run_binding Model>
timeline run_program(const program& p, int replicas, Model& model, const run_options& opt,
                     std::vector<double>* comm_span = nullptr) {
  if (replicas < 1) throw std::invalid_argument("weft: run: replicas must be >= 1");
  const semantics g(p, {.replicas = replicas});
  const std::uint32_t n = g.size(), N = g.ops(), Q = g.queues();
  rt::worker_pool pool(opt.workers, opt.comm_workers);
  rt::inproc_world world(p.ranks() * replicas, opt.delay);
  std::vector<std::unique_ptr<rt::stream>> streams;  // per queue copy
  for (std::uint32_t q = 0; q < Q * static_cast<std::uint32_t>(replicas); ++q) {
    const bool comm = q % Q % streams_per_rank >= lanes_per_class;
    streams.push_back(std::make_unique<rt::stream>(
        pool, comm ? rt::stream_role::comm : rt::stream_role::compute));
  }
  std::vector<double> started_at(N, -1.0), finished_at(N, -1.0);
  std::vector<std::atomic<std::uint8_t>> completed(N);
  const auto origin = std::chrono::steady_clock::now();
  const auto now = [origin] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  };
  const auto world_rank = [&](std::uint32_t x) {
    return p.rank[g.op_of(x)] * replicas + g.replica_of(x);
  };
  const auto call_for = [&](std::uint32_t x, int step) {
    const std::uint32_t i = g.op_of(x);
    run_call c;
    c.op = p.at(i);
    c.rank = p.rank[i];
    c.replica = g.replica_of(x);
    c.world_rank = world_rank(x);
    c.comm = &world.at(c.world_rank);
    c.step = step;
    if (is_p2p(c.op.k) && p.partner[i] != program::none) {
      c.peer = p.rank[p.partner[i]] * replicas + c.replica;
      c.tag = transfer_tag;
    }
    return c;
  };
  const auto begin = [&](std::uint32_t x) {
    if (opt.before_op) opt.before_op(world_rank(x), p.at(g.op_of(x)));
    started_at[x] = now();
  };

  // Launching what the semantics says is ready. Called from workers as ops complete.
  detail::launcher ev;
  readiness<detail::atomic_counters> st(g);
  // Set once the run has failed or timed out: nothing more is launched, and what was already
  // queued returns at once, so the streams can be drained before this frame goes away.
  std::atomic<bool> stopping{false};
  const auto complete = [&](std::uint32_t x) {
    finished_at[x] = now();
    completed[x].store(1);
    st.complete(x, ev);
  };
  // A comm op (alone, or a member of a transfer or collective): started on its comm stream as
  // soon as it has arrived; the backend completes it when its peers are there too.
  ev.post = [&](std::uint32_t x) {
    if (g.computes(g.unit_of(x)) || stopping.load()) return;
    rt::stream& s = *streams[g.queue_of(x)];
    const op o = p.at(g.op_of(x));
    const int steps = std::max(1, model.comm_steps(o));
    for (int step = 0; step < steps; ++step)
      s.enqueue_async(
          [&, x, o, step] {
            if (stopping.load()) {
              rt::event none;
              none.fire();
              return none;
            }
            if (step == 0) begin(x);
            run_call c = call_for(x, step);
            invoke_kernel(model, o, c);
            if (!c.started) throw std::logic_error("weft: run: a comm kernel started no operation");
            return *c.started;
          },
          x);
    s.enqueue(
        [&, x] {
          if (!stopping.load()) complete(x);
        },
        x);
  };
  // A unit of compute: on its lead member's stream, every member's kernel in turn.
  ev.run = [&](std::uint32_t u) {
    if (!g.computes(u) || stopping.load()) return;
    streams[g.queue_of(u)]->enqueue(
        [&, u] {
          if (stopping.load()) return;
          g.each_member(u, begin);
          g.each_member(u, [&](std::uint32_t x) {
            run_call c = call_for(x, 0);
            invoke_kernel(model, c.op, c);
          });
          g.each_member(u, complete);
        },
        u);
  };
  st.begin(ev);

  // Wait until every op has completed, but stop early when an op has failed (its consumers
  // would wait for data that never comes) and give up at the deadline.
  const auto deadline = std::chrono::steady_clock::now() + opt.timeout;
  const auto all_done = [&] {
    for (std::uint32_t x = 0; x < N; ++x)
      if (!completed[x].load()) return false;
    return true;
  };
  bool finished = false;
  while (!(finished = all_done()) && !pool.failed() &&
         std::chrono::steady_clock::now() < deadline) {
    bool idle = true;
    for (auto& s : streams)
      if (!s->synchronize_for(std::chrono::milliseconds(5))) {
        idle = false;
        break;
      }
    if (idle && !all_done()) {  // nothing runs and nothing is left to launch: stuck
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (finished) {
    for (auto& s : streams) s->synchronize();  // the last completions are still returning
  } else {
    stopping.store(true);
    for (int pass = 0; pass < 2; ++pass)  // the second catches what the first one's tasks queued
      for (auto& s : streams) s->abandon();
  }
  const auto name_rank = [&](int wr) {
    std::string s = "rank " + std::to_string(wr);
    if (replicas > 1)
      s += " (pipeline rank " + std::to_string(wr / replicas) + ", replica " +
           std::to_string(wr % replicas) + ")";
    return s;
  };
  if (pool.failed()) {
    const rt::task_failure f = pool.failure();
    const auto x = static_cast<std::uint32_t>(f.tag);
    throw run_error("weft: run: " + name_rank(world_rank(x)) + ", " + to_string(p.at(g.op_of(x))) +
                    " failed: " + detail::describe_exception(f.error));
  }
  if (!finished) {
    std::string why =
        "weft: run: not finished after " + std::to_string(opt.timeout.count()) + " ms; waiting:";
    for (int rep = 0; rep < replicas; ++rep) {
      // Per rank of this replica, the first op at the head of one of its streams.
      std::vector<std::uint32_t> first(static_cast<std::size_t>(p.ranks()), program::none);
      for (std::uint32_t q = 0; q < Q; ++q)
        for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
          const std::uint32_t x = g.copy(p.queue[k], rep);
          if (completed[x].load()) continue;
          std::uint32_t& b = first[p.rank[p.queue[k]]];
          b = std::min(b, x);
          break;
        }
      for (int r = 0; r < p.ranks(); ++r) {
        const std::uint32_t x = first[static_cast<std::size_t>(r)];
        if (x == program::none) continue;
        why += "\n  " + name_rank(r * replicas + rep) + ": " + to_string(p.at(g.op_of(x)));
        why += started_at[x] >= 0 ? " (started)" : st.has_arrived(x) ? " (ready)" : "";
        if (const std::uint32_t w = waiting_for(st, completed, x); w != semantics::none)
          why += ", waits for " + to_string(p.at(g.op_of(w))) + " on " + name_rank(world_rank(w));
      }
    }
    throw run_error(why);
  }

  timeline time;
  time.start.assign(n, -1.0);
  time.finish.assign(n, -1.0);
  for (std::uint32_t i = 0; i < n; ++i) {
    time.start[i] = started_at[i];
    time.finish[i] = finished_at[i];
    time.makespan = std::max(time.makespan, finished_at[i]);
  }
  if (comm_span) {
    comm_span->assign(n, 0.0);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (stream_of(p.at(i).k) != stream_class::comm) continue;
      double last = time.start[i];  // the last party to start: a transfer's peer, or a replica
      g.each_member(g.unit_of(i), [&](std::uint32_t y) { last = std::max(last, started_at[y]); });
      (*comm_span)[i] = std::max(0.0, time.finish[i] - last);
    }
  }
  return time;
}

}  // namespace weft::exec
