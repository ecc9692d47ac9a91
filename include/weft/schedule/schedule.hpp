// A schedule: per rank, an ordered list of slots; a slot issues ops at once on distinct streams.
// Stored flat (one op array, slot and rank boundaries) so graph work is plain loops over values.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include <weft/core/buffer.hpp>
#include <weft/core/op.hpp>
#include <weft/schedule/model.hpp>

namespace weft {

struct schedule {
  model_desc model;
  buffer<op> ops;                    ///< rank-major, then slot order, then issue order
  buffer<std::uint32_t> slot_end;    ///< one past the last op of each slot (all ranks)
  buffer<std::uint32_t> rank_begin;  ///< the first slot of each rank

  constexpr schedule() = default;
  constexpr explicit schedule(const model_desc& m) : model(m) {}

  constexpr int ranks() const noexcept { return static_cast<int>(rank_begin.size()); }
  constexpr std::uint32_t first_slot(int r) const noexcept {
    return rank_begin[static_cast<std::size_t>(r)];
  }
  /// One past the last slot of rank `r` (global slot numbering).
  constexpr std::uint32_t end_slot(int r) const noexcept {
    return r + 1 < ranks() ? rank_begin[static_cast<std::size_t>(r) + 1]
                           : static_cast<std::uint32_t>(slot_end.size());
  }
  constexpr int slots(int r) const noexcept {
    return static_cast<int>(end_slot(r) - first_slot(r));
  }
  constexpr std::uint32_t first_op(std::uint32_t global_slot) const noexcept {
    return global_slot == 0 ? 0 : slot_end[global_slot - 1];
  }
  /// Every op sits in a closed slot and the ranks' slots follow one another from the first: what
  /// `add_rank`, `push` and `close_slot` make once the last slot is closed. The checker and
  /// lowering refuse anything else (model_error::slots_malformed) before reading per-rank loops.
  constexpr bool well_formed() const noexcept {
    const std::size_t slots = slot_end.size();
    if (slots > 0 ? slot_end[slots - 1] != ops.size() : !ops.empty()) return false;
    if (rank_begin.empty()) return slots == 0;
    if (rank_begin[0] != 0) return false;
    for (std::size_t r = 1; r < rank_begin.size(); ++r)
      if (rank_begin[r] < rank_begin[r - 1]) return false;
    return rank_begin[rank_begin.size() - 1] <= slots;
  }
  /// The global slot holding op `i`, and the rank holding global slot `g`: binary searches, for
  /// reports rather than loops.
  constexpr std::uint32_t slot_holding(std::uint32_t i) const noexcept {
    std::uint32_t lo = 0, hi = static_cast<std::uint32_t>(slot_end.size());
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (slot_end[mid] > i)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
  constexpr int rank_holding(std::uint32_t g) const noexcept {
    std::uint32_t lo = 0, hi = static_cast<std::uint32_t>(rank_begin.size());
    while (lo < hi) {  // the first rank beginning after g; the one before holds it
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (rank_begin[mid] > g)
        hi = mid;
      else
        lo = mid + 1;
    }
    return static_cast<int>(lo) - 1;
  }
  /// The ops of slot `s` (counted from 0 on rank `r`).
  constexpr std::span<const op> slot(int r, int s) const noexcept {
    const std::uint32_t g = first_slot(r) + static_cast<std::uint32_t>(s);
    return {ops.data() + first_op(g), ops.data() + slot_end[g]};
  }
  /// All ops of rank `r`, in issue order.
  constexpr std::span<const op> rank_ops(int r) const noexcept {
    const std::uint32_t b = first_slot(r), e = end_slot(r);
    return {ops.data() + first_op(b), ops.data() + (e == 0 ? 0 : slot_end[e - 1])};
  }

  // Building: ranks, then their slots, are appended in order.
  constexpr void reserve(std::size_t n_ops, std::size_t n_slots) {
    ops.reserve(n_ops);
    slot_end.reserve(n_slots);
  }
  constexpr schedule& add_rank() {
    rank_begin.push_back(static_cast<std::uint32_t>(slot_end.size()));
    return *this;
  }
  /// Appends a slot holding `slot_ops`, issued together.
  constexpr schedule& add_slot(std::initializer_list<op> slot_ops) {
    for (const op& o : slot_ops) ops.push_back(o);
    return close_slot();
  }
  /// Appends a slot holding just `o` (the common case for generators).
  constexpr schedule& add_slot(const op& o) {
    ops.push_back(o);
    slot_end.push_back(static_cast<std::uint32_t>(ops.size()));
    return *this;
  }
  /// Appends `o` to the open slot of the last rank; `close_slot` ends the slot.
  constexpr schedule& push(const op& o) {
    ops.push_back(o);
    return *this;
  }
  constexpr schedule& close_slot() {
    slot_end.push_back(static_cast<std::uint32_t>(ops.size()));
    return *this;
  }
};

/// The smallest model a hand-written schedule can mean: one chunk per rank in loop placement,
/// as many micro-batches, layers, splits and chunks as its ops name, the sub-stages it uses.
constexpr model_desc infer_model(const schedule& s) noexcept {
  model_desc m;
  m.ranks = s.ranks() > 0 ? s.ranks() : 1;
  int max_chunk = 0, max_mb = 0, max_layer = 0, max_split = 0;
  stage_set used;
  for (const op& o : s.ops) {
    max_chunk = o.chunk > max_chunk ? o.chunk : max_chunk;
    max_mb = o.mb > max_mb ? o.mb : max_mb;
    max_layer = o.layer > max_layer ? o.layer : max_layer;
    max_split = o.split > max_split ? o.split : max_split;
    if (is_layer_stage(o.k)) used = used.with(o.k);
  }
  m.chunks_per_rank = (max_chunk + m.ranks) / m.ranks;
  m.micro = max_mb + 1;
  m.layers = max_layer + 1;
  m.splits = max_split + 1;
  m.stages = used.bits == 0 ? stage_set::whole_block() : used;
  if (m.stages.has(kind::dispatch) || m.stages.has(kind::combine))
    m.stages = m.stages.with(kind::mlp);
  if (!m.stages.has(kind::block)) m.stages = m.stages.with(kind::attn);
  return m;
}

}  // namespace weft
