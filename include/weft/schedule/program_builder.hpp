// Building a stream program from a placed schedule: transfers paired FIFO per channel, each op's
// stream and waits, the queues. Lowering (lower.hpp) and the checker (verify.hpp) share it, so a
// program and a proof see the same waits.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/placement.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/violation.hpp>

namespace weft {

/// The channel a transfer travels on: (sending rank, receiving rank). The k-th send on a channel
/// pairs with its k-th receive — in the checker, in lowering and in every comm backend.
struct channel {
  int from = 0, to = 0;
};

namespace detail {

constexpr channel channel_of(const placed& p, std::uint32_t i) noexcept {
  const op& o = p.s.ops[i];
  const int here = static_cast<int>(p.rank[i]);
  const int there = p.s.model.rank_of(p.ix.transfer_peer(o));
  return o.k == kind::send ? channel{here, there} : channel{there, here};
}

/// Pairs transfers FIFO per channel into `partner`. On a fault returns it with the op it is
/// about in `subject` (and the op it was paired with in `other`, for a mismatch).
struct transfer_fault {
  fault what = fault::none;
  std::uint32_t subject = npos, other = npos;
};
constexpr transfer_fault match_transfers(const placed& p, paged<std::uint32_t>& partner) {
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

/// The first half of building a stream program from a placed schedule (`pos`/`id` filled): the
/// waits — producers the stream order does not cover (a receive is fed by its send, through the
/// transfer). On the way it finds what the checker's rules 2 and 3 forbid:
/// `misplaced(i, j)` for a producer `j` on op `i`'s rank that does not sit in an earlier slot,
/// `absent(i, pid)` for a producer the schedule does not hold (a fragment's assumption). When
/// `misplaced` returns true the wait is kept: an unchecked program then waits for its producer
/// (and a run hangs there, named by its time-out) rather than reading what was never made.
template <class Misplaced, class Absent>
constexpr void place_and_wait(const placed& p, program& prog, Misplaced&& misplaced,
                              Absent&& absent) {
  // The per-op arrays are read as pages (paged.hpp): constant evaluation runs this per op.
  constexpr std::uint32_t sh = paged<std::uint32_t>::page_shift,
                          m = paged<std::uint32_t>::page_mask;
  const schedule& s = p.s;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  prog.wait_begin.resize_for_overwrite(n + 1);
  prog.waits.resize_for_overwrite(n);  // grown as needed; most ops wait for at most one other
  auto* wait_begin = prog.wait_begin.pages();
  auto* waits = prog.waits.pages();
  const auto* stream = p.stream.pages();
  const auto* id = p.id.pages();
  const op* ops = s.ops.data();
  const id_positions& pos = p.pos;
  const auto* dense = pos.dense();  // position + 1, read without a call when flat
  const auto has = [dense, &pos](std::uint32_t pid) {
    return dense ? dense[pid >> sh].v[pid & m] != 0 : pos[pid] != npos;
  };
  std::uint32_t w = 0, i = 0, room = n;
  // Ops are rank-major, then slot-major: a producer on op i's rank sits in [rank_b, rank_e), in
  // an earlier slot below slot_b.
  for (int r = 0; r < s.ranks(); ++r) {
    const std::uint32_t rank_b = i, end_slot = s.end_slot(r);
    const std::uint32_t rank_e = end_slot == 0 ? 0 : s.slot_end[end_slot - 1];
    for (std::uint32_t g = s.first_slot(r); g < end_slot; ++g) {
      const std::uint32_t slot_b = i;
      for (const std::uint32_t slot_e = s.slot_end[g]; i < slot_e; ++i) {
        wait_begin[i >> sh].v[i & m] = w;
        const std::uint32_t own = id[i >> sh].v[i & m];
        if (own == npos) continue;  // outside the model: rule 1 has said so
        const std::uint8_t stream_i = stream[i >> sh].v[i & m];
        const op o = ops[i];  // one read of the op; the rules read its fields from the copy
        p.rules.producers(o, own, has, [&](std::uint32_t pid, int) {
          const std::uint32_t j = dense ? dense[pid >> sh].v[pid & m] - 1u : pos[pid];
          if (j == npos) return absent(i, pid);
          if (j >= rank_b && j < rank_e) {
            if (j >= slot_b) {
              if (!misplaced(i, j)) return;
            } else if (stream[j >> sh].v[j & m] == stream_i) {
              return;  // the stream's order covers it
            }
          }
          if (w == room) {
            room = 2 * w;
            prog.waits.resize_for_overwrite(room);
            waits = prog.waits.pages();
          }
          waits[w >> sh].v[w & m] = j;
          ++w;
        });
      }
    }
  }
  wait_begin[n >> sh].v[n & m] = w;
  prog.waits.resize(w);
}

/// Pairs the overlapped whole-block forward/backward ops of each slot (`is_block_pair`) in
/// `partner`, sizing it (npos) if it is empty when the first pair is found.
constexpr void pair_blocks(const schedule& s, paged<std::uint32_t>& partner) {
  const op* ops = s.ops.data();
  const std::uint32_t* slot_end = s.slot_end.data();
  for (std::uint32_t g = 0, b = 0, slots = static_cast<std::uint32_t>(s.slot_end.size()); g < slots;
       ++g) {
    const std::uint32_t e = slot_end[g];
    for (std::uint32_t i = b; i + 1 < e; ++i)
      for (std::uint32_t j = i + 1; j < e; ++j)
        if (is_block_pair(ops[i], ops[j])) {
          if (partner.empty()) partner.assign(s.ops.size(), npos);
          partner[i] = j;
          partner[j] = i;
        }
    b = e;
  }
}

/// The second half, in two steps. First what the semantics needs to run a program
/// (`runs_to_completion`): the placement's ranks and streams (moved), partners (transfers paired
/// in `partner`, which may be empty when the schedule has no transfers, and block pairs) and,
/// with `with_source`, the schedule itself (the checker keeps its own at hand; see `semantics`'
/// second constructor).
constexpr void settle_program(placed& p, program& prog, paged<std::uint32_t> partner,
                              bool with_source) {
  if (with_source) prog.source = p.s;
  prog.rank = static_cast<paged<std::uint16_t>&&>(p.rank);
  prog.stream = static_cast<paged<std::uint8_t>&&>(p.stream);
  pair_blocks(p.s, partner);
  prog.partner = static_cast<paged<std::uint32_t>&&>(partner);
}

/// Then the rest: a partner for every op (npos), each op's slot on its rank, and the queues, by
/// counting sort: issue order within each (rank, stream).
constexpr void add_queues(program& prog, const schedule& s) {
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  if (prog.partner.empty()) prog.partner.assign(n, npos);
  prog.slot.resize_for_overwrite(n);
  std::uint32_t i = 0, g = 0;
  for (int r = 0; r < s.ranks(); ++r)
    for (std::uint32_t local = 0, end = s.end_slot(r); g < end; ++g, ++local)
      for (const std::uint32_t e = s.slot_end[g]; i < e; ++i) prog.slot[i] = local;
  const std::uint32_t Q = program::queue_of(s.ranks(), 0);
  prog.queue_begin.assign(Q + 1, 0);
  prog.queue.resize_for_overwrite(n);
  paged<std::uint32_t>& qb = prog.queue_begin;
  for (i = 0; i < n; ++i) ++qb[prog.queue_of(i) + 1];
  for (std::uint32_t q = 0; q < Q; ++q) qb[q + 1] += qb[q];
  paged<std::uint32_t> fill = qb;
  for (i = 0; i < n; ++i) prog.queue[fill[prog.queue_of(i)]++] = i;
}

/// Both steps.
constexpr void finish_program(placed& p, program& prog, paged<std::uint32_t> partner,
                              bool with_source = true) {
  settle_program(p, prog, static_cast<paged<std::uint32_t>&&>(partner), with_source);
  add_queues(prog, p.s);
}

/// The stream program of a placed schedule (`pos`/`id` filled) whose transfers are paired in
/// `partner`.
constexpr program build_program(placed& p, paged<std::uint32_t> partner) {
  program prog;
  constexpr auto keep_wait = [](std::uint32_t, std::uint32_t) { return true; };
  constexpr auto ignore = [](std::uint32_t, std::uint32_t) {};
  place_and_wait(p, prog, keep_wait, ignore);
  finish_program(p, prog, static_cast<paged<std::uint32_t>&&>(partner));
  return prog;
}

}  // namespace detail
}  // namespace weft
