// THE definition of when an op of a stream program may start and what completes with it. The
// checker's deadlock rule, the event simulator, the shared-worker simulator and the executor's
// runner all drive this component; none of them encodes these rules itself.
//
// - Ops are grouped into units that start together and finish together: an op alone; a
//   transfer's send and receive (paired FIFO per channel); an overlapped forward/backward pair
//   (one unit of work at the pair's cost on one compute stream); the copies of a collective on
//   the replicas of a rank (expert parallelism: an all-to-all starts when its last member is
//   there).
// - An op arrives when everything it waits for has completed: the op before it on its stream
//   (every stream is an in-order queue that runs an op only after the previous one completed,
//   communication streams included: a transfer blocks its stream until it is done), the events of
//   its producers on other streams and ranks, and with a slot barrier every op of the rank's
//   previous slot.
// - A unit is ready when all its members have arrived.
//
// A program run `replicas` times (each rank copied; copy r's transfers go to copy r of the peer)
// has op copies x = i + r * size(); with one replica an op copy is an op.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include <weft/core/buffer.hpp>
#include <weft/schedule/program.hpp>

namespace weft {

enum class unit_kind : std::uint8_t {
  solo,      ///< one op
  pair,      ///< an overlapped forward/backward pair: one unit of work on one compute stream
  transfer,  ///< a send and its receive, on two ranks
  meeting,   ///< a collective's copies on the replicas of a rank
};

struct semantics_options {
  int replicas = 1;
  /// Each rank starts a slot only when its previous slot has finished: the host waits for every
  /// step, as a framework without overlap does.
  bool slot_barrier = false;
};

class semantics {
 public:
  static constexpr std::uint32_t none = program::none;

  constexpr semantics(const program& p, semantics_options opt = {})
      : p_(p),
        n_(static_cast<std::uint32_t>(p.size())),
        reps_(static_cast<std::uint32_t>(opt.replicas > 1 ? opt.replicas : 1)) {
    build_units();
    build_edges(opt.slot_barrier);
  }

  constexpr const program& prog() const noexcept { return p_; }
  constexpr std::uint32_t ops() const noexcept { return n_ * reps_; }  ///< op copies
  constexpr std::uint32_t size() const noexcept { return n_; }         ///< ops of the program
  constexpr int replicas() const noexcept { return static_cast<int>(reps_); }
  constexpr std::uint32_t units() const noexcept {
    return static_cast<std::uint32_t>(kind_.size());
  }
  constexpr std::uint32_t op_of(std::uint32_t x) const noexcept { return x % n_; }
  constexpr int replica_of(std::uint32_t x) const noexcept { return static_cast<int>(x / n_); }
  constexpr std::uint32_t copy(std::uint32_t i, int replica) const noexcept {
    return i + static_cast<std::uint32_t>(replica) * n_;
  }
  /// The (rank, stream) queue of an op copy, numbered over replicas.
  constexpr std::uint32_t queue_of(std::uint32_t x) const noexcept {
    return x / n_ * queues() + p_.queue_of(x % n_);
  }
  constexpr std::uint32_t queues() const noexcept {
    return static_cast<std::uint32_t>(p_.queue_begin.size() - 1);
  }

  constexpr std::uint32_t unit_of(std::uint32_t x) const noexcept { return unit_of_[x]; }
  constexpr unit_kind kind_of(std::uint32_t u) const noexcept { return kind_[u]; }
  constexpr std::span<const std::uint32_t> members(std::uint32_t u) const noexcept {
    return {members_.data() + member_begin_[u], member_begin_[u + 1] - member_begin_[u]};
  }
  /// Does the unit need a compute worker for its whole duration? Then it runs as one piece of
  /// work once every member has arrived. Otherwise it communicates: it waits on a link, not on a
  /// core, and each member is started by itself on its own rank as soon as it has arrived (the
  /// communication backend makes a transfer's ends and a collective's copies meet).
  constexpr bool computes(std::uint32_t u) const noexcept {
    return stream_of(p_.at(op_of(members(u)[0])).k) == stream_class::compute;
  }

  /// What op copy `x` waits for: `fn(y, event)` per op copy whose completion it needs; `event`
  /// is false for the op before it on its stream (no event crosses streams there).
  template <class Fn>
  constexpr void each_wait(std::uint32_t x, Fn&& fn) const {
    for (std::uint32_t e = in_begin_[x]; e < in_begin_[x + 1]; ++e)
      fn(in_[e] & index_mask, (in_[e] & event_bit) != 0);
  }
  /// What op copy `x` releases when it completes: `fn(y, event)` per waiting op copy.
  template <class Fn>
  constexpr void each_release(std::uint32_t x, Fn&& fn) const {
    for (std::uint32_t e = out_begin_[x]; e < out_begin_[x + 1]; ++e)
      fn(out_[e] & index_mask, (out_[e] & event_bit) != 0);
  }
  constexpr std::uint32_t wait_count(std::uint32_t x) const noexcept {
    return in_begin_[x + 1] - in_begin_[x];
  }

 private:
  static constexpr std::uint32_t event_bit = 0x80000000u, index_mask = 0x7fffffffu;

  const program& p_;
  std::uint32_t n_, reps_;
  buffer<std::uint32_t> unit_of_, member_begin_, members_;
  buffer<unit_kind> kind_;
  buffer<std::uint32_t> in_begin_, in_, out_begin_, out_;

  constexpr void add_unit(unit_kind k, std::initializer_list<std::uint32_t> xs) {
    for (const std::uint32_t x : xs) add_member(x);
    close_unit(k);
  }
  constexpr void add_member(std::uint32_t x) {
    unit_of_[x] = static_cast<std::uint32_t>(kind_.size());
    members_.push_back(x);
  }
  constexpr void close_unit(unit_kind k) {
    kind_.push_back(k);
    member_begin_.push_back(static_cast<std::uint32_t>(members_.size()));
  }

  constexpr void build_units() {
    const std::uint32_t N = ops();
    unit_of_.assign(N, none);
    members_.reserve(N);
    kind_.reserve(N);
    member_begin_.reserve(N + 1);
    member_begin_.push_back(0);
    for (std::uint32_t r = 0; r < reps_; ++r)
      for (std::uint32_t i = 0; i < n_; ++i) {
        const std::uint32_t x = i + r * n_;
        if (unit_of_[x] != none) continue;
        const op& o = p_.at(i);
        const std::uint32_t j = p_.partner[i];
        if (j != none) {
          // The member on the lower stream leads: a pair runs on its forward's stream.
          const bool first = p_.stream[i] < p_.stream[j] || (p_.stream[i] == p_.stream[j] && i < j);
          const std::uint32_t a = (first ? i : j) + r * n_, b = (first ? j : i) + r * n_;
          add_unit(is_p2p(o.k) ? unit_kind::transfer : unit_kind::pair, {a, b});
        } else if (reps_ > 1 && stream_of(o.k) == stream_class::comm && !is_p2p(o.k)) {
          for (std::uint32_t c = 0; c < reps_; ++c) add_member(i + c * n_);
          close_unit(unit_kind::meeting);
        } else {
          add_unit(unit_kind::solo, {x});
        }
      }
  }

  // Every wait as an edge, walked twice: to count, then to fill both directions.
  template <class Fn>
  constexpr void each_edge(bool slot_barrier, Fn&& fn) const {
    const schedule& s = p_.source;
    for (std::uint32_t r = 0; r < reps_; ++r) {
      const std::uint32_t base = r * n_;
      for (std::uint32_t q = 0; q < queues(); ++q)
        for (std::uint32_t k = p_.queue_begin[q] + 1; k < p_.queue_begin[q + 1]; ++k)
          fn(p_.queue[k - 1] + base, p_.queue[k] + base, false);
      for (std::uint32_t i = 0; i < n_; ++i)
        for (std::uint32_t w = p_.wait_begin[i]; w < p_.wait_begin[i + 1]; ++w)
          fn(p_.waits[w] + base, i + base, true);
      if (!slot_barrier) continue;
      for (int rk = 0; rk < s.ranks(); ++rk) {
        std::uint32_t prev_b = 0, prev_e = 0;
        for (std::uint32_t g = s.first_slot(rk); g < s.end_slot(rk); ++g) {
          const std::uint32_t b = s.first_op(g), e = s.slot_end[g];
          if (b == e) continue;
          for (std::uint32_t i = b; i < e; ++i)
            for (std::uint32_t j = prev_b; j < prev_e; ++j) fn(j + base, i + base, true);
          prev_b = b;
          prev_e = e;
        }
      }
    }
  }

  constexpr void build_edges(bool slot_barrier) {
    const std::uint32_t N = ops();
    in_begin_.assign(N + 1, 0);
    out_begin_.assign(N + 1, 0);
    each_edge(slot_barrier, [&](std::uint32_t from, std::uint32_t to, bool) {
      ++in_begin_[to + 1];
      ++out_begin_[from + 1];
    });
    for (std::uint32_t x = 0; x < N; ++x) {
      in_begin_[x + 1] += in_begin_[x];
      out_begin_[x + 1] += out_begin_[x];
    }
    in_.resize(in_begin_[N]);
    out_.resize(out_begin_[N]);
    buffer<std::uint32_t> fill_in = in_begin_, fill_out = out_begin_;
    each_edge(slot_barrier, [&](std::uint32_t from, std::uint32_t to, bool event) {
      const std::uint32_t bit = event ? event_bit : 0u;
      in_[fill_in[to]++] = from | bit;
      out_[fill_out[from]++] = to | bit;
    });
  }
};

/// What a driver of `readiness` is told. Every member is optional.
struct readiness_events {
  /// `to` was waiting for `from`, which has just completed (called before `to` may arrive).
  constexpr void released(std::uint32_t /*from*/, std::uint32_t /*to*/, bool /*event*/) {}
  /// Everything op copy `x` waits for has completed.
  constexpr void arrived(std::uint32_t /*x*/) {}
  /// Every member of unit `u` has arrived: it may start.
  constexpr void ready(std::uint32_t /*u*/) {}
};

/// The state of one run through a program: how many waits each op copy still has, how many
/// members each unit still misses. `Counters` is an array of counters: plain integers for the
/// checker and the simulators, atomics for the runner, whose workers complete ops concurrently.
template <class Counters = buffer<std::uint32_t>>
class readiness {
 public:
  constexpr explicit readiness(const semantics& g) : g_(g), pending_(g.ops()), missing_(g.units()) {
    for (std::uint32_t x = 0; x < g.ops(); ++x) pending_[x] = g.wait_count(x);
    for (std::uint32_t u = 0; u < g.units(); ++u)
      missing_[u] = static_cast<std::uint32_t>(g.members(u).size());
  }

  constexpr const semantics& graph() const noexcept { return g_; }

  /// Announces every op copy that waits for nothing (and the units that are then ready).
  template <class Events>
  constexpr void begin(Events& ev) {
    for (std::uint32_t x = 0; x < g_.ops(); ++x)
      if (g_.wait_count(x) == 0) arrive(x, ev);
  }
  /// Op copy `x` has completed: release what waits for it.
  template <class Events>
  constexpr void complete(std::uint32_t x, Events& ev) {
    g_.each_release(x, [&](std::uint32_t y, bool event) {
      ev.released(x, y, event);
      if (--pending_[y] == 0) arrive(y, ev);
    });
  }
  /// Every member of unit `u` has completed.
  template <class Events>
  constexpr void complete_unit(std::uint32_t u, Events& ev) {
    for (const std::uint32_t x : g_.members(u)) complete(x, ev);
  }
  constexpr bool has_arrived(std::uint32_t x) const { return pending_[x] == 0; }

 private:
  const semantics& g_;
  Counters pending_, missing_;

  template <class Events>
  constexpr void arrive(std::uint32_t x, Events& ev) {
    ev.arrived(x);
    const std::uint32_t u = g_.unit_of(x);
    if (--missing_[u] == 0) ev.ready(u);
  }
};

/// After a run that could not finish (`completed` per op copy of replica 0): per rank, the first
/// op (in issue order) at the head of one of its streams — what that rank is stuck at — or
/// `none` for a rank that finished.
template <class Completed>
constexpr buffer<std::uint32_t> stuck_ops(const semantics& g, const Completed& completed) {
  const program& p = g.prog();
  buffer<std::uint32_t> out(static_cast<std::size_t>(p.ranks()), program::none);
  for (std::uint32_t q = 0; q < g.queues(); ++q)
    for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
      const std::uint32_t i = p.queue[k];
      if (completed[i]) continue;
      std::uint32_t& b = out[p.rank[i]];
      b = b < i ? b : i;
      break;
    }
  return out;
}

/// What a stuck op copy waits for: the first wait not completed, else a member of its unit that
/// has not arrived (a transfer's peer), else `none`.
template <class Completed, class Counters>
constexpr std::uint32_t waiting_for(const readiness<Counters>& st, const Completed& completed,
                                    std::uint32_t x) {
  const semantics& g = st.graph();
  std::uint32_t found = semantics::none;
  g.each_wait(x, [&](std::uint32_t y, bool) {
    if (found == semantics::none && !completed[y]) found = y;
  });
  if (found != semantics::none) return found;
  for (const std::uint32_t y : g.members(g.unit_of(x)))
    if (y != x && !st.has_arrived(y)) return y;
  return semantics::none;
}

}  // namespace weft
