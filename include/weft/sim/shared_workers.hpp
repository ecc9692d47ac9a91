// Simulating a step when all ranks share a few workers on a few cores, as the CPU runtime runs
// them: a unit that computes needs one of `workers` threads for its whole duration (an
// overlapped forward/backward pair is one unit, on one worker); a transfer or collective holds
// none (it waits on a timer or its peers). Units start in order of the time they become ready,
// the way the runtime's pool takes ready work first come, first served — except that a worker
// finishing a unit whose completion readies the next unit of the same stream runs that one at
// once, and otherwise runs next the first unit of another stream that completion readied, as the
// runtime's runner does (exec/runner.hpp). A unit of compute is ready when what it waits for
// completes, as the runtime marks it: a busy worker takes it without waiting for an event to
// cross, an idle one pays its wake-up, which holds the crossing.
//
// The cores are a resource too (`sim_options::cores`): the units of compute running at once and
// the runtime's other threads share them — those take `background_load` cores' worth at all
// times and `comm_load` per unit of communication in flight (the work they do for it: copies,
// timers, events) — so with n units running and m in flight each goes at
// min(1, cores / (n + background + comm_load m)) of its full rate, and a unit's cost is its work
// at full rate (its CPU time, as `calibrated` takes it). Units of compute running beside another
// also take `co_run_slowdown` longer (1 + x), as two compute threads slow each other beyond
// sharing cores (caches, memory bandwidth, a core's hyper-threads). The run is simulated in time
// order, and a unit's end moves whenever the number running changes. Without cores (the loads
// then count for nothing) and without a co-run slowdown every unit runs at full rate and ends
// at its start plus its cost. Given the work of every op copy (`sim_options::work`, a run's own),
// a unit of compute costs that, not its (kind, phase)'s mean. Readiness is semantics.hpp's, as in
// `simulate`, which gives every rank a device of its own instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <weft/schedule/timeline.hpp>
#include <weft/sim/simulate.hpp>

namespace weft {

namespace detail {

/// The readiness events of a run on shared workers: when each unit is ready, and the runtime's
/// follow-on and hand-off (exec/runner.hpp) as a unit of compute completes.
template <time_type T>
struct worker_events : timed_events<T> {
  const semantics* g = nullptr;
  /// Units of compute ready and waiting for a worker, by (ready time, unit).
  std::priority_queue<std::pair<T, std::uint32_t>, std::vector<std::pair<T, std::uint32_t>>,
                      std::greater<>>
      waiting;
  /// Communication units ready to start, by (ready time, unit): they hold no worker.
  std::priority_queue<std::pair<T, std::uint32_t>, std::vector<std::pair<T, std::uint32_t>>,
                      std::greater<>>
      comm_ready;
  // The runtime's follow-on: a worker finishing a unit of compute runs the next unit of the same
  // stream at once, ahead of everything waiting, when that completion made it ready. Else the
  // first unit of another stream that completion readied is the worker's next, after the
  // runtime's cost per unit, ahead of everything waiting (no other worker wakes).
  std::uint32_t finishing_queue = npos, follow_on = npos, handoff = npos;
  // When each op copy's last dependency completed, without the event latency: a unit of
  // compute is ready then, as the runtime marks it; the event's crossing is part of the wake-up
  // an idle worker measures (`wake_latency`), and a busy worker does not wait for it.
  buffer<T> completed;

  void released(std::uint32_t from, std::uint32_t to, bool event) {
    timed_events<T>::released(from, to, event);
    completed[to] = completed[to] > this->finish[from] ? completed[to] : this->finish[from];
  }
  T unit_ready_at(std::uint32_t u) const {
    if (!g->computes(u)) return this->ready_at(*g, u);
    T t{0};
    g->each_member(u, [&](std::uint32_t x) { t = t > completed[x] ? t : completed[x]; });
    return t;
  }
  void ready(std::uint32_t u) {
    const T at = unit_ready_at(u);
    if (!g->computes(u)) {
      comm_ready.push({at, u});
      return;
    }
    if (finishing_queue != npos) {
      if (follow_on == npos && g->queue_of(u) == finishing_queue) {
        follow_on = u;
        return;
      }
      if (handoff == npos) {
        handoff = u;
        return;
      }
    }
    waiting.push({at, u});
  }
};

/// A run on shared workers in time order: the workers, the clock of events, what runs and what
/// is in flight, and the moves of the runtime's pool (exec/runner.hpp) as events come.
template <time_type T>
class worker_pool_run {
 public:
  worker_pool_run(const semantics& g, const basic_cost_model<T>& c, unsigned workers,
                  const basic_sim_options<T>& opt)
      : g_(g),
        c_(c),
        opt_(opt),
        st_(g),
        start_(g.ops(), T{-1}),
        done_(g.ops(), 0),
        pool_(workers ? workers : 1) {
    ev_.g = &g;
    ev_.arrive.assign(g.ops(), T{0});
    ev_.completed.assign(g.ops(), T{0});
    ev_.finish.assign(g.ops(), T{-1});
    ev_.latency = opt.event_latency;
  }

  basic_timeline<T> run() && {
    st_.begin(ev_);
    wake_idle();
    for (;;) {
      // Communication that is ready starts before later events (it may end before them), after
      // those at its time.
      if (!ev_.comm_ready.empty() &&
          (clock_.empty() || ev_.comm_ready.top().first < std::get<0>(clock_.top()))) {
        start_comm(ev_.comm_ready.top().first);
        continue;
      }
      if (clock_.empty()) break;
      const auto [now, what, id, version] = clock_.top();
      clock_.pop();
      if (what == comm_ends)
        end_comm(id, now);
      else if (version != pool_[id].version)
        continue;  // its end moved
      else if (what == unit_starts)
        start_unit(id, now);
      else
        end_unit(id, now);
    }
    basic_timeline<T> t;
    settle(g_, ev_, start_, done_, finished_, t);
    return t;
  }

 private:
  /// A worker: idle since `free` (every worker starts idle, so its first unit wakes it), or
  /// holding `unit` — from `begin` (after its wake-up or the runtime's cost per unit) with
  /// `left` of its work to do at `rate` since `since`. `version` tells a current end from a
  /// stale one.
  struct worker {
    std::uint32_t unit = npos;
    T free{-std::numeric_limits<double>::infinity()};
    T begin{0}, since{0}, left{0};
    double rate = 1;
    bool running = false;
    std::uint64_t version = 0;
  };
  /// What an event is; at one time, ends first, so a unit ending then is not re-rated by one
  /// starting then.
  enum : int { comm_ends = 0, unit_ends = 1, unit_starts = 2 };
  /// (time, what, worker or unit, version).
  using event = std::tuple<T, int, std::uint32_t, std::uint64_t>;

  /// The rate a unit of compute runs at now: its share of the cores, slowed beside another.
  double rate_now() const {
    double r = 1;
    if (opt_.cores > 0) {
      const double busy = running_ + opt_.background_load + opt_.comm_load * moving_;
      r = std::min(1.0, static_cast<double>(opt_.cores) / busy);
    }
    return running_ >= 2 ? r / (1 + opt_.co_run_slowdown) : r;
  }

  /// The number running changed: every running unit drains what it did at its old rate and
  /// goes on at the new one. Units whose rate stays are not touched (their end stays exact).
  void rerate(T now) {
    const double r = rate_now();
    for (std::uint32_t w = 0; w < pool_.size(); ++w) {
      worker& k = pool_[w];
      if (!k.running || k.rate == r) continue;
      k.left = k.left - (now - k.since) * k.rate;
      if (k.left < T{0}) k.left = T{0};
      k.since = now;
      k.rate = r;
      clock_.push({now + k.left / r, unit_ends, w, ++k.version});
    }
  }

  void assign(std::uint32_t w, std::uint32_t u, T begin) {
    worker& k = pool_[w];
    k.unit = u;
    k.begin = begin;
    k.running = false;
    clock_.push({begin, unit_starts, w, ++k.version});
  }

  /// A free worker takes the unit that waited longest, after the runtime's cost per unit.
  void take_waiting(std::uint32_t w, T now) {
    if (ev_.waiting.empty()) {
      pool_[w].unit = npos;
      pool_[w].free = now;
      return;
    }
    const std::uint32_t u = ev_.waiting.top().second;
    ev_.waiting.pop();
    assign(w, u, now + opt_.dispatch_overhead);
  }

  /// Units ready at `now` find the idle workers, the one idle longest first; an idle worker
  /// wakes up for its unit.
  void wake_idle() {
    while (!ev_.waiting.empty()) {
      std::uint32_t best = npos;
      for (std::uint32_t w = 0; w < pool_.size(); ++w)
        if (pool_[w].unit == npos && (best == npos || pool_[w].free < pool_[best].free)) best = w;
      if (best == npos) return;
      const T at = ev_.waiting.top().first;
      const std::uint32_t u = ev_.waiting.top().second;
      ev_.waiting.pop();
      const T f = pool_[best].free;
      assign(best, u, f >= at ? f + opt_.dispatch_overhead : at + opt_.wake_latency);
    }
  }

  /// Communication ready by `now` starts: it holds no worker, but takes its share of the cores.
  void start_comm(T now) {
    while (!ev_.comm_ready.empty() && !(now < ev_.comm_ready.top().first)) {
      const T at = ev_.comm_ready.top().first;
      const std::uint32_t u = ev_.comm_ready.top().second;
      ev_.comm_ready.pop();
      g_.each_member(u, [&](std::uint32_t x) { start_[x] = at; });
      clock_.push({at + span_of(g_, c_, ev_.arrive, u), comm_ends, u, 0});
      ++moving_;
      if (opt_.comm_load > 0) rerate(at);
    }
  }

  void finish_unit(std::uint32_t u, T now) {
    g_.each_member(u, [&](std::uint32_t x) {
      ev_.finish[x] = now;
      done_[x] = 1;
    });
    finished_ += g_.member_count(u);
  }

  /// A unit of communication completes.
  void end_comm(std::uint32_t u, T now) {
    --moving_;
    if (opt_.comm_load > 0) rerate(now);
    finish_unit(u, now);
    st_.complete_unit(u, ev_);
    wake_idle();
  }

  /// Worker `w` starts its unit: its work (a run's own, or its cost) at the rate of now.
  void start_unit(std::uint32_t w, T now) {
    worker& k = pool_[w];
    const std::uint32_t u = k.unit;
    g_.each_member(u, [&](std::uint32_t x) { start_[x] = now; });
    k.running = true;
    k.since = now;
    k.left = !opt_.work.empty() && opt_.work[u] > T{0} ? opt_.work[u] : cost_of(g_, c_, u);
    ++running_;
    k.rate = rate_now();
    clock_.push({now + k.left / k.rate, unit_ends, w, ++k.version});
    rerate(now);
  }

  /// Worker `w`'s unit ends: its completion may give it the next unit of its stream at once, or
  /// one of another stream after the runtime's cost per unit.
  void end_unit(std::uint32_t w, T now) {
    worker& k = pool_[w];
    const std::uint32_t u = k.unit;
    k.running = false;
    --running_;
    finish_unit(u, now);
    ev_.finishing_queue = g_.queue_of(u);
    st_.complete_unit(u, ev_);
    ev_.finishing_queue = npos;
    const std::uint32_t next = std::exchange(ev_.follow_on, npos);
    const std::uint32_t h = std::exchange(ev_.handoff, npos);
    if (next != npos) {
      if (h != npos) ev_.waiting.push({ev_.unit_ready_at(h), h});
      assign(w, next, now);
    } else if (h != npos) {
      assign(w, h, now + opt_.dispatch_overhead);
    } else {
      take_waiting(w, now);
    }
    rerate(now);
    wake_idle();
  }

  const semantics& g_;
  const basic_cost_model<T>& c_;
  const basic_sim_options<T>& opt_;
  readiness<> st_;
  worker_events<T> ev_;
  buffer<T> start_;
  buffer<std::uint8_t> done_;
  std::uint32_t finished_ = 0;
  std::vector<worker> pool_;
  std::priority_queue<event, std::vector<event>, std::greater<>> clock_;
  unsigned running_ = 0, moving_ = 0;  ///< units of compute running, of communication in flight
};

}  // namespace detail

/// As `simulate` (the same options), with compute units competing for `workers` threads and,
/// given `opt.cores`, the threads for the cores. With `replicas` > 1 every rank runs `replicas`
/// times over (expert parallelism, as the executor runs it): the copies compete for the same
/// workers, a copy's transfers go to the same copy of the peer, and the copies of a collective
/// start together, when the last of them is ready. Returns copy 0's timeline; its makespan
/// covers every copy.
template <time_type T>
basic_timeline<T> simulate_on_workers(const program& p, const basic_cost_model<T>& c,
                                      unsigned workers, basic_sim_options<T> opt = {},
                                      int replicas = 1) {
  c.check_chunks(p.source.model);
  // Its workers and cores are the resources it shares; it has no rates for links or
  // interference between devices.
  if (c.contention.active())
    throw config_error(
        "simulate_on_workers: contention is not modelled on shared workers; "
        "clear the cost model's contention (or simulate with a device per rank)");
  for (const auto& [name, load] :
       {std::pair{"background_load", opt.background_load}, std::pair{"comm_load", opt.comm_load}})
    if (!(load >= 0) || load > 1e6)
      throw config_error(std::string("simulate_on_workers: ") + name +
                         " is a number of cores in [0, 1e6]");
  if (!(opt.co_run_slowdown >= 0) || opt.co_run_slowdown > max_co_run_slowdown)
    throw config_error("simulate_on_workers: co_run_slowdown is a fraction in [0, " +
                       std::to_string(static_cast<int>(max_co_run_slowdown)) + "]");
  const semantics g(p, {.replicas = replicas, .slot_barrier = opt.slot_barrier});
  if (!opt.work.empty() && opt.work.size() != g.ops())
    throw config_error("simulate_on_workers: work is given for " + std::to_string(opt.work.size()) +
                       " op copies; the program has " + std::to_string(g.ops()) + " (" +
                       std::to_string(p.size()) + " ops × " + std::to_string(replicas) +
                       " replicas)");
  return detail::worker_pool_run<T>(g, c, workers, opt).run();
}

}  // namespace weft
