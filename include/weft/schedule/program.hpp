// A stream program: a schedule as the streams of each rank issue it. Per rank and stream, the ops
// in issue order; per op, the events it waits for (its producers on other streams or ranks) and
// the op it completes with (a transfer's peer, FIFO-matched per channel, or the other half of an
// overlapped forward/backward pair). The checker's deadlock rule, both simulators and the
// executor read this one structure through semantics.hpp.
#pragma once

#include <cstdint>

#include <weft/core/paged.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft {

/// Its per-op arrays are `paged`: the checker builds and reads them in constant evaluation. A
/// lowered program has every field; the checker's own, until a deadlock is to be reported
/// (`add_queues`), has no slots or queues, and no partners when nothing pairs.
struct program {
  schedule source;                  ///< the schedule, with the transfers it needs
  paged<std::uint16_t> rank;        ///< per op
  paged<std::uint8_t> stream;       ///< per op: `stream_index` on its rank
  paged<std::uint32_t> slot;        ///< per op: slot on its rank
  paged<std::uint32_t> wait_begin;  ///< per op, and one past: its range in `waits`
  paged<std::uint32_t> waits;       ///< producers on other streams or ranks (op positions)
  /// The op that starts and ends together with this one, or `none`: a transfer's peer (FIFO
  /// matched per channel), or the other half of an overlapped whole-block forward/backward pair.
  paged<std::uint32_t> partner;
  paged<std::uint32_t> queue_begin;  ///< per (rank, stream), and one past: range in `queue`
  paged<std::uint32_t> queue;        ///< op positions, per (rank, stream) in issue order

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

/// True for an overlapped whole-block pair: a forward and a backward in one slot on two compute
/// lanes. They are one unit of work at the pair's cost (DualPipe's F&B): they start together on
/// one compute stream and finish together.
constexpr bool is_block_pair(const op& a, const op& b) noexcept {
  return a.k == kind::block && b.k == kind::block && (a.ph == phase::F) != (b.ph == phase::F);
}

}  // namespace weft
