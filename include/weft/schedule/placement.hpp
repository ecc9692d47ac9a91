// Where each op of a schedule sits (rank, stream) and which dense id it has: the facts the legality
// rules and the lowering to a stream program share, computed once per schedule.
#pragma once

#include <cstdint>

#include <weft/core/paged.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::detail {

/// Dense id -> position of the op in the schedule (`npos`: absent). A flat array when
/// the model's id space is within a small factor of the ops present (every generated or complete
/// schedule); otherwise an open-addressing table sized by the ops, so a ten-byte file declaring
/// 255 stages and 65535 micro-batches costs kilobytes, not the id space (docs/limits.md).
class id_positions {
 public:
  constexpr id_positions(std::uint32_t id_space, std::size_t ops) {
    if (id_space <= 16 * ops + 4096) {
      dense_ = true;
      slots_.assign_zeros(id_space);  // position + 1: allocated as zeros, not written
      return;
    }
    std::size_t cap = 16;
    while (cap < 2 * ops) cap *= 2;
    mask_ = static_cast<std::uint32_t>(cap - 1);
    keys_.assign(cap, npos);
    slots_.assign(cap, npos);
  }

  constexpr std::uint32_t operator[](std::uint32_t id) const noexcept {
    if (dense_) return slots_[id] - 1u;  // 0 - 1 wraps to npos: absent
    for (std::uint32_t h = hash(id);; h = (h + 1) & mask_) {
      if (keys_[h] == id) return slots_[h];
      if (keys_[h] == npos) return npos;
    }
  }
  constexpr void set(std::uint32_t id, std::uint32_t position) noexcept {
    if (dense_) {
      slots_[id] = position + 1u;
      return;
    }
    std::uint32_t h = hash(id);
    while (keys_[h] != npos && keys_[h] != id) h = (h + 1) & mask_;
    keys_[h] = id;
    slots_[h] = position;
  }
  /// How many entries it holds room for: the id space, or about twice the ops.
  constexpr std::size_t capacity() const noexcept { return slots_.size(); }
  /// The flat array's pages, position + 1 per id (0: absent), or null for the hashed table: for
  /// loops that constant evaluation runs per op, where a call costs more than the lookup.
  constexpr const paged<std::uint32_t>::page* dense() const noexcept {
    return dense_ ? slots_.pages() : nullptr;
  }
  constexpr paged<std::uint32_t>::page* dense() noexcept {
    return dense_ ? slots_.pages() : nullptr;
  }

 private:
  constexpr std::uint32_t hash(std::uint32_t id) const noexcept {
    return (id * 2654435761u) & mask_;  // Knuth's multiplicative hash; the table never fills
  }
  bool dense_ = false;
  std::uint32_t mask_ = 0;
  paged<std::uint32_t> keys_, slots_;
};

/// Per-op facts the rules and the lowering share, computed once. `pos` and `id` are filled by
/// the caller as it meets each op (the checker and `lower` both refuse duplicates); it writes
/// every op's `id` (npos for one it leaves out).
struct placed {
  const schedule& s;
  op_index ix;
  bool explicit_p2p = false;
  dependency_rules rules;
  /// Per op: its rank and its stream there (`stream_index`) — the stream program's own arrays,
  /// moved into it by `settle_program`.
  paged<std::uint16_t> rank;
  paged<std::uint8_t> stream;
  id_positions pos;         // dense id -> op position
  paged<std::uint32_t> id;  // op position -> dense id (npos if outside)

  constexpr placed(const schedule& sched, bool collectives, bool p2p)
      : s(sched),
        ix(sched.model, collectives),
        explicit_p2p(p2p),
        rules(ix, p2p),
        pos(ix.size, sched.ops.size()) {
    const auto n = sched.ops.size();
    rank.resize_for_overwrite(n);
    stream.resize_for_overwrite(n);
    id.resize_for_overwrite(n);
    constexpr std::uint32_t sh = paged<std::uint8_t>::page_shift,
                            m = paged<std::uint8_t>::page_mask;
    auto* r_of = rank.pages();
    auto* st = stream.pages();
    const op* ops = sched.ops.data();
    std::uint32_t i = 0;
    for (int r = 0; r < s.ranks(); ++r)
      for (const std::uint32_t e = s.end_slot(r) == 0 ? 0 : s.slot_end[s.end_slot(r) - 1]; i < e;
           ++i) {
        const op o = ops[i];  // one read of the op, its fields then read from the copy
        r_of[i >> sh].v[i & m] = static_cast<std::uint16_t>(r);
        st[i >> sh].v[i & m] =
            static_cast<std::uint8_t>(ix.stream_base[static_cast<int>(o.k)] + o.lane);
      }
  }
  constexpr std::uint32_t find(const op& o) const noexcept { return pos[ix.raw_id(o)]; }
  constexpr bool has(const op& o) const noexcept { return find(o) != npos; }
};

}  // namespace weft::detail
