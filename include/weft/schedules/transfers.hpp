// Lowering a compute schedule to compute + transfers: the send/recv ops a pipeline needs where a
// micro-batch crosses ranks, placed the way PyTorch's pipelining runtime places them, so that
// every channel's sends and receives come in the same order and nothing waits forever.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedules/stage_ops.hpp>

namespace weft {

/// Which comm streams a pipeline's transfers use.
enum class p2p_lanes : std::uint8_t {
  /// Sends on `gen::send_lane`, receives on a lane per neighbour (PyTorch's communicator per
  /// peer): a send never queues behind a receive, nor one neighbour's data behind the other's.
  per_peer,
  /// Every send and receive on one stream (Megatron's default p2p): each waits for the one
  /// before it, so a blocked send holds back the receive after it.
  single,
  /// Ping/pong (seed: pp-cross-dc-comm-overlap): even ranks receive on ping and send on pong, odd
  /// ranks the reverse, so a send and its matching receive share a stream (a communicator) and a
  /// rank's sends never queue behind its receives.
  ping_pong,
};

/// The comm lanes of ping and pong (stage_ops.hpp's send lane and the first receive lane).
inline constexpr int ping_lane = gen::send_lane, pong_lane = gen::recv_from_lower_lane;

/// The comm lane of a transfer (stage_ops.hpp).
constexpr int transfer_lane(const op_index& ix, const op& o,
                            p2p_lanes lanes = p2p_lanes::per_peer) noexcept {
  const int here = ix.m.rank_of(o.chunk);
  switch (lanes) {
    case p2p_lanes::single:
      return gen::send_lane;
    case p2p_lanes::ping_pong:
      return (here % 2 == 0) == (o.k == kind::recv) ? ping_lane : pong_lane;
    case p2p_lanes::per_peer:
      break;
  }
  if (o.k == kind::send) return gen::send_lane;
  const int from = ix.m.rank_of(ix.transfer_peer(o));
  return from < here ? gen::recv_from_lower_lane : gen::recv_from_higher_lane;
}

namespace detail {

/// The end points of a chunk's work along a micro-batch's path. Forward: the entry kind of the
/// first layer takes the chunk's input; the exit kinds of the last layer (the routed path's tail
/// and the shared expert) produce its output, every split of them. Backward mirrors it.
struct chunk_ends {
  kind entry, tail;
  bool shared;
  int last_layer, splits, tails;  ///< tails: the tail kind's parts (pieces of the expert path)

  constexpr explicit chunk_ends(const model_desc& m) noexcept
      : entry(m.stages.has(kind::block) ? kind::block : kind::attn),
        tail(m.stages.has(kind::block)     ? kind::block
             : m.stages.has(kind::combine) ? kind::combine
             : m.stages.has(kind::mlp)     ? kind::mlp
                                           : kind::attn),
        shared(m.stages.has(kind::shared)),
        last_layer(m.layers - 1),
        splits(m.splits),
        tails(m.parts_of(tail)) {}

  constexpr bool is_exit(const op& o) const noexcept {
    return o.layer == last_layer && (o.k == tail || (shared && o.k == kind::shared));
  }
  constexpr bool is_entry(const op& o) const noexcept { return o.layer == 0 && o.k == entry; }
  static constexpr bool backward(const op& o) noexcept {
    return o.ph == phase::B || o.ph == phase::dX;
  }
  /// Does `o` take the chunk's input from the previous (F) or next (B) chunk?
  constexpr bool takes_input(const op& o) const noexcept {
    return o.ph == phase::F ? is_entry(o) : backward(o) && is_exit(o);
  }
  /// Is `o` one of the ops whose results make the chunk's output (`outputs` of them)?
  constexpr bool gives_output(const op& o) const noexcept {
    return o.ph == phase::F ? is_exit(o) : backward(o) && is_entry(o);
  }
  constexpr int outputs(phase ph) const noexcept {
    return ph == phase::F ? tails + (shared ? splits : 0) : splits;
  }
};

}  // namespace detail

/// Adds explicit transfers to a schedule without them, as PyTorch's `_add_send_recv` does: in
/// rounds, each rank in turn issues its next slot once the receives that slot needs have been
/// posted on it; after a slot that finishes a chunk's forward (backward) for a consumer on
/// another rank, the rank sends and the consumer's rank posts the matching receive. Sends use
/// comm lanes of `transfer_lane`. Empty slots (idle steps) take a round
/// and vanish. Throws `config_error` when some rank can never issue its next slot.
constexpr schedule with_transfers(const schedule& s, p2p_lanes lanes = p2p_lanes::per_peer) {
  const model_desc& m = s.model;
  const op_index ix(m, false);
  const detail::chunk_ends ends(m);
  const auto R = static_cast<std::size_t>(s.ranks());
  for (const op& o : s.ops)
    if (is_p2p(o.k)) throw config_error("weft: with_transfers: the schedule already has transfers");

  // Per rank: the lowered ops, slot ends, and which receives it has posted (by p2p id).
  buffer<buffer<op>> out(R);
  buffer<buffer<std::uint32_t>> ends_of(R);
  buffer<std::uint8_t> posted(ix.size - ix.p2p_base, 0);
  buffer<std::uint32_t> outputs_left(ix.size - ix.p2p_base, 0);  // per send, ops still to run
  buffer<std::uint32_t> next(R, 0);  // each rank's next slot (global numbering)
  for (std::size_t r = 0; r < R; ++r) next[r] = s.first_slot(static_cast<int>(r));

  const auto transfer = [&](kind k, phase ph, const op& o) {
    op t = make_op(k, ph, o.mb, o.chunk);
    if (ix.transfer_peer(t) >= 0) t.lane = static_cast<std::uint8_t>(transfer_lane(ix, t, lanes));
    return t;
  };
  const auto issue = [&](std::size_t r, const op& o) {
    out[r].push_back(o);
    ends_of[r].push_back(static_cast<std::uint32_t>(out[r].size()));
  };
  const auto ph_of = [](const op& o) { return o.ph == phase::F ? phase::F : phase::B; };

  for (bool left = true; left;) {
    left = false;
    bool progress = false;
    for (std::size_t r = 0; r < R; ++r) {
      if (next[r] == s.end_slot(static_cast<int>(r))) continue;
      left = true;
      const std::uint32_t g = next[r];
      bool ready = true;
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) {
        const op& o = s.ops[i];
        if (!ends.takes_input(o)) continue;
        const op want = transfer(kind::recv, ph_of(o), o);
        if (ix.transfer_peer(want) >= 0 && !posted[ix.raw_id(want) - ix.p2p_base]) ready = false;
      }
      if (!ready) continue;
      progress = true;
      ++next[r];
      if (s.first_op(g) == s.slot_end[g]) continue;  // an idle step
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) out[r].push_back(s.ops[i]);
      ends_of[r].push_back(static_cast<std::uint32_t>(out[r].size()));
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) {
        const op& o = s.ops[i];
        if (!ends.gives_output(o)) continue;
        const op snd = transfer(kind::send, ph_of(o), o);
        const int peer = ix.transfer_peer(snd);
        if (peer < 0) continue;
        // Send once the last op that makes the output has run.
        std::uint32_t& left_ops = outputs_left[ix.raw_id(snd) - ix.p2p_base];
        if (left_ops == 0) left_ops = static_cast<std::uint32_t>(ends.outputs(ph_of(o)));
        if (--left_ops != 0) continue;
        issue(r, snd);
        op rcv = make_op(kind::recv, ph_of(o), o.mb, peer);
        rcv.lane = static_cast<std::uint8_t>(transfer_lane(ix, rcv, lanes));
        posted[ix.raw_id(rcv) - ix.p2p_base] = 1;
        issue(static_cast<std::size_t>(m.rank_of(peer)), rcv);
      }
    }
    if (left && !progress)
      throw config_error(
          "weft: with_transfers: no rank can issue its next slot: each waits for an input that "
          "is never sent (check the compute schedule first)");
  }

  schedule t(m);
  std::size_t n = 0;
  for (std::size_t r = 0; r < R; ++r) n += out[r].size();
  t.reserve(n, n);
  for (std::size_t r = 0; r < R; ++r) {
    t.add_rank();
    std::uint32_t b = 0;
    for (const std::uint32_t e : ends_of[r]) {
      for (; b < e; ++b) t.push(out[r][b]);
      t.close_slot();
    }
  }
  return t;
}

/// PyTorch's `_merge_bw`: a dX immediately followed (next slot, same rank) by the dW of the same
/// chunk and micro-batch becomes one fused backward; idle steps (empty slots) are dropped, as
/// PyTorch does before lowering. Other slots pass through unchanged.
constexpr schedule merge_backward(const schedule& s) {
  schedule t(s.model);
  t.reserve(s.ops.size(), s.slot_end.size());
  for (int r = 0; r < s.ranks(); ++r) {
    t.add_rank();
    for (int i = 0; i < s.slots(r); ++i) {
      const auto a = s.slot(r, i);
      if (a.empty()) continue;
      if (a.size() == 1 && a[0].ph == phase::dX && i + 1 < s.slots(r)) {
        const auto b = s.slot(r, i + 1);
        if (b.size() == 1 && b[0].ph == phase::dW &&
            b[0].same_work(
                make_op(a[0].k, phase::dW, a[0].mb, a[0].chunk, a[0].layer, a[0].split))) {
          op fused = a[0];
          fused.ph = phase::B;
          t.add_slot(fused);
          ++i;
          continue;
        }
      }
      for (const op& o : a) t.push(o);
      t.close_slot();
    }
  }
  return t;
}

}  // namespace weft
