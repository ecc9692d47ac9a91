// A stream program: a schedule as the streams of each rank issue it. Per rank and stream, the ops
// in issue order; per op, the events it waits for (its producers on other streams or ranks) and
// the op it completes with (a transfer's peer, FIFO-matched per channel, or the other half of an
// overlapped forward/backward pair). The checker's deadlock rule, both simulators and the
// executor read this one structure through semantics.hpp.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/core/time.hpp>
#include <weft/schedule/placement.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/violation.hpp>

namespace weft {

struct program {
  static constexpr std::uint32_t none = op_index::npos;

  schedule source;                   ///< the schedule, with the transfers it needs
  buffer<std::uint16_t> rank;        ///< per op
  buffer<std::uint8_t> stream;       ///< per op: `stream_index` on its rank
  buffer<std::uint32_t> slot;        ///< per op: slot on its rank
  buffer<std::uint32_t> wait_begin;  ///< per op, and one past: its range in `waits`
  buffer<std::uint32_t> waits;       ///< producers on other streams or ranks (op positions)
  /// The op that starts and ends together with this one, or `none`: a transfer's peer (FIFO
  /// matched per channel), or the other half of an overlapped whole-block forward/backward pair.
  buffer<std::uint32_t> partner;
  buffer<std::uint32_t> queue_begin;  ///< per (rank, stream), and one past: range in `queue`
  buffer<std::uint32_t> queue;        ///< op positions, per (rank, stream) in issue order

  constexpr std::size_t size() const noexcept { return source.ops.size(); }
  constexpr int ranks() const noexcept { return source.ranks(); }
  constexpr const op& at(std::uint32_t i) const noexcept { return source.ops[i]; }
  static constexpr std::uint32_t queue_of(int rank_, int stream_) noexcept {
    return static_cast<std::uint32_t>(rank_ * streams_per_rank + stream_);
  }
  constexpr std::uint32_t queue_of(std::uint32_t i) const noexcept {
    return queue_of(rank[i], stream[i]);
  }
};

/// When each op of a program ran, simulated or measured: what the simulators and the executor
/// produce alike, and what traces, pictures and metrics read.
template <time_type T>
struct basic_timeline {
  using duration = T;
  buffer<T> start, finish;  ///< per op of the program; negative if it never ran
  T makespan{0};
  /// On a deadlock, per rank the first op (in issue order) that never completed (`program::none`
  /// for a rank that finished), else empty.
  buffer<std::uint32_t> blocked;
  constexpr bool deadlocked() const noexcept { return !blocked.empty(); }
  constexpr bool ran(std::uint32_t i) const noexcept { return start[i] >= T{0}; }
  constexpr T duration_of(std::uint32_t i) const noexcept { return finish[i] - start[i]; }
};
/// Simulated in seconds, or measured.
using timeline = basic_timeline<seconds>;
/// Simulated from unit-free costs.
using unit_timeline = basic_timeline<units>;

/// True for an overlapped whole-block pair: a forward and a backward in one slot on two compute
/// lanes. They are one unit of work at the pair's cost (DualPipe's F&B): they start together on
/// one compute stream and finish together.
constexpr bool is_block_pair(const op& a, const op& b) noexcept {
  return a.k == kind::block && b.k == kind::block && (a.ph == phase::F) != (b.ph == phase::F);
}

/// The channel a transfer travels on: (sending rank, receiving rank). The k-th send on a channel
/// pairs with its k-th receive — in the checker, in lowering and in every comm backend.
struct channel {
  int from = 0, to = 0;
};

namespace detail {

constexpr channel channel_of(const placed& p, std::uint32_t i) noexcept {
  const op& o = p.s.ops[i];
  const int here = static_cast<int>(p.rank_of[i]);
  const int there = p.s.model.rank_of(p.ix.transfer_peer(o));
  return o.k == kind::send ? channel{here, there} : channel{there, here};
}

/// Pairs transfers FIFO per channel into `partner`. On a fault returns it with the op it is
/// about in `subject` (and the op it was paired with in `other`, for a mismatch).
struct transfer_fault {
  fault what = fault::none;
  std::uint32_t subject = op_index::npos, other = op_index::npos;
};
constexpr transfer_fault match_transfers(const placed& p, buffer<std::uint32_t>& partner) {
  const schedule& s = p.s;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  const auto R = static_cast<std::uint32_t>(s.ranks());
  const std::uint32_t C = R * R;
  const auto index = [&](std::uint32_t i) {
    const channel c = channel_of(p, i);
    return static_cast<std::uint32_t>(c.from) * R + static_cast<std::uint32_t>(c.to);
  };
  // Sends and receives per channel, in issue order (counting sort).
  buffer<std::uint32_t> begin_s(C + 1, 0), begin_r(C + 1, 0), list_s, list_r;
  for (std::uint32_t i = 0; i < n; ++i)
    if (is_p2p(s.ops[i].k)) ++(s.ops[i].k == kind::send ? begin_s : begin_r)[index(i) + 1];
  for (std::uint32_t c = 0; c < C; ++c) {
    begin_s[c + 1] += begin_s[c];
    begin_r[c + 1] += begin_r[c];
  }
  list_s.resize(begin_s[C]);
  list_r.resize(begin_r[C]);
  {
    buffer<std::uint32_t> fill_s = begin_s, fill_r = begin_r;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (!is_p2p(s.ops[i].k)) continue;
      if (s.ops[i].k == kind::send)
        list_s[fill_s[index(i)]++] = i;
      else
        list_r[fill_r[index(i)]++] = i;
    }
  }
  for (std::uint32_t c = 0; c < C; ++c) {
    const std::uint32_t ns = begin_s[c + 1] - begin_s[c], nr = begin_r[c + 1] - begin_r[c];
    for (std::uint32_t k = 0; k < ns || k < nr; ++k) {
      if (k >= nr) return {fault::unmatched_send, list_s[begin_s[c] + k]};
      if (k >= ns) return {fault::unmatched_recv, list_r[begin_r[c] + k]};
      const std::uint32_t i = list_s[begin_s[c] + k], j = list_r[begin_r[c] + k];
      const op& snd = s.ops[i];
      const op& rcv = s.ops[j];
      if (rcv.ph != snd.ph || rcv.mb != snd.mb ||
          rcv.chunk != static_cast<std::uint8_t>(p.ix.transfer_peer(snd)))
        return {fault::mismatched_transfer, i, j};
      partner[i] = j;
      partner[j] = i;
    }
  }
  return {};
}

/// The first half of building a stream program from a placed schedule (`pos`/`id` filled): where
/// each op runs and the waits — producers the stream order does not cover (a receive is fed by
/// its send, through the transfer). On the way it finds what the checker's rules 2 and 3 forbid:
/// `misplaced(i, j)` for a producer `j` on op `i`'s rank that does not sit in an earlier slot,
/// `absent(i, pid)` for a producer the schedule does not hold (a fragment's assumption). When
/// `misplaced` returns true the wait is kept: an unchecked program then waits for its producer
/// (and a run hangs there, named by its time-out) rather than reading what was never made.
template <class Misplaced, class Absent>
constexpr void place_and_wait(const placed& p, program& prog, Misplaced&& misplaced,
                              Absent&& absent) {
  const schedule& s = p.s;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  prog.rank.resize(n);
  prog.stream.resize(n);
  prog.slot.resize(n);
  prog.wait_begin.resize(n + 1);
  prog.waits.resize(n);  // grown as needed; most ops wait for at most one other stream
  std::uint16_t* rank = prog.rank.data();
  std::uint8_t* stream = prog.stream.data();
  std::uint32_t* slot = prog.slot.data();
  std::uint32_t* wait_begin = prog.wait_begin.data();
  const std::uint32_t* rank_of = p.rank_of.data();
  const std::uint32_t* slot_of = p.slot_of.data();
  const id_positions& pos = p.pos;
  const std::uint32_t* id = p.id.data();
  const op* ops = s.ops.data();
  for (std::uint32_t i = 0; i < n; ++i) {
    rank[i] = static_cast<std::uint16_t>(rank_of[i]);
    stream[i] = static_cast<std::uint8_t>(stream_index(stream_of(ops[i])));
    slot[i] = slot_of[i];
  }
  std::uint32_t w = 0;
  std::uint32_t* waits = prog.waits.data();
  const auto has = [&pos](std::uint32_t pid) { return pos[pid] != op_index::npos; };
  for (std::uint32_t i = 0; i < n; ++i) {
    wait_begin[i] = w;
    if (id[i] == op_index::npos) continue;  // outside the model: rule 1 has said so
    const bool fed_by_transfer = ops[i].k == kind::recv;
    p.rules.producers(ops[i], id[i], has, [&](std::uint32_t pid, int) {
      const std::uint32_t j = pos[pid];
      if (j == op_index::npos) return absent(i, pid);
      if (rank[j] == rank[i]) {
        if (slot[j] >= slot[i]) {
          if (!misplaced(i, j)) return;
        } else if (stream[j] == stream[i]) {
          return;
        }
      }
      if (fed_by_transfer) return;
      if (w == prog.waits.size()) {
        prog.waits.resize(2 * w);
        waits = prog.waits.data();
      }
      waits[w++] = j;
    });
  }
  wait_begin[n] = w;
  prog.waits.resize(w);
}

/// The second half: the schedule itself, partners (transfers paired in `partner`, and block
/// pairs) and the queues, by counting sort: issue order within each (rank, stream).
/// `with_source` false leaves `program::source` empty, for a caller that keeps the schedule at
/// hand (the checker; see `semantics`' second constructor).
constexpr void finish_program(const placed& p, program& prog, buffer<std::uint32_t> partner,
                              bool with_source = true) {
  const schedule& s = p.s;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  if (with_source) prog.source = s;
  const op* ops = s.ops.data();
  for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
    const std::uint32_t b = s.first_op(g), e = s.slot_end[g];
    for (std::uint32_t i = b; i < e; ++i)
      for (std::uint32_t j = i + 1; j < e; ++j)
        if (is_block_pair(ops[i], ops[j])) {
          partner[i] = j;
          partner[j] = i;
        }
  }
  prog.partner = static_cast<buffer<std::uint32_t>&&>(partner);
  const std::uint32_t Q = program::queue_of(s.ranks(), 0);
  prog.queue_begin.assign(Q + 1, 0);
  prog.queue.resize(n);
  std::uint32_t* qb = prog.queue_begin.data();
  const std::uint16_t* rank = prog.rank.data();
  const std::uint8_t* stream = prog.stream.data();
  for (std::uint32_t i = 0; i < n; ++i) ++qb[program::queue_of(rank[i], stream[i]) + 1];
  for (std::uint32_t q = 0; q < Q; ++q) qb[q + 1] += qb[q];
  buffer<std::uint32_t> fill = prog.queue_begin;
  std::uint32_t* f = fill.data();
  std::uint32_t* queue = prog.queue.data();
  for (std::uint32_t i = 0; i < n; ++i) queue[f[program::queue_of(rank[i], stream[i])]++] = i;
}

/// The stream program of a placed schedule (`pos`/`id` filled) whose transfers are paired in
/// `partner`.
constexpr program build_program(const placed& p, buffer<std::uint32_t> partner) {
  program prog;
  constexpr auto keep_wait = [](std::uint32_t, std::uint32_t) { return true; };
  constexpr auto ignore = [](std::uint32_t, std::uint32_t) {};
  place_and_wait(p, prog, keep_wait, ignore);
  finish_program(p, prog, static_cast<buffer<std::uint32_t>&&>(partner));
  return prog;
}

}  // namespace detail
}  // namespace weft
