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
#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <weft/config.hpp>
#include <weft/core/binding.hpp>
#include <weft/core/error.hpp>
#include <weft/rt/await.hpp>
#include <weft/rt/clock.hpp>
#include <weft/rt/host.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/rt/stream.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/run_measures.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/timeline.hpp>

namespace weft::exec {

/// Deprecated spelling of `weft::run_measures` (schedule/run_measures.hpp); goes in the next
/// release (CHANGELOG.md).
using weft::run_measures;

struct run_options {
  unsigned workers = 2;  ///< threads that run compute streams, shared by every rank
  /// Threads that run comm streams (start transfers and all-to-alls, place what arrived), as an
  /// accelerator's communication engines do beside its compute units; 0: the compute workers
  /// run them too, first come, first served.
  unsigned comm_workers = 1;
  rt::delay_model delay{};  ///< emulated link for transfers and all-to-alls
  /// A run that has not finished by then is stopped and reported, naming the op every rank is
  /// waiting at.
  seconds timeout{30};
  /// Called on the worker right before each op runs (tracing, fault injection), with the world
  /// rank; may throw, which fails the op.
  std::function<void(int rank, const op&)> before_op{};
  /// A world of processes to run on (mpi::communicator): this process runs the op copies of
  /// world rank `comm->rank()`, the other ranks run theirs, and every rank gets the whole run's
  /// timeline. Null: every rank in this process, on an in-process world (with `delay`). Not
  /// owned; it must outlive the runs.
  rt::communicator* comm = nullptr;
};

/// A run that stopped: an op threw, a peer process failed, or the run timed out (weft's one
/// run-time error, core/error.hpp: the rank, the op, the cause).
using weft::run_error;

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
/// The tag of the results a world of processes sends to rank 0 after a run (exec/collect.hpp):
/// MPI guarantees tags up to 32767, and no model uses this one.
inline constexpr int result_tag = 32767;
/// The channel of the runner's own collectives over the whole world (the start barrier, the
/// timeline's gather); models number their channels from 0.
inline constexpr int runtime_channel = -1;

/// A model a runner can drive: an object with one kernel per (kind, phase) of the program,
/// `void operator()(weft::kinds::K, weft::phases::P, weft::exec::run_call&)` (compute kernels do
/// their work; comm kernels start an operation on `call.comm`, see `run_call`). Optionally:
/// `int comm_steps(const op&)`, how many steps a comm op takes (1 without), and the transfer
/// routing of `routes_transfers`. The concept checks a kernel taking a `run_call` and, where
/// there is one, `comm_steps`'s signature; whether every kernel the program needs is there is
/// checked when a run starts (`runnable` proves it at compile time; docs/custom-model.md).
template <class Model>
concept run_binding = has_some_kernel<Model, run_call> &&(
    !requires(Model & m, const op& o) { m.comm_steps(o); } ||
    requires(Model & m, const op& o) {
      { m.comm_steps(o) } -> std::convertible_to<int>;
    });

/// A model that leaves its pipeline transfers to the runner: it names the data each send carries
/// and the buffer each receive lands in (per op: its micro-batch and chunk say which), and the
/// runner posts them to the right peer with the right tag. Such a model needs no send or recv
/// kernel. The data must stay untouched, and the buffer unread, until the transfer completes —
/// which the program's waits guarantee for what its ops read and write.
template <class Model>
concept routes_transfers = requires(Model& m, const run_call& c) {
  { m.outgoing(c) } -> std::convertible_to<rt::const_data>;
  { m.incoming(c) } -> std::convertible_to<rt::mutable_data>;
};

/// True when `Model` has what a runner calls for every pair in `Used` (give it
/// `uses_lowered(schedule)`: the transfers lowering adds included) — its kernels taking a
/// `run_call`, send and recv covered by transfer routing where the model routes them. Otherwise
/// compilation stops at the first missing pair, naming it (`diag::model_lacks_kernel`). The
/// runner checks the same at run time before a run starts.
template <class Model, kind_phase_set Used>
inline constexpr bool runnable =
    binds_all<Model, routes_transfers<Model> ? Used.without(kind::send).without(kind::recv) : Used,
              run_call>;

namespace detail {
template <class Model>
int comm_steps(Model& model, const op& o) {
  if constexpr (requires { model.comm_steps(o); })
    return std::max(1, static_cast<int>(model.comm_steps(o)));
  else
    return 1;
}
/// Calls the kernel of `call.op`: the model's own, or the runner's transfer for a model that
/// routes its transfers through it.
template <class Model>
void call_kernel(Model& model, run_call& call) {
  if constexpr (routes_transfers<Model>) {
    if (call.op.k == kind::send) {
      call.started = call.comm->isend(model.outgoing(call), call.peer, call.tag);
      return;
    }
    if (call.op.k == kind::recv) {
      call.started = call.comm->irecv(model.incoming(call), call.peer, call.tag);
      return;
    }
  }
  invoke_kernel(model, call.op, call);
}
/// Does `Model` have what the runner calls for (k, ph)?
template <class Model>
constexpr bool has_run_kernel(kind k, phase ph) {
  if (routes_transfers<Model> && is_p2p(k)) return true;
  return binds<Model, run_call>(k, ph);
}
/// A model as the runner's loop sees it: its kernels behind one call each, so that the loop is
/// compiled once rather than once per model (an indirect call per op costs nanoseconds).
struct bound_model {
  void* self = nullptr;
  void (*call)(void*, run_call&) = nullptr;
  int (*steps)(void*, const op&) = nullptr;
  bool (*has)(kind, phase) = nullptr;

  template <class Model>
  static bound_model of(Model& m) {
    return {&m, [](void* s, run_call& c) { call_kernel(*static_cast<Model*>(s), c); },
            [](void* s, const op& o) { return comm_steps(*static_cast<Model*>(s), o); },
            [](kind k, phase ph) { return has_run_kernel<Model>(k, ph); }};
  }
};
}  // namespace detail

namespace detail {
/// Waits for `e`, an operation of a world of processes, giving up at `d` (telling the other
/// ranks) or as soon as the world has a fault; `rank` (world rank) fails, `who` names it.
inline void await_world(rt::communicator& comm, const rt::event& e, const rt::deadline& d, int rank,
                        const std::string& who, const std::string& what) {
  std::string fault;
  switch (rt::await(e, d, [&] { return !(fault = comm.fault()).empty(); })) {
    case rt::await_end::done:
      return;
    case rt::await_end::stopped:
      throw run_error("weft: run: " + who + ", " + what + ": " + fault);  // another's failure
    case rt::await_end::timed_out: {
      const std::string why = what + " not complete after " + d.budget_words();
      comm.announce_failure(why);
      throw run_error("weft: run: " + who + ", " + why, rank);
    }
  }
}

/// Counters that workers decrement concurrently, for `readiness`.
class atomic_counters {
 public:
  explicit atomic_counters(std::size_t n) : c_(std::make_unique<std::atomic<std::uint32_t>[]>(n)) {}
  std::atomic<std::uint32_t>& operator[](std::size_t i) noexcept { return c_[i]; }
  std::atomic<std::uint32_t>* data() noexcept { return c_.get(); }
  void set_relaxed(std::size_t i, std::uint32_t v) noexcept {
    c_[i].store(v, std::memory_order_relaxed);
  }
  const std::atomic<std::uint32_t>& operator[](std::size_t i) const noexcept { return c_[i]; }

 private:
  std::unique_ptr<std::atomic<std::uint32_t>[]> c_;
};

/// Per worker thread: the run and stream whose task it is running, the unit of that stream that
/// became ready meanwhile (to run next in the same task), and the clock reading the thread took
/// last (the moment an op completed is the moment what it readied became ready).
struct follow_on {
  const void* owner = nullptr;
  std::uint32_t queue = 0, unit = npos;
  std::uint32_t handoff = npos;  ///< a unit of another stream readied meanwhile
  rt::cycle_clock::ticks tick = 0;
  /// The thread is the run's host, helping (rt::worker_pool::help): it hands its chain to the
  /// workers after a while, to mind the run's deadline.
  bool host = false;
  static follow_on& here() noexcept {
    thread_local follow_on f;
    return f;
  }
};

}  // namespace detail

/// Runs one lowered program, step after step: the semantics, the worker threads, the streams and
/// the communication world are built once, and each `run` executes the whole program with a model
/// (a trainer's step). `run_program` is one runner used once.
class runner {
 public:
  /// Runs `p` on `replicas` copies of each pipeline rank (world rank = rank * replicas + replica).
  WEFT_DECL runner(program p, int replicas = 1, run_options opt = {});
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  const program& prog() const noexcept { return p_; }
  const semantics& graph() const noexcept { return g_; }
  int replicas() const noexcept { return replicas_; }

  /// Runs the program once and returns replica 0's timeline in seconds from the start: each op
  /// from the start of its unit (a transfer when its later end is posted, a collective when its
  /// last replica is) to its completion; the makespan covers every replica. `measures` receives
  /// what calibrates a simulation of the run (schedule/run_measures.hpp). Throws `run_error` when
  /// an op throws (naming its rank and op) or when the run is not finished after the timeout
  /// (naming the op every unfinished rank waits at, and what it waits for); either way every stream
  /// is abandoned before it returns, and the runner can run again.
  template <run_binding Model>
  timeline run(Model& model, run_measures* measures = nullptr) {
    return run_bound(detail::bound_model::of(model), measures);
  }

 private:
  /// The loop itself, compiled once for every model.
  WEFT_DECL timeline run_bound(const detail::bound_model& model, run_measures* measures);

  using ticks = rt::cycle_clock::ticks;
  static constexpr ticks never = ~ticks{0};
  /// After each op copy's start and finish in `measured_`, what a world's ranks also share: the
  /// runtime's gaps (sum and count of each kind), where and when the rank's time began.
  enum tail_field : std::size_t {
    gap_sum,
    gap_count,
    wake_sum,
    wake_count,
    host_id,
    steady_origin_s,
    tail_fields
  };

  // The phases of `run_bound` (exec/impl/runner.ipp), each a function of its own.
  /// One run's state and the work its ops do (exec/impl/runner.ipp): the set-up, the start (the
  /// host helping), the host's wait, and the hot path the workers' tasks run.
  struct run_state;
  /// After the run: replica 0's timeline, and `measures` when asked for.
  WEFT_DECL timeline timeline_and_measures(const run_state& run, run_measures* measures,
                                           double process_cpu_end);
  /// A kernel for every (kind, phase) of the program, before anything starts — the transfers
  /// lowering added included, which a proof over the compute schedule does not see.
  WEFT_DECL void check_kernels(const detail::bound_model& model) const;
  /// After the run: throws `run_error` naming the op that failed, or, for a run not finished,
  /// the op every rank of this process is stuck at and what it waits for; leaves a fresh
  /// in-process world behind either way.
  WEFT_DECL void fail_if_stopped(bool finished, const readiness<detail::atomic_counters>& st,
                                 std::uint32_t failed_op, const std::string& peer_fault,
                                 const rt::deadline& deadline);
  /// What the runtime spent between units (`tail_field` order: sums and counts).
  WEFT_DECL std::array<double, 4> runtime_gaps(ticks origin, double per_tick) const;
  /// Every rank's start and finish times to every rank, on one time line; the world's gaps.
  WEFT_DECL std::array<double, 4> gather_world(const std::vector<int>& everyone,
                                               const std::array<double, 4>& gaps,
                                               std::chrono::steady_clock::time_point steady_origin,
                                               const rt::deadline& deadline);
  /// Replica 0's timeline from the measured times (a unit starts when its last member does).
  WEFT_DECL timeline timeline_of(const double* start_s, const double* finish_s) const;
  /// What calibrates a simulation of the run; `process_cpu` < 0: CPU time not measured.
  WEFT_DECL void fill_measures(run_measures& m, const timeline& time,
                               const std::array<double, 4>& gaps, double process_cpu) const;
  /// Seconds from `origin` to `t` on the cycle clock at `per_tick` (read once per run: the
  /// clock's rate is measured up to the call); `never`: infinity.
  static double seconds_since(ticks origin, ticks t, double per_tick) {
    return t == never ? std::numeric_limits<double>::infinity()
                      : static_cast<double>(static_cast<std::int64_t>(t - origin)) * per_tick;
  }
  /// How often the host of a run looks at its deadline and its peers' faults (a failure does
  /// not wake it), and how long it first helps run the work before it does.
  static constexpr std::chrono::milliseconds host_looks_every{5};

  program p_;
  kind_phase_set uses_ = uses_ops(p_.source.ops);
  int replicas_;
  run_options opt_;
  int local_ = -1;  ///< the world rank this process runs (a world of processes), else -1: all
  semantics g_;
  std::uint32_t sinks_ = 0;
  std::vector<std::uint8_t> awaited_;  ///< per op copy: does its completion count toward the end
  rt::worker_pool pool_;
  std::unique_ptr<rt::inproc_world> world_;
  std::vector<std::unique_ptr<rt::stream>> streams_;  ///< per queue copy
  // Per op copy, for one run: when it started and completed, when (as a unit of compute, by its
  // lead) it became ready and which worker thread ran it — to measure what the runtime spends
  // between units (`dispatch_gap`).
  std::vector<ticks> started_, finished_, ready_;
  /// Per op copy of a unit of compute, when measuring in-process: its unit's CPU time, and
  /// whether it is the unit's first member (so a unit is counted once).
  std::vector<double> cpu_;
  std::vector<std::uint8_t> cpu_lead_;
  std::vector<const void*> ran_on_;
  std::vector<std::uint8_t> followed_;  ///< ran as a follow-on, in the task of the one before
  /// What a run measured, in seconds (and, in a world, what it gathers): kept across runs, so a
  /// large program does not map fresh pages every step.
  std::vector<double> measured_;

  std::string name_rank(int wr) const {
    std::string s = "rank " + std::to_string(wr);
    if (replicas_ > 1)
      s += " (pipeline rank " + std::to_string(wr / replicas_) + ", replica " +
           std::to_string(wr % replicas_) + ")";
    return s;
  }
  int world_rank(std::uint32_t x) const {
    return p_.rank[g_.op_of(x)] * replicas_ + g_.replica_of(x);
  }
  /// Does this process run op copy `x`?
  bool local(std::uint32_t x) const { return local_ < 0 || world_rank(x) == local_; }
  rt::communicator& comm_of(int wr) { return opt_.comm ? *opt_.comm : world_->at(wr); }
  void await(const rt::event& e, const rt::deadline& d, const std::string& what) {
    detail::await_world(*opt_.comm, e, d, local_, name_rank(local_), what);
  }
};

/// One `runner` used once: runs `p` on `replicas` copies of each pipeline rank with `model`.
template <run_binding Model>
timeline run_program(const program& p, int replicas, Model& model, const run_options& opt,
                     run_measures* measures = nullptr) {
  if (replicas < 1) throw config_error("weft: run: replicas must be >= 1");
  runner r(p, replicas, opt);
  return r.run(model, measures);
}

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/runner.ipp>
#endif
