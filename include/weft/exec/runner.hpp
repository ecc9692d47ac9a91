// Runs a lowered stream program for real, whatever the model: per rank, per stream, the ops in
// issue order on an `rt::stream`, each waiting for the events of its producers, each bound to
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
#include <vector>

#include <weft/core/binding.hpp>
#include <weft/core/error.hpp>
#include <weft/io/format.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/rt/stream.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/simulate.hpp>

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
  std::optional<rt::event> started;
};

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
}  // namespace detail

/// Runs `p` on `replicas` copies of each pipeline rank (world rank = rank * replicas + replica)
/// and returns replica 0's timeline in seconds from the start. Throws `run_error` when an op
/// throws (naming its rank and op) or when the run is not finished after `opt.timeout` (naming
/// the op every unfinished stream waits at); either way every stream is abandoned and every
/// thread joined before it returns.
template <run_binding Model>
timeline run_program(const program& p, int replicas, Model& model, const run_options& opt,
                     std::vector<double>* comm_span = nullptr) {
  if (replicas < 1) throw std::invalid_argument("weft: run: replicas must be >= 1");
  const int world_size = p.ranks() * replicas;
  rt::worker_pool pool(opt.workers, opt.comm_workers);
  rt::inproc_world world(world_size, opt.delay);
  const auto per_replica = static_cast<std::uint32_t>(p.queue_begin.size() - 1);
  std::vector<std::unique_ptr<rt::stream>> streams;  // [replica][queue]
  for (std::uint32_t q = 0; q < per_replica * static_cast<std::uint32_t>(replicas); ++q) {
    const bool comm = q % per_replica % streams_per_rank >= lanes_per_class;
    streams.push_back(std::make_unique<rt::stream>(
        pool, comm ? rt::stream_role::comm : rt::stream_role::compute));
  }
  const std::size_t n = p.size();
  std::vector<rt::event> done(n * static_cast<std::size_t>(replicas));
  timeline time;
  time.start.assign(n, -1.0);
  time.finish.assign(n, -1.0);
  std::vector<double> started_at(n * static_cast<std::size_t>(replicas), -1.0),
      finished_at(n * static_cast<std::size_t>(replicas), -1.0);
  std::vector<std::atomic<std::uint32_t>> at(streams.size());
  for (auto& a : at) a.store(program::none);
  const auto origin = std::chrono::steady_clock::now();
  const auto now = [origin] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  };
  // A failure names the op by its position and replica.
  const auto tag_of = [n](std::uint32_t i, int rep) {
    return static_cast<std::uint64_t>(rep) * n + i;
  };

  for (int rep = 0; rep < replicas; ++rep)
    for (std::uint32_t q = 0; q < per_replica; ++q) {
      const std::size_t sq = static_cast<std::size_t>(rep) * per_replica + q;
      rt::stream& st = *streams[sq];
      const std::size_t base = static_cast<std::size_t>(rep) * n;
      for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
        const std::uint32_t i = p.queue[k];
        for (std::uint32_t w = p.wait_begin[i]; w < p.wait_begin[i + 1]; ++w)
          st.wait(done[base + p.waits[w]]);
        const op o = p.at(i);
        const int rank = p.rank[i];
        const int wr = rank * replicas + rep;
        const auto begin = [&opt, &at, &time, &started_at, base, sq, i, o, wr, rep, now] {
          at[sq].store(i);
          if (opt.before_op) opt.before_op(wr, o);
          started_at[base + i] = now();
          if (rep == 0) time.start[i] = started_at[base + i];
        };
        const auto call_for = [&world, o, rank, rep, wr](int step) {
          run_call c;
          c.op = o;
          c.rank = rank;
          c.replica = rep;
          c.world_rank = wr;
          c.comm = &world.at(wr);
          c.step = step;
          return c;
        };
        if (stream_of(o.k) == stream_class::comm) {
          const int steps = std::max(1, model.comm_steps(o));
          for (int step = 0; step < steps; ++step)
            st.enqueue_async(
                [&model, begin, call_for, step, o] {
                  if (step == 0) begin();
                  run_call c = call_for(step);
                  invoke_kernel(model, o, c);
                  if (!c.started)
                    throw std::logic_error("weft: run: a comm kernel started no operation");
                  return *c.started;
                },
                tag_of(i, rep));
        } else {
          st.enqueue(
              [&model, begin, call_for, o] {
                begin();
                run_call c = call_for(0);
                invoke_kernel(model, o, c);
              },
              tag_of(i, rep));
        }
        st.enqueue([&finished_at, &time, base, i, rep, now] {
          finished_at[base + i] = now();
          if (rep == 0) time.finish[i] = finished_at[base + i];
        });
        st.record(done[base + i]);
      }
    }

  // Wait for every stream, but stop early when an op has failed (its consumers would wait for
  // data that never comes) and give up at the deadline.
  const auto deadline = std::chrono::steady_clock::now() + opt.timeout;
  bool all_idle = false;
  while (!all_idle && !pool.failed() && std::chrono::steady_clock::now() < deadline) {
    all_idle = true;
    for (auto& st : streams)
      if (!st->synchronize_for(std::chrono::milliseconds(5))) {
        all_idle = false;
        break;
      }
  }
  const auto name_rank = [&](std::size_t sq) {
    const int rep = static_cast<int>(sq / per_replica);
    const int rank = static_cast<int>(sq % per_replica) / streams_per_rank;
    std::string s = "rank " + std::to_string(rank * replicas + rep);
    if (replicas > 1)
      s += " (pipeline rank " + std::to_string(rank) + ", replica " + std::to_string(rep) + ")";
    return s;
  };
  if (!all_idle && !pool.failed()) {
    std::string why =
        "weft: run: not finished after " + std::to_string(opt.timeout.count()) + " ms; waiting:";
    for (std::size_t sq = 0; sq < streams.size(); ++sq) {
      if (streams[sq]->synchronize_for(std::chrono::milliseconds(0))) continue;
      const std::uint32_t q = static_cast<std::uint32_t>(sq % per_replica);
      const std::size_t base = sq / per_replica * n;
      std::uint32_t head = program::none;
      for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1] && head == program::none;
           ++k)
        if (finished_at[base + p.queue[k]] < 0) head = p.queue[k];
      const std::uint32_t last = at[sq].load();
      why += "\n  " + name_rank(sq) + ": " +
             (head != program::none ? to_string(p.at(head)) : std::string("?")) +
             (last != program::none && last != head ? " (after " + to_string(p.at(last)) + ")"
                                                    : std::string());
    }
    for (auto& st : streams) st->abandon();
    throw run_error(why);
  }
  if (pool.failed()) {
    for (auto& st : streams) st->abandon();
    const rt::task_failure f = pool.failure();
    const auto i = static_cast<std::uint32_t>(f.tag % n);
    const auto rep = static_cast<std::size_t>(f.tag / n);
    const std::size_t sq = rep * per_replica + program::queue_of(p.rank[i], p.stream[i]);
    throw run_error("weft: run: " + name_rank(sq) + ", " + to_string(p.at(i)) +
                    " failed: " + detail::describe_exception(f.error));
  }
  for (const double f : time.finish) time.makespan = std::max(time.makespan, f);
  if (comm_span) {
    comm_span->assign(n, 0.0);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (stream_of(p.at(i).k) != stream_class::comm) continue;
      double last = time.start[i];  // the last party to start: a transfer's peer, or a replica
      if (is_p2p(p.at(i).k) && p.partner[i] != program::none)
        last = std::max(last, time.start[p.partner[i]]);
      else
        for (int rep = 1; rep < replicas; ++rep)
          last = std::max(last, started_at[static_cast<std::size_t>(rep) * n + i]);
      (*comm_span)[i] = std::max(0.0, time.finish[i] - last);
    }
  }
  return time;
}

}  // namespace weft::exec
