// Where each op of a schedule sits (rank, slot) and which dense id it has: the facts the legality
// rules and the lowering to a stream program share, computed once per schedule.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::detail {

/// Per-op facts the rules and the lowering share, computed once. `pos`/`id` are filled by the
/// caller as it meets each op (the checker and `lower` both refuse duplicates).
struct placed {
  const schedule& s;
  op_index ix;
  bool explicit_p2p = false;
  dependency_rules rules;
  buffer<std::uint32_t> rank_of, slot_of;  // slot: counted from 0 on its rank
  buffer<std::uint32_t> pos;               // dense id -> op position
  buffer<std::uint32_t> id;                // op position -> dense id (npos if outside)

  constexpr placed(const schedule& sched, bool collectives, bool p2p)
      : s(sched),
        ix(sched.model, collectives),
        explicit_p2p(p2p),
        rules(ix, p2p),
        rank_of(sched.ops.size()),
        slot_of(sched.ops.size()),
        pos(ix.size, op_index::npos),
        id(sched.ops.size(), op_index::npos) {
    std::uint32_t g = 0, i = 0;
    for (int r = 0; r < s.ranks(); ++r)
      for (std::uint32_t local = 0; g < s.end_slot(r); ++g, ++local)
        for (; i < s.slot_end[g]; ++i) {
          rank_of[i] = static_cast<std::uint32_t>(r);
          slot_of[i] = local;
        }
  }
  constexpr std::uint32_t find(const op& o) const noexcept { return pos[ix.raw_id(o)]; }
  constexpr bool has(const op& o) const noexcept { return find(o) != op_index::npos; }
  /// Calls `fn(producer)` with each producer of op `i`, as an op value.
  template <class Fn>
  constexpr void producers(std::uint32_t i, Fn&& fn) const {
    rules.producers(
        s.ops[i], id[i], [this](std::uint32_t pid) { return pos[pid] != op_index::npos; },
        [&](std::uint32_t pid, int) { fn(ix.op_of(pid)); });
  }
  /// Calls `fn(j, pid)` with the position and dense id of each producer of op `i`; the position
  /// is `op_index::npos` for one the schedule does not hold.
  template <class Fn>
  constexpr void producer_positions(std::uint32_t i, Fn&& fn) const {
    rules.producers(
        s.ops[i], id[i], [this](std::uint32_t pid) { return pos[pid] != op_index::npos; },
        [&](std::uint32_t pid, int) { fn(pos[pid], pid); });
  }
};

}  // namespace weft::detail
