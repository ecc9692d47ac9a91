// The runner's loop (exec/runner.hpp): part of the header in header-only builds, compiled once
// into `weft::compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/exec/runner.hpp>
#include <weft/rt/cpu_time.hpp>

namespace weft::exec {

WEFT_DECL runner::runner(program p, int replicas, run_options opt)
    : p_(std::move(p)),
      replicas_(replicas >= 1 ? replicas : throw config_error("weft: run: replicas must be >= 1")),
      opt_(std::move(opt)),
      g_(p_, {.replicas = replicas_}),
      pool_(opt_.workers, opt_.comm_workers),
      world_(opt_.comm ? nullptr
                       : std::make_unique<rt::inproc_world>(p_.ranks() * replicas_, opt_.delay)) {
  if (opt_.comm) {
    const int world = p_.ranks() * replicas_;
    if (opt_.comm->size() != world)
      throw config_error("weft: run: the program runs on " + std::to_string(world) + " ranks (" +
                         std::to_string(p_.ranks()) + " pipeline ranks x " +
                         std::to_string(replicas_) + " replicas); the communicator has " +
                         std::to_string(opt_.comm->size()));
    local_ = opt_.comm->rank();
    // Between processes only transfers and collectives carry what an op waits for.
    for (std::uint32_t x = 0; x < g_.ops(); ++x)
      if (local(x))
        g_.each_wait(x, [&](std::uint32_t y, bool) {
          if (!local(y))
            throw config_error("weft: run: " + to_string(p_.at(g_.op_of(x))) + " on " +
                               name_rank(world_rank(x)) + " waits for " +
                               to_string(p_.at(g_.op_of(y))) + " on " + name_rank(world_rank(y)) +
                               ", which no transfer carries: processes cannot share it");
        });
  }
  const std::uint32_t Q = g_.queues();
  for (std::uint32_t q = 0; q < Q * static_cast<std::uint32_t>(replicas_); ++q) {
    const bool comm = q % Q % streams_per_rank >= lanes_per_class;
    streams_.push_back(std::make_unique<rt::stream>(
        pool_, comm ? rt::stream_role::comm : rt::stream_role::compute));
  }
  // The run is over when every op that releases nothing has completed: every other op is
  // something one of them waits for — unless the program has a cycle (lowered unchecked), whose
  // ops may lead to no such op: those are awaited too, so the run waits for them (and times out
  // naming them) rather than ending before they ran.
  const std::uint32_t N = g_.ops();
  awaited_.assign(N, 0);
  std::vector<std::uint8_t> leads_to_sink(N, 0);
  std::vector<std::uint32_t> todo;
  for (std::uint32_t x = 0; x < N; ++x)
    if (g_.release_count(x) == 0) {
      leads_to_sink[x] = 1;
      todo.push_back(x);
    }
  while (!todo.empty()) {
    const std::uint32_t x = todo.back();
    todo.pop_back();
    g_.each_wait(x, [&](std::uint32_t y, bool) {
      if (!leads_to_sink[y]) {
        leads_to_sink[y] = 1;
        todo.push_back(y);
      }
    });
  }
  for (std::uint32_t x = 0; x < N; ++x)
    if (local(x) && (g_.release_count(x) == 0 || !leads_to_sink[x])) {
      awaited_[x] = 1;
      ++sinks_;
    }
  rt::cycle_clock::start();
}

namespace detail {

/// What a run's CPU times say (`run_measures::cpu`, `background_cores`, `comm_cores`,
/// `co_run`), from every op copy's start and finish (seconds), its unit's CPU time and whether
/// it leads its unit, and the process's CPU time over the run.
WEFT_DECL void measure_cpu_use(const semantics& g, const double* start, const double* finish,
                               const double* cpu, const std::uint8_t* lead, double process_cpu,
                               double makespan, run_measures& m) {
  const std::uint32_t N = g.ops();
  constexpr double inf = std::numeric_limits<double>::infinity();
  // A unit from its last member's start to its last member's completion, as the simulators
  // hold it.
  const auto span_of_unit = [&](std::uint32_t u) {
    double begin = start[u], end = finish[u];
    g.each_member(u, [&](std::uint32_t y) {
      begin = std::max(begin, start[y]);
      end = std::max(end, finish[y]);
    });
    return std::pair{begin, end};
  };
  double units_cpu = 0;
  for (std::uint32_t x = 0; x < N; ++x)
    if (lead[x]) units_cpu += cpu[x];
  m.cpu.assign(N, weft::seconds{0});
  for (std::uint32_t x = 0; x < N; ++x) m.cpu[x] = weft::seconds(cpu[x]);
  // Every thread's CPU time but the units', spread over the run; and per unit of communication
  // in flight.
  const double other = std::max(0.0, process_cpu - units_cpu);
  m.background_cores = makespan > 0 ? other / makespan : 0.0;
  double in_flight = 0;
  // Units of compute as (time, +1 start / -1 end), for the time each ran beside another.
  std::vector<std::pair<double, int>> edges;
  for (std::uint32_t x = 0; x < N; ++x) {
    if (g.unit_of(x) != x) continue;
    const auto [begin, end] = span_of_unit(x);
    if (end == inf || !(end > begin)) continue;
    if (!g.computes(x)) {
      in_flight += end - begin;
    } else {
      edges.push_back({begin, 1});
      edges.push_back({end, -1});
    }
  }
  m.comm_cores = in_flight > 0 ? other / in_flight : 0.0;
  // Per edge: how long two or more units of compute had run at once before it, and how many
  // run after it.
  std::sort(edges.begin(), edges.end());  // at one time, ends (-1) before starts
  std::vector<std::pair<double, int>> marks;
  marks.reserve(edges.size());
  double together = 0;
  int now = 0;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    if (k > 0 && now >= 2) together += edges[k].first - edges[k - 1].first;
    now += edges[k].second;
    marks.push_back({together, now});
  }
  const auto together_until = [&](double t) {  // how long two or more ran before t
    const auto it = std::upper_bound(edges.begin(), edges.end(), std::pair{t, 2});
    if (it == edges.begin()) return 0.0;
    const std::size_t k = static_cast<std::size_t>(it - edges.begin()) - 1;
    return marks[k].first + (marks[k].second >= 2 ? t - edges[k].first : 0.0);
  };
  m.co_run.assign(N, 0.0);
  for (std::uint32_t x = 0; x < N; ++x) {
    if (!g.computes(g.unit_of(x))) continue;
    const auto [begin, end] = span_of_unit(g.unit_of(x));
    if (end == inf || !(end > begin)) continue;
    m.co_run[x] =
        std::clamp((together_until(end) - together_until(begin)) / (end - begin), 0.0, 1.0);
  }
}

}  // namespace detail

// One run's state and the work its ops do, shared by the workers' tasks: the readiness
// counters, the clocks' records, the stop flag, the host's help. The hot path (`complete`,
// `post`, `ready`, `launch`, `unit_task`) reaches it through the `run_state` its tasks and the
// events hold, as the tasks' lambdas once did through the frame they captured.
struct runner::run_state {
  /// What the semantics announces, handed to the work it queues so that it can complete through
  /// it: a comm op is posted as soon as it has arrived, a unit of compute runs once it is ready.
  struct events : readiness_events {
    static constexpr bool announces_arrivals = true;
    run_state& run;
    void arrived(std::uint32_t x) { run.post(x); }
    void ready(std::uint32_t u) { run.ready(u); }
  };

  runner& r;
  const program& p;
  const semantics& g;
  const detail::bound_model& model;
  // What the runtime spends between units (`dispatch_gap`, `wake_gap`): only when a run's
  // measures are asked for, or a world gathers every rank's — three stores per op and their
  // arrays, which a run that only wants its timeline should not pay for.
  const bool measuring;
  // CPU time per unit costs two system calls: only when a run's measures are asked for, and
  // in-process (a world of processes does not gather it).
  const bool measure_cpu;
  double* cpu_of = nullptr;
  std::uint8_t* cpu_lead = nullptr;
  ticks* started_at = nullptr;
  ticks* finished_at = nullptr;
  ticks* ready_at = nullptr;
  const void** ran_on = nullptr;
  std::uint8_t* followed = nullptr;
  readiness<detail::atomic_counters> st;
  events ev{{}, *this};
  // Set once the run has failed or timed out: nothing more is launched, and what was already
  // queued returns at once, so the streams can be drained before the run's state goes away.
  std::atomic<bool> stopping{false};
  // The host sleeps until the last op completes (or a failure or the deadline).
  std::atomic<std::uint32_t> remaining;
  const std::uint8_t* const awaited;
  std::mutex done_m;
  std::condition_variable done_cv;
  const rt::deadline deadline;
  // The host helps run the work at first (`start`), until then. Only the host's own tasks read
  // and write `host_time_up` and `host_looked` (when it last read the time).
  const std::chrono::steady_clock::time_point host_until;
  bool host_time_up = false;
  ticks host_looked = 0;
  // The op whose kernel threw, when it ran as a follow-on inside another unit's task.
  std::atomic<std::uint32_t> failed_op{npos};
  std::vector<int> everyone;  ///< a world's ranks, for its barrier and gather
  double process_cpu_origin = 0;
  ticks origin = 0;
  std::chrono::steady_clock::time_point steady_origin;
  std::string peer_fault;  ///< a peer process's failure the host saw while waiting

  /// The set-up: the per-op arrays (the measures' only when asked for), the counters, the
  /// deadline.
  run_state(runner& owner, const detail::bound_model& m, run_measures* measures)
      : r(owner),
        p(owner.p_),
        g(owner.g_),
        model(m),
        measuring(measures != nullptr || owner.opt_.comm != nullptr),
        measure_cpu(measures != nullptr && !owner.opt_.comm),
        st(owner.g_),
        remaining(owner.sinks_),
        awaited(owner.awaited_.data()),
        deadline(rt::deadline::after(owner.opt_.timeout)),
        host_until(std::min(deadline.at, std::chrono::steady_clock::now() + host_looks_every)) {
    const std::uint32_t N = g.ops();
    r.started_.assign(N, never);
    r.finished_.assign(N, never);
    r.ready_.assign(measuring ? N : 0, never);
    r.ran_on_.assign(measuring ? N : 0, nullptr);
    r.followed_.assign(measuring ? N : 0, 0);
    r.cpu_.assign(measure_cpu ? N : 0, 0.0);
    r.cpu_lead_.assign(measure_cpu ? N : 0, 0);
    cpu_of = r.cpu_.data();
    cpu_lead = r.cpu_lead_.data();
    started_at = r.started_.data();
    finished_at = r.finished_.data();
    ready_at = r.ready_.data();
    ran_on = r.ran_on_.data();
    followed = r.followed_.data();
  }

  run_call call_for(std::uint32_t x, int step) const {
    const std::uint32_t i = g.op_of(x);
    run_call c;
    c.op = p.at(i);
    c.rank = p.rank[i];
    c.replica = g.replica_of(x);
    c.world_rank = r.world_rank(x);
    c.comm = &r.comm_of(c.world_rank);
    c.step = step;
    if (is_p2p(c.op.k) && p.partner[i] != npos) {
      c.peer = p.rank[p.partner[i]] * r.replicas_ + c.replica;
      c.tag = transfer_tag;
    }
    return c;
  }

  // Op copy `x` completed at `t` (on the calling thread's clock reading): release what waits.
  void complete(std::uint32_t x, ticks t) {
    finished_at[x] = t;
    detail::follow_on::here().tick = t;
    st.complete(x, ev);
    if (awaited[x] && remaining.fetch_sub(1) == 1) {
      std::lock_guard lock(done_m);
      done_cv.notify_all();
    }
  }

  // A comm op (alone, or a member of a transfer or collective): started on its comm stream as
  // soon as it has arrived; the backend completes it when its peers are there too.
  void post(std::uint32_t x) {
    if (g.computes(g.unit_of(x)) || stopping.load() || !r.local(x)) return;
    rt::stream& s = *r.streams_[g.queue_of(x)];
    const op o = p.at(g.op_of(x));
    const int steps = model.steps(model.self, o);
    for (int step = 0; step < steps; ++step)
      s.enqueue_async(
          [this, x, o, step] {
            if (stopping.load()) {
              rt::event none;
              none.fire();
              return none;
            }
            if (step == 0) {
              if (r.opt_.before_op) r.opt_.before_op(r.world_rank(x), o);
              started_at[x] = rt::cycle_clock::now();
            }
            run_call c = call_for(x, step);
            model.call(model.self, c);
            if (!c.started)  // the model's kernel broke its contract (runner.hpp)
              throw config_error("weft: run: the model's kernel for " + to_string(o) +
                                 " started no communication");
            return *c.started;
          },
          x);
    s.enqueue(
        [this, x] {
          if (!stopping.load()) complete(x, rt::cycle_clock::now());
        },
        x);
  }

  // A unit of compute: on its lead member's stream, every member's kernel in turn. When its
  // completion makes the next op of the same stream ready, that op runs right here, in the same
  // task (nothing else can be queued on the stream: its next op is the only one that waits for
  // this one in stream order) — a dependent chain costs no queue hop per op, and one clock
  // reading: an op of the chain starts when the one before it completed.
  void ready(std::uint32_t u) {
    if (!g.computes(u) || stopping.load() || !r.local(u)) return;
    detail::follow_on& self = detail::follow_on::here();
    if (measuring) ready_at[u] = self.tick;
    if (self.owner == &g) {  // readied by a unit this thread is running: see `unit_task`
      if (self.queue == g.queue_of(u) && self.unit == npos) {
        self.unit = u;
        return;
      }
      if (self.handoff == npos) {
        self.handoff = u;
        return;
      }
    }
    launch(u, false);
  }

  // Queues unit `u` on its stream. `next`: the calling worker is about to be free and runs it
  // itself instead of waking another thread for it.
  void launch(std::uint32_t u, bool next) {
    rt::stream& s = *r.streams_[g.queue_of(u)];
    if (next)
      s.enqueue_next([this, u] { unit_task(u); }, u);
    else
      s.enqueue([this, u] { unit_task(u); }, u);
  }

  // Unit `u`'s kernels, then every unit its completions ready on the same stream (`ready`).
  void unit_task(std::uint32_t u) {
    detail::follow_on& self = detail::follow_on::here();
    const detail::follow_on saved = self;
    self = {&g, g.queue_of(u), npos, npos, 0, saved.host && !host_time_up};
    ticks t = rt::cycle_clock::now();
    for (std::uint32_t unit = u; unit != npos && !stopping.load();) {
      if (measuring) ran_on[unit] = &self;  // the thread's own follow-on record names the worker
      try {
        t = run_kernels(unit, t);
      } catch (...) {
        failed_op.store(unit);
        self = saved;
        throw;
      }
      t = rt::cycle_clock::now();
      g.each_member(unit, [&](std::uint32_t x) { complete(x, t); });
      if (r.opt_.comm) r.opt_.comm->poll();  // this thread has a core: move communication on
      unit = std::exchange(self.unit, npos);
      // The host, helping, hands its stream to the workers once its time to help is up, after
      // any unit, chained or not. (It looks at the time after about a millisecond, 2^20 ticks
      // of a clock of 1-5 GHz or of steady_clock's nanoseconds: a subtraction per op, not a
      // clock reading.)
      if (self.host && t - host_looked >= ticks{1} << 20 &&
          (host_looked = t, std::chrono::steady_clock::now() >= host_until)) {
        self.host = false;
        host_time_up = true;
        if (unit != npos) launch(std::exchange(unit, npos), false);  // behind this task
        rt::stream::leave();  // and the stream handed to a worker
      }
      if (measuring && unit != npos) followed[unit] = 1;
      // A unit of another stream this completion readied: this worker takes it once it is
      // free, unless its own stream goes on.
      if (const std::uint32_t h = std::exchange(self.handoff, npos); h != npos)
        launch(h, unit == npos);
    }
    self = saved;
  }

  // Every member's kernel of `unit`, started at `t` (read again after a `before_op` hook), its
  // CPU time recorded when measured. Returns the start.
  ticks run_kernels(std::uint32_t unit, ticks t) {
    if (r.opt_.before_op) {
      g.each_member(unit,
                    [&](std::uint32_t x) { r.opt_.before_op(r.world_rank(x), p.at(g.op_of(x))); });
      t = rt::cycle_clock::now();
    }
    g.each_member(unit, [&](std::uint32_t x) { started_at[x] = t; });
    const double cpu_start = measure_cpu ? rt::thread_cpu_seconds() : 0.0;
    g.each_member(unit, [&](std::uint32_t x) {
      run_call c = call_for(x, 0);
      model.call(model.self, c);
    });
    if (measure_cpu) {
      const double used = rt::thread_cpu_seconds() - cpu_start;
      bool lead = true;
      g.each_member(unit, [&](std::uint32_t x) {
        cpu_of[x] = used;
        cpu_lead[x] = std::exchange(lead, false);
      });
    }
    return t;
  }

  /// The start: a world of processes leaves one barrier together (its ranks' time origins are
  /// then within its skew, and the gathered timeline is one); the origins are read; the host
  /// runs work itself while it would otherwise sleep, in a worker's place (none wakes for the
  /// first unit, none wakes the host after the last), for a while — then it leaves the rest to
  /// the workers and minds the deadline.
  void start() {
    if (r.opt_.comm) {
      for (int k = 0; k < r.opt_.comm->size(); ++k) everyone.push_back(k);
      r.await(r.opt_.comm->barrier(everyone, runtime_channel), deadline,
              "the barrier before the run");
    }
    process_cpu_origin = measure_cpu ? rt::process_cpu_seconds() : 0.0;
    origin = rt::cycle_clock::now();
    steady_origin = std::chrono::steady_clock::now();
    host_looked = origin;
    detail::follow_on& host = detail::follow_on::here();
    // The host's record as it was, whatever happens (`help` rethrows the runtime's failures).
    struct restore {
      detail::follow_on& record;
      const detail::follow_on saved = record;
      ~restore() { record = saved; }
    } const keep{host};
    const detail::follow_on& saved = keep.saved;
    r.pool_.help(
        [&](bool helping) {
          // Helping, the first unit the start readies is the host's to run (`ready` leaves it
          // in `handoff`: the host has no stream of its own, so nothing follows on).
          host = {helping ? &g : nullptr, npos, npos, npos, origin, false};
          st.begin(ev);
          const std::uint32_t first = std::exchange(host.handoff, npos);
          host = saved;
          host.host = helping;
          if (first != npos) launch(first, true);
        },
        [&] {
          return std::chrono::steady_clock::now() < host_until && !stopping.load() &&
                 !r.pool_.failed();
        });
  }

  /// The host's wait: until every op has completed, but no longer once an op has failed (its
  /// consumers would wait for data that never comes) or a peer process has, and never past the
  /// deadline. Then the streams drain (finished) or are abandoned. Whether the run finished.
  bool wait() {
    {
      std::unique_lock lock(done_m);
      while (remaining.load() > 0 && !r.pool_.failed()) {
        if (r.opt_.comm && !(peer_fault = r.opt_.comm->fault()).empty()) break;
        const auto left = deadline.at - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) break;
        // A failure does not wake the host: look again every few milliseconds.
        done_cv.wait_for(lock,
                         std::min<std::chrono::steady_clock::duration>(left, host_looks_every));
      }
    }
    const bool finished = remaining.load() == 0;
    if (finished) {
      for (auto& s : r.streams_) s->synchronize();  // the last completions are still returning
    } else {
      stopping.store(true);
      for (int pass = 0; pass < 2; ++pass)  // the second catches what the first one's tasks queued
        for (auto& s : r.streams_) s->abandon();
    }
    return finished;
  }
};

// The run in its named steps: the world still whole, the kernels there, the set-up, the start
// (the host helping), the host's wait, the stuck-op report, the timeline and the measures.
WEFT_DECL timeline runner::run_bound(const detail::bound_model& model, run_measures* measures) {
  if (opt_.comm)
    if (const std::string f = opt_.comm->fault(); !f.empty())
      throw run_error("weft: run: this world of processes has failed (" + f +
                      "), and MPI may still hold its operations: start the processes again");
  check_kernels(model);
  run_state run(*this, model, measures);
  run.start();
  const bool finished = run.wait();
  const double process_cpu_end = run.measure_cpu ? rt::process_cpu_seconds() : 0.0;
  fail_if_stopped(finished, run.st, run.failed_op.load(), run.peer_fault, run.deadline);
  return timeline_and_measures(run, measures, process_cpu_end);
}

WEFT_DECL timeline runner::timeline_and_measures(const run_state& run, run_measures* measures,
                                                 double process_cpu_end) {
  // Start and finish per op copy, in seconds from the origin (never: infinity), in `measured_`
  // followed by what a world's ranks also share (`tail_field`).
  const std::uint32_t N = g_.ops();
  const double per_tick = rt::cycle_clock::seconds_per_tick();
  measured_.resize(2 * std::size_t{N} + tail_fields);  // what is read is written below
  double* const start_s = measured_.data();
  double* const finish_s = start_s + N;
  for (std::uint32_t x = 0; x < N; ++x) {
    start_s[x] = seconds_since(run.origin, started_[x], per_tick);
    finish_s[x] = seconds_since(run.origin, finished_[x], per_tick);
  }
  std::array<double, 4> gaps =
      run.measuring ? runtime_gaps(run.origin, per_tick) : std::array<double, 4>{};
  if (opt_.comm) gaps = gather_world(run.everyone, gaps, run.steady_origin, run.deadline);
  const timeline time = timeline_of(start_s, finish_s);
  if (measures)
    fill_measures(*measures, time, gaps,
                  run.measure_cpu ? process_cpu_end - run.process_cpu_origin : -1.0);
  return time;
}

WEFT_DECL void runner::check_kernels(const detail::bound_model& model) const {
  for (int k = 0; k < kind_count; ++k)
    for (int ph = 0; ph < phase_count; ++ph)
      if (uses_.has(static_cast<kind>(k), static_cast<phase>(ph)) &&
          !model.has(static_cast<kind>(k), static_cast<phase>(ph)))
        throw config_error("weft: run: the model has no kernel for " +
                           std::string(name_of(static_cast<kind>(k))) + " " +
                           std::string(name_of(static_cast<phase>(ph))) +
                           ", which the program uses: add `void operator()(weft::kinds::" +
                           std::string(name_of(static_cast<kind>(k))) +
                           ", weft::phases::" + std::string(tag_name_of(static_cast<phase>(ph))) +
                           ", weft::exec::run_call&)`");
}

WEFT_DECL void runner::fail_if_stopped(bool finished, const readiness<detail::atomic_counters>& st,
                                       std::uint32_t failed_op, const std::string& peer_fault,
                                       const rt::deadline& deadline) {
  const program& p = p_;
  const semantics& g = g_;
  const std::uint32_t Q = g.queues();
  struct {
    const ticks* finish;
    bool operator[](std::uint32_t x) const noexcept { return finish[x] != never; }
  } const completed{finished_.data()};
  if (!finished || pool_.failed()) {
    // What a failed run left behind must not meet the next run: posted transfers, collectives
    // half met. A fresh world, and the pool's failure forgotten once reported. A world of
    // processes cannot be made afresh from here: its fault stays, and refuses the next run.
    if (!opt_.comm) world_ = std::make_unique<rt::inproc_world>(p.ranks() * replicas_, opt_.delay);
  }
  if (pool_.failed()) {
    const rt::task_failure f = pool_.failure();
    pool_.clear_failure();
    const auto x = failed_op != npos ? failed_op : static_cast<std::uint32_t>(f.tag);
    const std::string what =
        to_string(p.at(g.op_of(x))) + " failed: " + describe_exception(f.error);
    if (opt_.comm) opt_.comm->announce_failure(what);
    throw run_error("weft: run: " + name_rank(world_rank(x)) + ", " + what, world_rank(x),
                    p.at(g.op_of(x)), f.error);
  }
  if (!finished) {
    // Per rank this process runs, the op it is stuck at and what that waits for.
    std::string waiting, first_line;
    int first_rank = -1;
    std::optional<op> first_op;
    for (int rep = 0; rep < replicas_; ++rep) {
      // Per rank of this replica, the first op at the head of one of its streams.
      std::vector<std::uint32_t> first(static_cast<std::size_t>(p.ranks()), npos);
      for (std::uint32_t q = 0; q < Q; ++q)
        for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
          const std::uint32_t x = g.copy(p.queue[k], rep);
          if (completed[x]) continue;
          std::uint32_t& b = first[p.rank[p.queue[k]]];
          b = std::min(b, x);
          break;
        }
      for (int r = 0; r < p.ranks(); ++r) {
        const std::uint32_t x = first[static_cast<std::size_t>(r)];
        if (x == npos || !local(x)) continue;
        std::string line = to_string(p.at(g.op_of(x)));
        line += started_[x] != never ? " (started)" : st.has_arrived(x) ? " (ready)" : "";
        if (const std::uint32_t w = waiting_for(st, completed, x); w != npos)
          line += ", waits for " + to_string(p.at(g.op_of(w))) + " on " + name_rank(world_rank(w));
        waiting += "\n  " + name_rank(r * replicas_ + rep) + ": " + line;
        if (first_line.empty()) {
          first_line = line;
          first_rank = r * replicas_ + rep;
          first_op = p.at(g.op_of(x));
        }
      }
    }
    if (!peer_fault.empty())  // another process failed: its rank is in the message, not ours
      throw run_error("weft: run: " + name_rank(local_) + " stopped: " + peer_fault +
                      "; waiting:" + waiting);
    const std::string after = "not finished after " + deadline.budget_words();
    if (opt_.comm) opt_.comm->announce_failure(after + ", waiting at " + first_line);
    throw run_error("weft: run: " + after + "; waiting:" + waiting, first_rank, first_op);
  }
}

WEFT_DECL std::array<double, 4> runner::runtime_gaps(ticks origin, double per_tick) const {
  // Per worker, units in the order it ran them. Where a unit was ready before the worker's
  // previous one finished, the time between them is the runtime's own cost per unit (a
  // follow-on costs nothing of the kind: it starts as the unit before it completes); where the
  // worker had finished before the unit was ready, the time from ready to start is its wake-up.
  // Only when asked for (or a world gathers every rank's): a sort of every unit, which a run
  // that only wants its timeline should not pay for.
  const auto at = [=](ticks t) { return seconds_since(origin, t, per_tick); };
  std::array<double, 4> gaps{};
  std::vector<std::uint32_t> units;
  for (std::uint32_t x = 0; x < g_.ops(); ++x)
    if (ran_on_[x] != nullptr) units.push_back(x);
  std::sort(units.begin(), units.end(), [&](std::uint32_t a, std::uint32_t b) {
    return ran_on_[a] != ran_on_[b] ? std::less<const void*>()(ran_on_[a], ran_on_[b])
                                    : started_[a] < started_[b];
  });
  for (std::size_t k = 0; k < units.size(); ++k) {
    const std::uint32_t x = units[k];
    if (followed_[x]) continue;
    const bool first = k == 0 || ran_on_[units[k - 1]] != ran_on_[x];
    const bool queued = !first && ready_[x] <= finished_[units[k - 1]];
    const double d = std::max(0.0, queued ? at(started_[x]) - at(finished_[units[k - 1]])
                                          : at(started_[x]) - at(ready_[x]));
    gaps[queued ? gap_sum : wake_sum] += d;
    gaps[queued ? gap_count : wake_count] += 1;
  }
  return gaps;
}

WEFT_DECL std::array<double, 4> runner::gather_world(
    const std::vector<int>& everyone, const std::array<double, 4>& gaps,
    std::chrono::steady_clock::time_point steady_origin, const rt::deadline& deadline) {
  // Every rank's own op copies, to every rank; with them, where and when this rank's time began:
  // ranks on one machine share its steady clock, so their origins are put on one time line
  // exactly; across machines the barrier they left together is the common origin.
  const std::uint32_t N = g_.ops();
  std::vector<double>& mine = measured_;
  const std::size_t tail = 2 * std::size_t{N}, len = mine.size();
  std::copy(gaps.begin(), gaps.end(), mine.data() + tail + gap_sum);
  mine[tail + host_id] = rt::this_host();
  mine[tail + steady_origin_s] =
      std::chrono::duration<double>(steady_origin.time_since_epoch()).count();
  std::vector<double> all(len * everyone.size());
  await(opt_.comm->all_gather(mine, all, everyone, runtime_channel), deadline,
        "gathering the timeline");
  const auto tail_of = [&](std::size_t r) { return all.data() + r * len + tail; };
  std::vector<double> shift(everyone.size(), 0.0);
  for (std::size_t r = 0; r < everyone.size(); ++r)
    for (std::size_t h = 0; h < r; ++h)  // the first rank on r's machine
      if (tail_of(h)[host_id] == tail_of(r)[host_id]) {
        shift[r] = shift[h] + tail_of(r)[steady_origin_s] - tail_of(h)[steady_origin_s];
        break;
      }
  // Time 0: the first rank to leave the barrier.
  const double first = *std::min_element(shift.begin(), shift.end());
  for (double& d : shift) d -= first;
  double* const start_s = mine.data();
  double* const finish_s = start_s + N;
  for (std::uint32_t x = 0; x < N; ++x) {
    const auto r = static_cast<std::size_t>(world_rank(x));
    const double* theirs = all.data() + r * len;
    start_s[x] = theirs[x] + shift[r];  // inf stays inf
    finish_s[x] = theirs[N + x] + shift[r];
  }
  std::array<double, 4> world{};
  for (std::size_t r = 0; r < everyone.size(); ++r)
    for (std::size_t k = gap_sum; k <= wake_count; ++k) world[k] += tail_of(r)[k];
  return world;
}

WEFT_DECL timeline runner::timeline_of(const double* start_s, const double* finish_s) const {
  const semantics& g = g_;
  const std::uint32_t n = g.size(), N = g.ops();
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto secs = [](double t) { return weft::seconds(t == inf ? -1.0 : t); };
  timeline time;
  time.start.reserve(n);  // (filled as it goes: no pass that writes what the next overwrites)
  time.finish.reserve(n);
  double makespan = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    // A unit starts when its last member does (semantics.hpp): a transfer posted early starts
    // when its peer is posted too, as the simulators count it.
    double start = start_s[i];
    if (g.kind_of(g.unit_of(i)) != unit_kind::solo)
      g.each_member(g.unit_of(i), [&](std::uint32_t y) { start = std::max(start, start_s[y]); });
    const double finish = finish_s[i];
    time.start.push_back(secs(std::min(start, finish)));
    time.finish.push_back(secs(finish));
    if (finish != inf) makespan = std::max(makespan, finish);
  }
  for (std::uint32_t x = n; x < N; ++x)
    if (finish_s[x] != inf) makespan = std::max(makespan, finish_s[x]);
  time.makespan = weft::seconds(makespan);
  return time;
}

WEFT_DECL void runner::fill_measures(run_measures& m, const timeline& time,
                                     const std::array<double, 4>& gaps, double process_cpu) const {
  const program& p = p_;
  const semantics& g = g_;
  const std::uint32_t n = g.size();
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto secs = [](double t) { return weft::seconds(t == inf ? -1.0 : t); };
  const double* const start_s = measured_.data();
  const double* const finish_s = start_s + g.ops();
  m.posted.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) m.posted[i] = secs(start_s[i]);
  // Means, not medians: a step adds these up along its critical path, and what an
  // oversubscribed core adds lives in the tail a median would hide.
  m.dispatch_gap = weft::seconds(gaps[gap_count] > 0 ? gaps[gap_sum] / gaps[gap_count] : 0.0);
  m.wake_gap = weft::seconds(gaps[wake_count] > 0 ? gaps[wake_sum] / gaps[wake_count] : 0.0);
  if (process_cpu >= 0) {
    detail::measure_cpu_use(g, start_s, finish_s, cpu_.data(), cpu_lead_.data(), process_cpu,
                            time.makespan.count(), m);
    m.cores = rt::usable_cores();
  } else {  // not measured: nothing from an earlier run may stand for this one's
    m.cpu.clear();
    m.co_run.clear();
    m.background_cores = m.comm_cores = 0;
    m.cores = 0;
  }
  m.comm_span.assign(n, weft::seconds{0});
  for (std::uint32_t i = 0; i < n; ++i) {
    if (stream_of(p.at(i).k) != stream_class::comm) continue;
    // From the last party to start it to the last to have it: the simulators start and finish
    // a unit's members together, and what waits for it on any party waits for the last.
    double last = finish_s[i];
    g.each_member(g.unit_of(i), [&](std::uint32_t y) { last = std::max(last, finish_s[y]); });
    m.comm_span[i] = std::max(weft::seconds{0}, secs(last) - time.start[i]);
  }
}

}  // namespace weft::exec
