// Lowering a schedule to a stream program: per rank, per stream, the ops in issue order, each
// with the events it waits for (its producers on other streams or ranks) and, for a transfer, the
// peer it completes with. The simulator and the executor both interpret this program: one
// lowering, two interpreters, and the dependency rules stay in dependencies.hpp.
#pragma once

#include <cstdint>
#include <string>

#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/io/format.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/schedules/transfers.hpp>

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
  /// matched), or the other half of an overlapped whole-block forward/backward pair.
  buffer<std::uint32_t> partner;
  buffer<std::uint32_t> queue_begin;  ///< per (rank, stream), and one past: range in `queue`
  buffer<std::uint32_t> queue;        ///< op positions, per (rank, stream) in issue order

  constexpr std::size_t size() const noexcept { return source.ops.size(); }
  constexpr int ranks() const noexcept { return source.ranks(); }
  constexpr const op& at(std::uint32_t i) const noexcept { return source.ops[i]; }
  static constexpr std::uint32_t queue_of(int rank_, int stream_) noexcept {
    return static_cast<std::uint32_t>(rank_ * streams_per_rank + stream_);
  }
};

/// True for an overlapped whole-block pair: a forward and a backward in one slot on two compute
/// lanes. They run as one unit whose cost is the pair's (DualPipe's F&B).
constexpr bool is_block_pair(const op& a, const op& b) noexcept {
  return a.k == kind::block && b.k == kind::block && (a.ph == phase::F) != (b.ph == phase::F);
}

/// Lowers a legal schedule. A schedule whose micro-batches cross ranks without explicit
/// transfers gets them first (`with_transfers`). Throws `config_error` with the checker's first
/// violation when the schedule is not legal: an illegal schedule has no program.
constexpr program lower(const schedule& input) {
  bool p2p = false, collectives = false;
  for (const op& o : input.ops) {
    p2p = p2p || is_p2p(o.k);
    collectives = collectives || is_collective(o.k);
  }
  {
    const report r = check(input);
    if (!r.ok())
      throw config_error("weft: lower: the schedule is not legal: " + to_string(r.violations[0]));
  }
  program prog;
  bool crosses = false;
  if (!p2p) {
    const op_index ix(input.model, false);
    for (int mbi = 0; mbi < input.model.micro && !crosses; ++mbi)
      for (int c = input.model.first_chunk(mbi); c < input.model.end_chunk(mbi); ++c)
        crosses = crosses || ix.crosses_ranks(c, ix.next_chunk(mbi, c));
  }
  prog.source = crosses ? with_transfers(input) : input;
  const schedule& s = prog.source;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  detail::placed p(s, collectives, p2p || crosses);

  prog.rank.resize(n);
  prog.stream.resize(n);
  prog.slot.resize(n);
  prog.partner.assign(n, program::none);
  for (std::uint32_t i = 0; i < n; ++i) {
    prog.rank[i] = static_cast<std::uint16_t>(p.rank_of[i]);
    prog.stream[i] = static_cast<std::uint8_t>(stream_index(stream_of(s.ops[i])));
    prog.slot[i] = p.slot_of[i];
    p.id[i] = p.ix.raw_id(s.ops[i]);
    p.pos[p.id[i]] = i;
  }
  const auto find = [&](const op& o) { return p.find(o); };

  // Partners: a legal schedule's FIFO matching pairs each send with the receive of its payload.
  for (std::uint32_t i = 0; i < n; ++i) {
    const op& o = s.ops[i];
    if (o.k != kind::send) continue;
    const int peer = p.ix.transfer_peer(o);
    const std::uint32_t j = find(make_op(kind::recv, o.ph, o.mb, peer));
    prog.partner[i] = j;
    prog.partner[j] = i;
  }
  for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
    const std::uint32_t b = s.first_op(g), e = s.slot_end[g];
    for (std::uint32_t i = b; i < e; ++i)
      for (std::uint32_t j = i + 1; j < e; ++j)
        if (is_block_pair(s.ops[i], s.ops[j])) {
          prog.partner[i] = j;
          prog.partner[j] = i;
        }
  }

  // Waits: producers on another stream or rank (the stream order covers the rest).
  prog.wait_begin.assign(n + 1, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    prog.wait_begin[i] = static_cast<std::uint32_t>(prog.waits.size());
    if (is_p2p(s.ops[i].k) && s.ops[i].k == kind::recv) continue;  // fed by its send
    p.producers(i, [&](const op& need) {
      const std::uint32_t j = find(need);
      if (j == program::none) return;
      if (prog.rank[j] == prog.rank[i] && prog.stream[j] == prog.stream[i]) return;
      prog.waits.push_back(j);
    });
  }
  prog.wait_begin[n] = static_cast<std::uint32_t>(prog.waits.size());

  // Queues, by counting sort: issue order within each (rank, stream).
  const std::uint32_t Q = program::queue_of(s.ranks(), 0);
  prog.queue_begin.assign(Q + 1, 0);
  for (std::uint32_t i = 0; i < n; ++i)
    ++prog.queue_begin[program::queue_of(prog.rank[i], prog.stream[i]) + 1];
  for (std::uint32_t q = 0; q < Q; ++q) prog.queue_begin[q + 1] += prog.queue_begin[q];
  prog.queue.resize(n);
  buffer<std::uint32_t> fill = prog.queue_begin;
  for (std::uint32_t i = 0; i < n; ++i)
    prog.queue[fill[program::queue_of(prog.rank[i], prog.stream[i])]++] = i;
  return prog;
}

}  // namespace weft
