// THE definition of when an op of a stream program may start and what completes with it. The
// event simulator, the shared-worker simulator and the executor's runner drive this component;
// none of them encodes these rules itself. The checker's deadlock rule evaluates the same rules
// on demand (`runs_to_completion`, which builds nothing per wait), and the agreement tests hold
// the two to the same verdict on legal and deadlocked programs of every generator.
//
// - Ops are grouped into units that start together and finish together: an op alone; a
//   transfer's send and receive (paired FIFO per channel); an overlapped forward/backward pair
//   (one unit of work at the pair's cost on one compute stream); the copies of a collective on
//   the replicas of a rank (expert parallelism: an all-to-all starts when its last member is
//   there).
// - An op arrives when everything it waits for has completed: the op before it on its stream
//   (every stream is an in-order queue that runs an op only after the previous one completed,
//   communication streams included: a transfer blocks its stream until it is done), the events of
//   its producers on other streams and ranks, with a slot barrier every op of the rank's
//   previous slot, and as model_desc::waits says: the transfers of its rank of its step's
//   direction issued since the previous step of that direction (`exchange`); for a transfer,
//   the compute its rank issued before it (`launch_ordered`); every transfer of the calls its
//   rank issued before it, and for a call's transfers the compute before them (`host`).
// - A unit is ready when all its members have arrived.
//
// A program run `replicas` times (each rank copied; copy r's transfers go to copy r of the peer)
// has op copies x = i + r * size(); with one replica an op copy is an op.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/core/paged.hpp>
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

namespace detail {

// Blocking calls: a slot of transfers is one call, its ops progressing together; the first op
// after the call (in issue order) on each other stream of its rank waits for each of them, and
// the streams' order makes every later op wait.
template <class Add>
constexpr void blocking_calls(const program& p, const schedule& s, Add& add) {
  const paged<std::uint8_t>& stream = p.stream;
  for (int rk = 0; rk < s.ranks(); ++rk) {
    std::uint32_t next[streams_per_rank];
    for (std::uint32_t& n : next) n = npos;
    for (std::uint32_t g = s.end_slot(rk); g-- > s.first_slot(rk);) {
      const std::uint32_t b = s.first_op(g), e = s.slot_end[g];
      for (std::uint32_t i = b; i < e; ++i)
        if (is_p2p(s.ops[i].k))
          for (int st = 0; st < streams_per_rank; ++st)
            if (st != stream[i] && next[st] != npos) add(i, next[st]);
      for (std::uint32_t i = e; i-- > b;) next[stream[i]] = i;
    }
  }
}

// A transfer launched from the compute stream: it starts after the last compute op its rank
// issued before it (the compute stream's order covers the earlier ones).
template <class Add>
constexpr void launched_after_compute(const schedule& s, Add& add) {
  for (int rk = 0; rk < s.ranks(); ++rk) {
    const std::uint32_t b = s.first_op(s.first_slot(rk));
    const std::uint32_t e = s.end_slot(rk) == 0 ? 0 : s.slot_end[s.end_slot(rk) - 1];
    std::uint32_t last = npos;
    for (std::uint32_t i = b; i < e; ++i) {
      const kind k = s.ops[i].k;
      if (is_p2p(k)) {
        if (last != npos) add(last, i);
      } else if (stream_of(k) == stream_class::compute) {
        last = i;
      }
    }
  }
}

// Megatron's wait() on a direction's handles (overlap_p2p_comm): before a step of one direction
// its rank waits for every transfer of that direction it issued since its previous step of that
// direction — the forward's send and the next forward's receive, the backward's likewise. The
// step's first op waits; the streams' order makes the rest wait.
template <class Add>
constexpr void exchanges(const schedule& s, Add& add) {
  const op* ops = s.ops.data();
  for (int rk = 0; rk < s.ranks(); ++rk) {
    const std::uint32_t b = s.first_op(s.first_slot(rk));
    const std::uint32_t e = s.end_slot(rk) == 0 ? 0 : s.slot_end[s.end_slot(rk) - 1];
    std::uint32_t since[2] = {b, b};  // per direction: where its unwaited transfers begin
    for (std::uint32_t i = b; i < e; ++i) {
      if (is_p2p(ops[i].k)) continue;
      const int d = ops[i].ph == phase::F ? 0 : 1;
      for (std::uint32_t y = since[d]; y < i; ++y)
        if (is_p2p(ops[y].k) && (ops[y].ph == phase::F ? 0 : 1) == d) add(y, i);
      since[d] = i + 1;
    }
  }
}

}  // namespace detail

/// The waits that come from how the host issues a program rather than from its data: what
/// model_desc::waits says a step waits for of the transfers before it, and with `slot_barrier`
/// every op of a rank's previous slot. Calls `add(from, to)` per wait (op positions).
template <class Add>
constexpr void each_issue_wait(const program& p, const schedule& s, bool slot_barrier, Add&& add) {
  switch (s.model.waits) {
    case transfer_wait::data:
      break;
    case transfer_wait::host:
      detail::blocking_calls(p, s, add);
      detail::launched_after_compute(s, add);
      break;
    case transfer_wait::exchange:
      detail::exchanges(s, add);
      break;
    case transfer_wait::launch_ordered:
      detail::launched_after_compute(s, add);
      break;
  }
  if (!slot_barrier) return;
  for (int rk = 0; rk < s.ranks(); ++rk) {
    std::uint32_t prev_b = 0, prev_e = 0;
    for (std::uint32_t g = s.first_slot(rk); g < s.end_slot(rk); ++g) {
      const std::uint32_t b = s.first_op(g), end = s.slot_end[g];
      if (b == end) continue;
      for (std::uint32_t i = b; i < end; ++i)
        for (std::uint32_t j = prev_b; j < prev_e; ++j) add(j, i);
      prev_b = b;
      prev_e = end;
    }
  }
}

class semantics {
 public:
  constexpr semantics(const program& p, semantics_options opt = {}) : semantics(p, p.source, opt) {}
  /// The semantics of a program built from `source` whose own `source` was left empty (the
  /// checker's, which has the schedule at hand and need not copy it).
  constexpr semantics(const program& p, const schedule& source, semantics_options opt = {})
      : p_(p),
        s_(source),
        n_(static_cast<std::uint32_t>(source.ops.size())),
        reps_(static_cast<std::uint32_t>(opt.replicas > 1 ? opt.replicas : 1)) {
    build_units();
    build_edges(opt.slot_barrier);
  }

  constexpr const program& prog() const noexcept { return p_; }
  constexpr int ranks() const noexcept { return s_.ranks(); }
  constexpr const model_desc& model() const noexcept { return s_.model; }
  /// The op an op copy is a copy of.
  constexpr const op& at(std::uint32_t x) const noexcept { return s_.ops[op_of(x)]; }
  constexpr std::uint32_t ops() const noexcept { return n_ * reps_; }  ///< op copies
  constexpr std::uint32_t size() const noexcept { return n_; }         ///< ops of the program
  constexpr int replicas() const noexcept { return static_cast<int>(reps_); }
  // (Copy 0 is the common case, and the only one without a replica: no division for it.)
  constexpr std::uint32_t op_of(std::uint32_t x) const noexcept { return x < n_ ? x : x % n_; }
  constexpr int replica_of(std::uint32_t x) const noexcept {
    return x < n_ ? 0 : static_cast<int>(x / n_);
  }
  constexpr std::uint32_t copy(std::uint32_t i, int replica) const noexcept {
    return i + static_cast<std::uint32_t>(replica) * n_;
  }
  /// The (rank, stream) queue of an op copy, numbered over replicas.
  constexpr std::uint32_t queue_of(std::uint32_t x) const noexcept {
    return x < n_ ? p_.queue_of(x) : x / n_ * queues() + p_.queue_of(x % n_);
  }
  constexpr std::uint32_t queues() const noexcept {
    return static_cast<std::uint32_t>(p_.queue_begin.size() - 1);
  }

  /// Units are named by their lead member: the op copy on the lower stream of a pair or
  /// transfer (a pair runs on its forward's stream), copy 0 of a collective.
  constexpr std::uint32_t unit_of(std::uint32_t x) const noexcept { return lead_[x]; }
  constexpr unit_kind kind_of(std::uint32_t u) const noexcept { return kind_[u]; }
  constexpr std::uint32_t member_count(std::uint32_t u) const noexcept {
    return kind_[u] == unit_kind::solo ? 1u : kind_[u] == unit_kind::meeting ? reps_ : 2u;
  }
  /// Calls `fn(x)` for every member of unit `u`, the lead first.
  template <class Fn>
  constexpr void each_member(std::uint32_t u, Fn&& fn) const {
    switch (kind_[u]) {
      case unit_kind::solo:
        return fn(u);
      case unit_kind::pair:
      case unit_kind::transfer:
        fn(u);
        return fn(u < n_ ? p_.partner[u] : u - u % n_ + p_.partner[u % n_]);
      case unit_kind::meeting:
        for (std::uint32_t r = 0; r < reps_; ++r) fn(u + r * n_);
        return;
    }
  }
  /// Does the unit need a compute worker for its whole duration? Then it runs as one piece of
  /// work once every member has arrived. Otherwise it communicates: it waits on a link, not on a
  /// core, and each member is started by itself on its own rank as soon as it has arrived (the
  /// communication backend makes a transfer's ends and a collective's copies meet).
  constexpr bool computes(std::uint32_t u) const noexcept {
    return stream_of(s_.ops[op_of(u)].k) == stream_class::compute;
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
  constexpr std::uint32_t release_count(std::uint32_t x) const noexcept {
    return out_begin_[x + 1] - out_begin_[x];
  }

 private:
  template <class>
  friend class readiness;
  static constexpr std::uint32_t event_bit = 0x80000000u, index_mask = 0x7fffffffu;

  const program& p_;
  const schedule& s_;
  std::uint32_t n_, reps_;
  buffer<std::uint32_t> lead_;  ///< per op copy: its unit's lead
  buffer<unit_kind> kind_;      ///< per lead: the unit's kind
  buffer<std::uint32_t> in_begin_, in_, out_begin_, out_;

  // References and pointers hoisted out of the loops: constant evaluation pays for every call.
  constexpr void build_units() {
    const std::uint32_t N = ops(), n = n_;
    lead_.resize(N);
    kind_.assign(N, unit_kind::solo);
    std::uint32_t* lead = lead_.data();
    unit_kind* kinds = kind_.data();
    const paged<std::uint32_t>& partner = p_.partner;
    const paged<std::uint8_t>& stream = p_.stream;
    const op* ops_ = s_.ops.data();
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t j = partner[i];
      std::uint32_t l = i;
      unit_kind k = unit_kind::solo;
      if (j != npos) {
        l = stream[j] < stream[i] || (stream[j] == stream[i] && j < i) ? j : i;
        k = is_p2p(ops_[i].k) ? unit_kind::transfer : unit_kind::pair;
      } else if (reps_ > 1 && stream_of(ops_[i].k) == stream_class::comm && !is_p2p(ops_[i].k)) {
        k = unit_kind::meeting;
      }
      for (std::uint32_t r = 0; r < reps_; ++r) {
        lead[i + r * n] = k == unit_kind::meeting ? i : l + r * n;
        if (lead[i + r * n] == i + r * n) kinds[i + r * n] = k;
      }
    }
  }

  // Every wait as an edge, in two passes over the same loops: count per op copy, then place each
  // edge at its op's cursor, the range's begin moving up (no copies of the offsets: constant
  // evaluation pays for every array it allocates).
  // Counts an edge (first pass) or places it at both ends' cursors (second pass).
  template <bool Fill>
  constexpr void add_edge(std::uint32_t from, std::uint32_t to, std::uint32_t bit) {
    if constexpr (Fill) {
      in_[in_begin_[to]++] = from | bit;
      out_[out_begin_[from]++] = to | bit;
    } else {
      ++in_begin_[to + 1];
      ++out_begin_[from + 1];
    }
  }
  template <bool Fill>
  constexpr void each_edge(bool slot_barrier) {
    const paged<std::uint32_t>& queue = p_.queue;
    const paged<std::uint32_t>& qb = p_.queue_begin;
    const paged<std::uint32_t>& wb = p_.wait_begin;
    const paged<std::uint32_t>& waits = p_.waits;
    const std::uint32_t Q = queues();
    for (std::uint32_t r = 0; r < reps_; ++r) {
      const std::uint32_t base = r * n_;
      for (std::uint32_t q = 0; q < Q; ++q)
        for (std::uint32_t k = qb[q] + 1; k < qb[q + 1]; ++k)
          add_edge<Fill>(queue[k - 1] + base, queue[k] + base, 0u);
      for (std::uint32_t i = 0; i < n_; ++i)
        for (std::uint32_t w = wb[i]; w < wb[i + 1]; ++w)
          add_edge<Fill>(waits[w] + base, i + base, event_bit);
      each_issue_wait(p_, s_, slot_barrier, [&](std::uint32_t from, std::uint32_t to) {
        add_edge<Fill>(from + base, to + base, event_bit);
      });
    }
  }

  constexpr void build_edges(bool slot_barrier) {
    const std::uint32_t N = ops();
    in_begin_.assign(N + 1, 0);
    out_begin_.assign(N + 1, 0);
    each_edge<false>(slot_barrier);
    std::uint32_t* ib = in_begin_.data();
    std::uint32_t* ob = out_begin_.data();
    for (std::uint32_t x = 0; x < N; ++x) {  // begins of the ranges: the fill's cursors
      ib[x + 1] += ib[x];
      ob[x + 1] += ob[x];
    }
    in_.resize(ib[N]);
    out_.resize(ob[N]);
    each_edge<true>(slot_barrier);
    // Each cursor now stands at its range's end, the next range's begin: shift back into place.
    for (std::uint32_t x = N; x > 0; --x) {
      ib[x] = ib[x - 1];
      ob[x] = ob[x - 1];
    }
    ib[0] = ob[0] = 0;
  }
};

/// What a driver of `readiness` is told. Every member is optional; `released` is called only
/// when `timed` is true (the simulators, which carry times along the waits).
struct readiness_events {
  static constexpr bool timed = false;
  /// `arrived` is called only when this is true (the runner, which starts comm ops by
  /// themselves).
  static constexpr bool announces_arrivals = false;
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
  constexpr explicit readiness(const semantics& g) : g_(g), pending_(g.ops()), missing_(g.ops()) {
    for (std::uint32_t x = 0; x < g.ops(); ++x) {
      set(pending_, x, g.wait_count(x));
      set(missing_, x, g.unit_of(x) == x ? g.member_count(x) : 0u);
    }
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
    const std::uint32_t* out = g_.out_.data();
    const std::uint32_t* lead = g_.lead_.data();
    const unit_kind* kind = g_.kind_.data();
    auto* pending = pending_.data();
    auto* missing = missing_.data();
    for (std::uint32_t e = g_.out_begin_[x], end = g_.out_begin_[x + 1]; e < end; ++e) {
      const std::uint32_t y = out[e] & semantics::index_mask;
      if constexpr (Events::timed) ev.released(x, y, (out[e] & semantics::event_bit) != 0);
      if (--pending[y] != 0) continue;
      // y arrives (written out here, not called: this loop runs once per wait of the program).
      if constexpr (Events::announces_arrivals) ev.arrived(y);
      // A unit of one member is ready as its member arrives: no counter to touch.
      const std::uint32_t u = lead[y];
      if (kind[u] == unit_kind::solo || --missing[u] == 0) ev.ready(u);
    }
  }
  /// Every member of unit `u` has completed.
  template <class Events>
  constexpr void complete_unit(std::uint32_t u, Events& ev) {
    if (g_.kind_[u] == unit_kind::solo) return complete(u, ev);
    g_.each_member(u, [&](std::uint32_t x) { complete(x, ev); });
  }
  constexpr bool has_arrived(std::uint32_t x) const { return pending_[x] == 0; }

 private:
  const semantics& g_;
  Counters pending_, missing_;

  // Atomic counters are set before any thread shares them: a plain store, not a fenced one
  // (`set_relaxed`; this header leaves <atomic> to the runner, which owns them).
  static constexpr void set(Counters& c, std::uint32_t x, std::uint32_t v) {
    if constexpr (requires { c.set_relaxed(x, v); })
      c.set_relaxed(x, v);
    else
      c[x] = v;
  }

  template <class Events>
  constexpr void arrive(std::uint32_t x, Events& ev) {
    if constexpr (Events::announces_arrivals) ev.arrived(x);
    const std::uint32_t u = g_.lead_[x];
    if (--missing_[u] == 0) ev.ready(u);
  }
};

/// Does every op of a program (one replica, no slot barrier) complete? The same readiness as
/// `readiness` over `semantics` — an op arrives when the op before it on its stream, its waits
/// and its issue waits have completed; a transfer or an overlapped pair starts once both members
/// have arrived — found on demand rather than by events, so that nothing is built per op or
/// wait: what a proof in constant evaluation can afford (docs/benchmarks.md). It reads the
/// program's ranks, streams, waits and partners (which may be empty: no transfers or pairs), not
/// its queues: a queue is its rank's ops of one stream in issue order, scanned.
///
/// Each queue in turn runs to its end; a queue whose next op needs an op of another queue has
/// that queue run until the op has completed (or, for a transfer's or pair's other member,
/// arrived), and so on. Needing an op of a queue that is
/// already waiting further down is a cycle of the happens-before graph: a deadlock.
///
/// One function: it is the proof's inner loop in constant evaluation, where g++ charges a call
/// about 1–2 µs, as much as a loop iteration, and an array member of a local struct nearly
/// nothing (docs/benchmarks.md, what the evaluator charges); its state (the frames, each
/// queue's scan head, the done marks) stays locals its loops read directly, with no call per op
/// or wait.
constexpr bool runs_to_completion(const program& p, const schedule& s) {
  static_assert(streams_per_rank <= 32, "a rank's streams are bits of one word below");
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  // The issue waits (none for model_desc::waits == data), by the op that waits.
  buffer<std::uint32_t> issue_begin, issue;
  const bool issued = s.model.waits != transfer_wait::data;
  if (issued) {
    issue_begin.assign(n + 1, 0);
    std::uint32_t* ib = issue_begin.data();
    each_issue_wait(p, s, false, [ib](std::uint32_t, std::uint32_t to) { ++ib[to + 1]; });
    for (std::uint32_t i = 0; i < n; ++i) ib[i + 1] += ib[i];
    issue.resize_for_overwrite(ib[n]);
    std::uint32_t* in = issue.data();
    each_issue_wait(p, s, false,
                    [ib, in](std::uint32_t from, std::uint32_t to) { in[ib[to]++] = from; });
    for (std::uint32_t i = n; i > 0; --i) ib[i] = ib[i - 1];
    ib[0] = 0;
  }
  constexpr auto S = static_cast<std::uint32_t>(streams_per_rank);
  // The program's arrays read as pages (paged.hpp): constant evaluation runs this per op.
  constexpr std::uint32_t sh = paged<std::uint32_t>::page_shift,
                          m = paged<std::uint32_t>::page_mask;
  const auto R = static_cast<std::uint32_t>(s.ranks());
  const auto* stream = p.stream.pages();
  const auto* rank = p.rank.pages();
  const auto* wb = p.wait_begin.pages();
  const auto* waits = p.waits.pages();
  const auto* partner = p.partner.empty() ? nullptr : p.partner.pages();
  const std::uint32_t* ib = issue_begin.data();
  const std::uint32_t* in = issue.data();
  // Per rank, one past its last op; per queue (rank, stream), where its scan stands: every op of
  // the queue before it has completed, and none after it has.
  paged<std::uint32_t> rank_ends, heads;
  rank_ends.resize_for_overwrite(R);
  heads.resize_for_overwrite(R * S);
  auto* rank_end_pages = rank_ends.pages();
  auto* head_pages = heads.pages();
  for (std::uint32_t r = 0, b = 0; r < R; ++r) {
    const std::uint32_t e = s.end_slot(static_cast<int>(r));
    b = rank_end_pages[r >> sh].v[r & m] = e == 0 ? b : s.slot_end[e - 1];
  }
  for (std::uint32_t q = 0; q < R * S; ++q) {
    const std::uint32_t r = q / S;
    head_pages[q >> sh].v[q & m] = r == 0 ? 0 : rank_end_pages[(r - 1) >> sh].v[(r - 1) & m];
  }
  const auto queue_of = [rank, stream](std::uint32_t x) {
    return static_cast<std::uint32_t>(rank[x >> sh].v[x & m]) * S + stream[x >> sh].v[x & m];
  };
  const auto done = [&](std::uint32_t y) {
    const std::uint32_t q = queue_of(y);
    return y < head_pages[q >> sh].v[q & m];
  };
  // The first issue wait of x (the first wait of any kind, for waits_done) not completed, or npos.
  const auto issue_waits_done = [&](std::uint32_t x) {
    if (issued)
      for (std::uint32_t w = ib[x], e = ib[x + 1]; w < e; ++w)
        if (!done(in[w])) return in[w];
    return npos;
  };
  const auto waits_done = [&](std::uint32_t x) {
    for (std::uint32_t w = wb[x >> sh].v[x & m], e = wb[(x + 1) >> sh].v[(x + 1) & m]; w < e; ++w)
      if (const std::uint32_t y = waits[w >> sh].v[w & m]; !done(y)) return y;
    return issue_waits_done(x);
  };
  // The queues being run, each until its target has completed (need 2) or arrived (need 1); a
  // queue appears at most once.
  struct frame {
    std::uint32_t queue, target;
    std::uint8_t need;
  };
  buffer<frame> frames;
  frames.resize_for_overwrite(R * S);
  frame* stack = frames.data();
  buffer<std::uint8_t> driven(R * S, 0);
  std::uint8_t* on_stack = driven.data();
  // Each rank's queues in turn, each run to its end (a stream's first op names it); `ran` holds
  // the rank's streams already run.
  for (std::uint32_t r = 0, x0 = 0; r < R; ++r) {
    std::uint32_t ran = 0;
    for (const std::uint32_t end = rank_end_pages[r >> sh].v[r & m]; x0 < end; ++x0) {
      const std::uint32_t bit = 1u << stream[x0 >> sh].v[x0 & m];
      if (ran & bit) continue;
      ran |= bit;
      std::uint32_t depth = 1;
      stack[0] = {r * S + stream[x0 >> sh].v[x0 & m], npos, 2};
      on_stack[stack[0].queue] = 1;
      while (depth > 0) {
        const frame f = stack[depth - 1];
        const std::uint32_t own = f.queue % S, rk = f.queue / S,
                            end = rank_end_pages[rk >> sh].v[rk & m],
                            begin = rk == 0 ? 0 : rank_end_pages[(rk - 1) >> sh].v[(rk - 1) & m];
        std::uint32_t k = head_pages[f.queue >> sh].v[f.queue & m], blocker = npos;
        std::uint8_t need = 2;
        for (; k < end && (f.need == 1 || k <= f.target); ++k) {
          if (stream[k >> sh].v[k & m] != own) continue;  // another queue's op
          // Its waits, written out (this runs per op): each one's queue must have passed it.
          for (std::uint32_t w = wb[k >> sh].v[k & m], e = wb[(k + 1) >> sh].v[(k + 1) & m];
               blocker == npos && w < e; ++w) {
            const std::uint32_t y = waits[w >> sh].v[w & m];
            const std::uint32_t ry = y >= begin && y < end ? rk : rank[y >> sh].v[y & m];
            const std::uint32_t qy = ry * S + stream[y >> sh].v[y & m];
            if (qy == f.queue ? y >= k : y >= head_pages[qy >> sh].v[qy & m]) blocker = y;
          }
          if (issued && blocker == npos) {
            head_pages[f.queue >> sh].v[f.queue & m] = k;  // what the issue waits read
            blocker = issue_waits_done(k);
          }
          if (blocker != npos) break;
          if (partner == nullptr || partner[k >> sh].v[k & m] == npos) continue;  // k completes
          if (f.need == 1 && k == f.target) break;       // arrived: the frame below completes both
          head_pages[f.queue >> sh].v[f.queue & m] = k;  // what the other member's waits may read
          const std::uint32_t y = partner[k >> sh].v[k & m], qy = queue_of(y);
          if (head_pages[qy >> sh].v[qy & m] != y ||
              waits_done(y) != npos) {  // the other member has not arrived
            blocker = y;
            need = 1;
            break;
          }
          head_pages[qy >> sh].v[qy & m] = y + 1;  // both complete
        }
        head_pages[f.queue >> sh].v[f.queue & m] = k;
        if (blocker == npos) {  // the target reached (or the queue's end)
          on_stack[f.queue] = 0;
          --depth;
          continue;
        }
        const std::uint32_t q = queue_of(blocker);
        if (on_stack[q]) return false;
        on_stack[q] = 1;
        stack[depth++] = {q, blocker, need};
      }
    }
  }
  return true;
}

/// After a run that could not finish (`completed` per op copy of replica 0): per rank, the first
/// op (in issue order) at the head of one of its streams — what that rank is stuck at — or
/// `npos` for a rank that finished.
template <class Completed>
constexpr buffer<std::uint32_t> stuck_ops(const semantics& g, const Completed& completed) {
  const program& p = g.prog();
  buffer<std::uint32_t> out(static_cast<std::size_t>(g.ranks()), npos);
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
/// has not arrived (a transfer's peer), else `npos`.
template <class Completed, class Counters>
constexpr std::uint32_t waiting_for(const readiness<Counters>& st, const Completed& completed,
                                    std::uint32_t x) {
  const semantics& g = st.graph();
  std::uint32_t found = npos;
  g.each_wait(x, [&](std::uint32_t y, bool) {
    if (found == npos && !completed[y]) found = y;
  });
  if (found != npos) return found;
  g.each_member(g.unit_of(x), [&](std::uint32_t y) {
    if (found == npos && y != x && !st.has_arrived(y)) found = y;
  });
  return found;
}

}  // namespace weft
