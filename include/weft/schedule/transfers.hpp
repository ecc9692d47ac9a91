// Lowering a compute schedule to compute + transfers: the send/recv ops a pipeline needs where a
// micro-batch crosses ranks, placed the way PyTorch's pipelining runtime places them, so that
// every channel's sends and receives come in the same order and nothing waits forever.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/core/op.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/text.hpp>

namespace weft {

/// Which comm streams a pipeline's transfers use.
enum class p2p_lanes : std::uint8_t {
  /// Sends on `send_lane`, receives on a lane per neighbour (PyTorch's communicator per
  /// peer): a send never queues behind a receive, nor one neighbour's data behind the other's.
  per_peer,
  /// Every send and receive on one stream (Megatron's default p2p): each waits for the one
  /// before it, so a blocked send holds back the receive after it.
  single,
  /// Ping/pong (MindSpeed's pp-cross-dc-comm-overlap note): even ranks receive on ping and send on
  /// pong, odd ranks the reverse, so a send and its matching receive share a stream (a
  /// communicator) and a rank's sends never queue behind its receives.
  ping_pong,
  /// Megatron's batched calls (`batch_isend_irecv`): a lane per kind and direction — activations
  /// sent on `send_lane`, gradients on `send_upstream_lane`, activations received on
  /// `recv_from_lower_lane`, gradients on `recv_from_higher_lane` — so the ops of one call,
  /// at most one of each, progress together.
  by_direction,
};

/// The comm lanes of ping and pong (`send_lane` and `recv_from_lower_lane`, core/op.hpp).
inline constexpr int ping_lane = send_lane, pong_lane = recv_from_lower_lane;

/// The comm lane of a transfer (the lane roles: core/op.hpp).
constexpr int transfer_lane(const op_index& ix, const op& o,
                            p2p_lanes lanes = p2p_lanes::per_peer) noexcept {
  const int here = ix.m.rank_of(o.chunk);
  switch (lanes) {
    case p2p_lanes::single:
      return send_lane;
    case p2p_lanes::ping_pong:
      return (here % 2 == 0) == (o.k == kind::recv) ? ping_lane : pong_lane;
    case p2p_lanes::by_direction:
      if (o.k == kind::send) return o.ph == phase::F ? send_lane : send_upstream_lane;
      return o.ph == phase::F ? recv_from_lower_lane : recv_from_higher_lane;
    case p2p_lanes::per_peer:
      break;
  }
  if (o.k == kind::send) return send_lane;
  const int from = ix.m.rank_of(ix.transfer_peer(o));
  return from < here ? recv_from_lower_lane : recv_from_higher_lane;
}

namespace detail {

/// The end points of a chunk's work along a micro-batch's path (`layer_ends` of its layers).
/// Forward: the entry kind of the first layer takes the chunk's input; the output kinds of the
/// last layer (the routed path's tail and the shared expert) produce its output, every part of
/// them. Backward mirrors it.
struct chunk_ends {
  layer_ends ends;
  int last_layer, splits, output_parts;

  constexpr explicit chunk_ends(const model_desc& m) noexcept
      : ends(m.stages), last_layer(m.layers - 1), splits(m.splits), output_parts(0) {
    for (int i = 0; i < ends.output_count; ++i) output_parts += m.parts_of(ends.outputs[i]);
  }

  constexpr bool is_exit(const op& o) const noexcept {
    return o.layer == last_layer && ends.is_output(o.k);
  }
  constexpr bool is_entry(const op& o) const noexcept { return o.layer == 0 && o.k == ends.entry; }
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
  constexpr int outputs(phase ph) const noexcept { return ph == phase::F ? output_parts : splits; }
};

}  // namespace detail

/// Where a rank posts the receive of a step's input (a step: a chunk's forward or backward, or
/// an overlapped pair, with all its sub-stage slots).
enum class receive_posting : std::uint8_t {
  /// PyTorch's `_add_send_recv`: when the producing rank sends (ranks advance in rounds).
  when_sent,
  /// Right before the step that needs it, with the previous step's send, each transfer a call
  /// of its own on the lanes given: the unbatched form of Megatron's 1F1B
  /// (`send_forward_recv_backward`, ... without `batch_p2p_comm`, which Megatron always sets
  /// there; its batched form is `batched_1f1b`).
  at_use,
  /// Megatron's interleaved schedule (`overlap_p2p_comm`): right after the previous step of the
  /// same direction and its send — in the 1F1B phase one step ahead, in warm-up and cool-down
  /// just before its use; the first backward's with the last warm-up step (right before it when
  /// the warm-up holds every forward; `transfer_options::warmup`).
  after_previous,
  /// Early (MindSpeed's `--overlap-warmup-cooldown-communication`, from the cross-DC note): before
  /// the step preceding its consumer, so the data arrives while that step computes; in the
  /// 1F1B phase the same as Megatron's, in warm-up and cool-down one step earlier — MindSpeed's
  /// code: the first cool-down backward's after the last steady one, and with every forward in
  /// the warm-up (`transfer_options::warmup`) the backwards' after the last forward. A rank
  /// issues its sends, then its receives.
  early,
  /// Megatron's 1F1B (`forward_backward_pipelining_without_interleaving`, batched calls, each
  /// waited by the host): each receive right before its step, in one call with the previous
  /// step's send in the 1F1B phase (`send_forward_recv_backward`, ...), in calls of their own
  /// in warm-up and cool-down and between them (`send_forward`, then `recv_forward`). A call's ops
  /// in `batch_isend_irecv`'s order: send to the previous rank, receive from it, send to the
  /// next, receive from it. Lanes: `p2p_lanes::by_direction`.
  batched_1f1b,
  /// Megatron's interleaved schedule without `overlap_p2p_comm` (batched calls, each waited by
  /// the host): a rank's steps in units — each warm-up forward, each 1F1B-phase forward with its
  /// backward, each cool-down backward — and one call between two units with the first's sends
  /// and the second's receives (so the first backward's receive goes with the last warm-up
  /// forward's); when the warm-up holds every forward (`transfer_options::warmup`), the first
  /// backward's receive in a call of its own. Order and lanes as `batched_1f1b`.
  batched_interleaved,
};

/// How `with_transfers` lowers: which streams carry transfers, where receives are posted.
struct transfer_options {
  p2p_lanes lanes = p2p_lanes::per_peer;
  receive_posting receives = receive_posting::when_sent;
  /// `after_previous`, `early` and the batched ones: per rank, how many forwards its warm-up
  /// runs (the
  /// generator's count). Megatron posts the first backward's receive with the last warm-up
  /// step, or, when the warm-up holds every forward, right before that backward (empty: the
  /// latter); MindSpeed's early receives too wait until every forward is issued then (empty:
  /// they do not); Megatron's batched calls tell the 1F1B phase from the warm-up by it (empty:
  /// all warm-up).
  buffer<std::uint16_t> warmup{};
};

namespace detail {

/// Does lowering add transfers to `s`? When it has none of its own and some micro-batch's
/// consecutive chunks sit on different ranks.
constexpr bool adds_transfers(const schedule& s) {
  for (const op& o : s.ops)
    if (is_p2p(o.k)) return false;
  const op_index ix(s.model, false);
  for (int mbi = 0; mbi < s.model.micro; ++mbi)
    for (int c = s.model.first_chunk(mbi); c < s.model.end_chunk(mbi); ++c)
      if (ix.crosses_ranks(c, ix.next_chunk(mbi, c))) return true;
  return false;
}

/// The lowering's shared parts: the ops a transfer of a rank's slot needs and gives.
struct transfer_lowering {
  const schedule& s;
  const model_desc& m;
  op_index ix;
  chunk_ends ends;
  transfer_options opt;

  constexpr explicit transfer_lowering(const schedule& sched, transfer_options o)
      : s(sched), m(sched.model), ix(sched.model, false), ends(sched.model), opt(o) {
    for (const op& x : s.ops)
      if (is_p2p(x.k))
        throw config_error("weft: with_transfers: the schedule already has transfers");
  }
  static constexpr phase direction(const op& o) noexcept {
    return o.ph == phase::F ? phase::F : phase::B;
  }
  /// A transfer of kind `k` for the input (recv) or output (send) of op `o`, on its lane.
  constexpr op transfer(kind k, const op& o) const {
    op t = make_op(k, direction(o), o.mb, o.chunk);
    if (ix.transfer_peer(t) >= 0)
      t.lane = static_cast<std::uint8_t>(transfer_lane(ix, t, opt.lanes));
    return t;
  }
  constexpr std::uint32_t p2p_slot(const op& t) const { return ix.raw_id(t) - ix.p2p_base; }
  constexpr std::uint32_t p2p_count() const { return ix.size - ix.p2p_base; }
  /// Calls `fn(send)` for the send op `o` completes: the chunk's output to another rank, once
  /// the last of the ops that make it has run (`outputs_left` counts them per send).
  template <class Fn>
  constexpr void on_output(const op& o, buffer<std::uint32_t>& outputs_left, Fn&& fn) const {
    if (!ends.gives_output(o)) return;
    const op snd = transfer(kind::send, o);
    if (ix.transfer_peer(snd) < 0) return;
    std::uint32_t& left = outputs_left[p2p_slot(snd)];
    if (left == 0) left = static_cast<std::uint32_t>(ends.outputs(direction(o)));
    if (--left == 0) fn(snd);
  }
};

/// A lowered schedule from per-rank op lists and their slot ends.
constexpr schedule assemble(const model_desc& m, const buffer<buffer<op>>& out,
                            const buffer<buffer<std::uint32_t>>& ends_of) {
  schedule t(m);
  std::size_t n = 0;
  for (const auto& r : out) n += r.size();
  t.reserve(n, n);
  for (std::size_t r = 0; r < out.size(); ++r) {
    t.add_rank();
    std::uint32_t b = 0;
    for (const std::uint32_t e : ends_of[r]) {
      for (; b < e; ++b) t.push(out[r][b]);
      t.close_slot();
    }
  }
  return t;
}

/// Where PyTorch's placement stops: `rank` (-1: it did not stop) cannot issue its next slot
/// `slot` (global numbering) because the receive op `s.ops[index]` needs is never posted: its
/// sender, `peer_rank`, waits at its own next slot `peer_slot` (its end: it has none left).
struct placement_stop {
  int rank = -1;
  std::uint32_t slot = 0, index = 0;
  int peer_rank = -1;
  std::uint32_t peer_slot = 0;
};

// PyTorch's placement: in rounds, each rank in turn issues its next slot once the receives that
// slot needs have been posted on it; after a slot that finishes a chunk's forward (backward) for
// a consumer on another rank, the rank sends and the consumer's rank posts the matching receive.
// Empty slots (idle steps) take a round and vanish. The walk alone: `issued(r, g)` for every
// slot a rank issues, `sent(r, snd)` for every send, in issue order. The one rule both the
// lowering (which builds the ops) and the checker's rule 4 (which asks whether it can) follow.
template <class Issued, class Sent>
constexpr placement_stop walk_when_sent(const transfer_lowering& L, Issued&& issued, Sent&& sent) {
  const schedule& s = L.s;
  const auto R = static_cast<std::size_t>(s.ranks());
  buffer<std::uint8_t> posted(L.p2p_count(), 0);
  buffer<std::uint32_t> outputs_left(L.p2p_count(), 0);  // per send, ops still to run
  buffer<std::uint32_t> next(R, 0);                      // each rank's next slot (global numbering)
  for (std::size_t r = 0; r < R; ++r) next[r] = s.first_slot(static_cast<int>(r));
  // The first op of slot `g` whose input is not posted yet, or npos.
  const auto waiting = [&](std::uint32_t g) {
    for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) {
      const op& o = s.ops[i];
      if (!L.ends.takes_input(o)) continue;
      const op want = L.transfer(kind::recv, o);
      if (L.ix.transfer_peer(want) >= 0 && !posted[L.p2p_slot(want)]) return i;
    }
    return npos;
  };
  for (bool left = true; left;) {
    left = false;
    bool progress = false;
    for (std::size_t r = 0; r < R; ++r) {
      if (next[r] == s.end_slot(static_cast<int>(r))) continue;
      left = true;
      const std::uint32_t g = next[r];
      if (waiting(g) != npos) continue;
      progress = true;
      ++next[r];
      if (s.first_op(g) == s.slot_end[g]) continue;  // an idle step
      issued(r, g);
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i)
        L.on_output(s.ops[i], outputs_left, [&](const op& snd) {
          const int peer = L.ix.transfer_peer(snd);
          op rcv = make_op(kind::recv, snd.ph, snd.mb, peer);
          rcv.lane = static_cast<std::uint8_t>(transfer_lane(L.ix, rcv, L.opt.lanes));
          posted[L.p2p_slot(rcv)] = 1;
          sent(r, snd);
        });
    }
    if (left && !progress) {  // every rank left waits: name the first and whom it waits for
      placement_stop stop;
      for (std::size_t r = 0; r < R && stop.rank < 0; ++r) {
        if (next[r] == s.end_slot(static_cast<int>(r))) continue;
        stop.rank = static_cast<int>(r);
        stop.slot = next[r];
        stop.index = waiting(next[r]);
        const op want = L.transfer(kind::recv, s.ops[stop.index]);
        stop.peer_rank = L.m.rank_of(L.ix.transfer_peer(want));
        stop.peer_slot = next[static_cast<std::size_t>(stop.peer_rank)];
      }
      return stop;
    }
  }
  return {};
}

constexpr schedule lower_when_sent(const transfer_lowering& L) {
  const schedule& s = L.s;
  const auto R = static_cast<std::size_t>(s.ranks());
  buffer<buffer<op>> out(R);
  buffer<buffer<std::uint32_t>> ends_of(R);
  const auto close = [&](std::size_t r) {
    ends_of[r].push_back(static_cast<std::uint32_t>(out[r].size()));
  };
  const placement_stop stop = walk_when_sent(
      L,
      [&](std::size_t r, std::uint32_t g) {
        for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) out[r].push_back(s.ops[i]);
        close(r);
      },
      [&](std::size_t r, const op& snd) {
        out[r].push_back(snd);
        close(r);
        const int peer = L.ix.transfer_peer(snd);
        op rcv = make_op(kind::recv, snd.ph, snd.mb, peer);
        rcv.lane = static_cast<std::uint8_t>(transfer_lane(L.ix, rcv, L.opt.lanes));
        const auto to = static_cast<std::size_t>(L.m.rank_of(peer));
        out[to].push_back(rcv);
        close(to);
      });
  if (stop.rank >= 0) {
    const auto slot_of = [&](int r, std::uint32_t g) {
      return "its slot " + std::to_string(g - s.first_slot(r)) + ", " +
             to_string(s.ops[s.first_op(g)]);
    };
    const bool peer_waits = stop.peer_slot < s.end_slot(stop.peer_rank);
    throw config_error(
        "weft: with_transfers: no rank can issue its next slot: rank " + std::to_string(stop.rank) +
        " cannot issue " + slot_of(stop.rank, stop.slot) + ", whose input from rank " +
        std::to_string(stop.peer_rank) + " is never sent, that rank " +
        (peer_waits ? "waiting at " + slot_of(stop.peer_rank, stop.peer_slot)
                    : std::string("having issued every slot")) +
        " (each rank issues its slots in order, a slot once its receives are posted; check the "
        "compute schedule first)");
  }
  return assemble(L.m, out, ends_of);
}

// Megatron's and MindSpeed's cross-DC placement on one rank: its slots grouped into steps (runs of
// slots that share a (micro-batch, chunk, direction)); a send right after the slot that completes
// its output; the receive of a step's input before the step `receives` names.
class rank_by_steps {
 public:
  constexpr rank_by_steps(const transfer_lowering& L, std::size_t r, buffer<op>& out,
                          buffer<std::uint32_t>& ends)
      : L_(L),
        s_(L.s),
        r_(r),
        rank_(static_cast<int>(r)),
        out_(out),
        ends_(ends),
        batched_(L.opt.receives == receive_posting::batched_1f1b ||
                 L.opt.receives == receive_posting::batched_interleaved) {
    find_steps();
    if (batched_) find_units();
  }

  /// Lowers the rank: per step, the receives posted before it, its slots, the sends its slots'
  /// outputs make. `outputs_left` and `wanted` are shared by every rank.
  constexpr void lower(buffer<std::uint32_t>& outputs_left, buffer<std::uint8_t>& wanted) {
    const buffer<buffer<op>> receives_before = place_receives(wanted);
    for (std::uint32_t J = 0; J < steps(); ++J) {
      if (!batched_ || unit_of_[J] == J) {
        for (const op& rcv : receives_before[J]) group_.push_back(rcv);
        flush(J);
      }
      for (std::uint32_t g = step_begin_[J]; g < step_end(J); ++g) {
        if (s_.first_op(g) == s_.slot_end[g]) continue;
        for (std::uint32_t i = s_.first_op(g); i < s_.slot_end[g]; ++i) out_.push_back(s_.ops[i]);
        ends_.push_back(static_cast<std::uint32_t>(out_.size()));
        for (std::uint32_t i = s_.first_op(g); i < s_.slot_end[g]; ++i)
          L_.on_output(s_.ops[i], outputs_left, [&](const op& snd) { group_.push_back(snd); });
      }
    }
    flush(steps());
  }

 private:
  /// A step's (micro-batch, chunk, direction).
  static constexpr std::uint32_t key(const op& o) {
    return (static_cast<std::uint32_t>(o.mb) << 9) | (static_cast<std::uint32_t>(o.chunk) << 1) |
           (transfer_lowering::direction(o) == phase::F ? 0u : 1u);
  }
  constexpr std::uint32_t steps() const { return static_cast<std::uint32_t>(step_begin_.size()); }
  constexpr std::uint32_t step_end(std::uint32_t J) const {
    return J + 1 < steps() ? step_begin_[J + 1] : s_.end_slot(rank_);
  }
  constexpr bool backward_at(std::uint32_t I) const { return (dirs_[I] & 2) != 0; }
  /// Forwards in the warm-up of this rank (all of them when the lowering does not say).
  constexpr std::uint32_t warmup_or(std::uint32_t fallback) const {
    return r_ < L_.opt.warmup.size() ? L_.opt.warmup[r_] : fallback;
  }

  /// Steps: the first slot of each, and what directions each computes in.
  constexpr void find_steps() {
    std::uint32_t prev_b = 0, prev_e = 0;
    for (std::uint32_t g = s_.first_slot(rank_); g < s_.end_slot(rank_); ++g) {
      const std::uint32_t b = s_.first_op(g), e = s_.slot_end[g];
      if (b == e) continue;  // an idle step: nothing to lower
      bool continues = false;
      for (std::uint32_t i = b; i < e && !continues; ++i)
        for (std::uint32_t j = prev_b; j < prev_e && !continues; ++j)
          continues = key(s_.ops[i]) == key(s_.ops[j]);
      if (!continues) {
        step_begin_.push_back(g);
        dirs_.push_back(0);
      }
      for (std::uint32_t i = b; i < e; ++i)
        dirs_.back() |= L_.direction(s_.ops[i]) == phase::F ? 1 : 2;
      prev_b = b;
      prev_e = e;
    }
    for (const std::uint8_t x : dirs_) forwards_ += (x & 1) ? 1 : 0;
    // Every forward first on this rank (the generator's warm-up holds all its forwards)?
    all_warmup_ = r_ < L_.opt.warmup.size() && L_.opt.warmup[r_] >= forwards_;
  }

  /// Megatron's batched calls: the step each step's unit begins with (a unit: a step, or a
  /// 1F1B-phase forward with the backward after it in the interleaved code).
  constexpr void find_units() {
    unit_of_.assign(steps(), 0);
    steady_.assign(steps(), 0);
    const std::uint32_t w = warmup_or(forwards_);
    std::uint32_t before = 0;  // forwards in the steps before J
    for (std::uint32_t J = 0; J < steps(); ++J) {
      unit_of_[J] = J;
      steady_[J] = dirs_[J] == 1 && before >= w;
      if (L_.opt.receives == receive_posting::batched_interleaved && J > 0 && dirs_[J] == 2 &&
          steady_[J - 1])
        unit_of_[J] = J - 1;
      before += (dirs_[J] & 1) ? 1 : 0;
    }
  }

  /// Where the receive of step J's input in direction d goes: before step `post_before`.
  constexpr std::uint32_t post_before(std::uint32_t J, phase d) const {
    if (batched_) return unit_of_[J];
    if (L_.opt.receives == receive_posting::early) {
      if (J == 0 || d == phase::F) return J > 0 ? J - 1 : 0;
      // MindSpeed's code: a backward's receive goes before the step preceding it in the
      // cool-down, but right after the previous backward in the 1F1B phase (so before a first
      // cool-down backward only after the last steady one), and after every forward when the
      // warm-up holds them all.
      if (backward_at(J - 1)) return all_warmup_ || (J >= 2 && backward_at(J - 2)) ? J - 1 : J;
      bool first = true;
      for (std::uint32_t I = 0; I < J && first; ++I) first = !backward_at(I);
      return first && all_warmup_ ? J : J - 1;
    }
    if (L_.opt.receives == receive_posting::at_use) return J;
    const std::uint8_t bit = d == phase::F ? 1 : 2;
    for (std::uint32_t I = J; I-- > 0;)
      if (dirs_[I] & bit) return I + 1;
    if (d == phase::F) return 0;
    // The first backward's: with the last warm-up step (before the step after it), or right
    // before the backward when the warm-up holds every forward.
    const std::uint32_t w = warmup_or(J);
    return w < J ? w : J;
  }

  /// Per step, the receives posted before it: one per input from another rank.
  constexpr buffer<buffer<op>> place_receives(buffer<std::uint8_t>& wanted) const {
    buffer<buffer<op>> before(steps());
    for (std::uint32_t J = 0; J < steps(); ++J)
      for (std::uint32_t g = step_begin_[J]; g < step_end(J); ++g)
        for (std::uint32_t i = s_.first_op(g); i < s_.slot_end[g]; ++i) {
          const op& o = s_.ops[i];
          if (!L_.ends.takes_input(o)) continue;
          const op rcv = L_.transfer(kind::recv, o);
          if (L_.ix.transfer_peer(rcv) < 0 || wanted[L_.p2p_slot(rcv)]) continue;
          wanted[L_.p2p_slot(rcv)] = 1;
          before[post_before(J, L_.direction(o))].push_back(rcv);
        }
    return before;
  }

  /// Issues what the rank does together before step J (J == steps(): after the last).
  constexpr void flush(std::uint32_t J) {
    if (batched_)
      flush_calls(J);
    else
      flush_slots();
  }

  /// The sends after step J - 1 and the receives posted before step J, one slot each, in
  /// Megatron's order (`_p2p_ops`): even ranks send downstream, receive from upstream, send
  /// upstream, receive from downstream; odd ranks receive before each send. On one FIFO stream
  /// two neighbours then always meet: each send faces the receive it matches. MindSpeed's early
  /// receives: each send, then the receives.
  constexpr void flush_slots() {
    const auto issue = [&](const op& o) {
      out_.push_back(o);
      ends_.push_back(static_cast<std::uint32_t>(out_.size()));
    };
    if (L_.opt.receives == receive_posting::early) {
      for (const op& t : group_) issue(t);
    } else {
      const auto order = [&](const op& t) {
        const int dir = t.ph == phase::F ? 0 : 2;  // F: to next / from prev; B: the reverse
        const bool sends = t.k == kind::send;
        return dir + (rank_ % 2 == 0 ? (sends ? 0 : 1) : (sends ? 1 : 0));
      };
      for (int pass = 0; pass < 4; ++pass)
        for (const op& t : group_)
          if (order(t) == pass) issue(t);
    }
    group_.clear();
  }

  /// Megatron's batched calls: a call is one slot, its ops in `batch_isend_irecv`'s order.
  /// Before step J: one call, or the sends' and then the receives' where Megatron's code makes
  /// two — from the warm-up straight into the cool-down (`send_forward`, then `recv_backward`),
  /// and in 1F1B's warm-up and cool-down.
  constexpr void flush_calls(std::uint32_t J) {
    const bool apart =
        J > 0 && J < steps() &&
        ((dirs_[J - 1] == 1 && !steady_[J - 1] && dirs_[J] == 2) ||
         (L_.opt.receives == receive_posting::batched_1f1b && dirs_[J - 1] == dirs_[J]));
    if (apart) {
      call(true, false);
      call(false, true);
    } else {
      call(true, true);
    }
    group_.clear();
  }

  /// One batched call of the group's sends and/or receives: to prev, from prev, to next, from
  /// next.
  constexpr void call(bool sends, bool receives) {
    const auto order = [](const op& t) {
      return t.ph == phase::F ? (t.k == kind::send ? 2 : 1) : (t.k == kind::send ? 0 : 3);
    };
    bool any = false;
    for (int pass = 0; pass < 4; ++pass)
      for (const op& t : group_)
        if (order(t) == pass && (t.k == kind::send ? sends : receives)) {
          out_.push_back(t);
          any = true;
        }
    if (any) ends_.push_back(static_cast<std::uint32_t>(out_.size()));
  }

  const transfer_lowering& L_;
  const schedule& s_;
  std::size_t r_;
  int rank_;
  buffer<op>& out_;
  buffer<std::uint32_t>& ends_;
  bool batched_;
  buffer<std::uint32_t> step_begin_;  ///< global slot numbers
  buffer<std::uint8_t> dirs_;         ///< bit 0: a forward, bit 1: a backward
  std::uint32_t forwards_ = 0;
  bool all_warmup_ = false;
  buffer<std::uint32_t> unit_of_;  ///< batched: the step each step's call is made before
  buffer<std::uint8_t> steady_;    ///< batched: a forward past the warm-up
  buffer<op> group_;               ///< what the rank issues together next
};

// Megatron's and MindSpeed's cross-DC placement, rank by rank (rank_by_steps).
constexpr schedule lower_by_steps(const transfer_lowering& L) {
  const auto R = static_cast<std::size_t>(L.s.ranks());
  buffer<buffer<op>> out(R);
  buffer<buffer<std::uint32_t>> ends_of(R);
  buffer<std::uint32_t> outputs_left(L.p2p_count(), 0);
  buffer<std::uint8_t> wanted(L.p2p_count(), 0);
  for (std::size_t r = 0; r < R; ++r)
    rank_by_steps(L, r, out[r], ends_of[r]).lower(outputs_left, wanted);
  return assemble(L.m, out, ends_of);
}

/// `with_transfers` at run time: this file's in header-only builds, compiled once into
/// `weft::compiled` with WEFT_SEPARATE_COMPILATION.
WEFT_DECL schedule with_transfers_at_run_time(const schedule& s, transfer_options o);

/// `with_transfers`'s work.
constexpr schedule add_transfers(const schedule& s, transfer_options o) {
  if ((o.receives == receive_posting::batched_1f1b ||
       o.receives == receive_posting::batched_interleaved) &&
      o.lanes != p2p_lanes::by_direction)
    throw config_error(
        "weft: with_transfers: Megatron's batched calls need p2p_lanes::by_direction: a call's "
        "transfers progress together, each on a lane of its own");
  const transfer_lowering L(s, o);
  // Two returns, not `?:` of two calls: g++ 12 then frees the result's storage in constant
  // evaluation ("use of allocated storage after deallocation").
  if (o.receives == receive_posting::when_sent) return lower_when_sent(L);
  return lower_by_steps(L);
}
}  // namespace detail

/// Adds explicit transfers to a schedule without them: a send after the slot that completes a
/// chunk's output for a consumer on another rank, the matching receive on the consumer's rank
/// where `o.receives` says (PyTorch's `_add_send_recv` by default), each transfer on the comm
/// lane `transfer_lane` gives for `o.lanes`. Whether the result can run (no rank waits forever)
/// is the checker's rule 4 to prove: posting receives early on one stream can deadlock.
/// Throws `config_error` when the schedule has transfers already, when Megatron's batched calls
/// are asked for on other lanes than `by_direction`, or (PyTorch placement) when some rank can
/// never issue its next slot.
constexpr schedule with_transfers(const schedule& s, transfer_options o = {}) {
  if (std::is_constant_evaluated()) return detail::add_transfers(s, o);
  return detail::with_transfers_at_run_time(s, o);
}

/// `s` without its transfers: the compute a PyTorch compute-only schedule states, each slot's
/// compute in order; a slot that held only transfers is gone, an idle one stays.
constexpr schedule compute_only(const schedule& s) {
  schedule out(s.model);
  for (int r = 0; r < s.ranks(); ++r) {
    out.add_rank();
    for (int i = 0; i < s.slots(r); ++i) {
      const auto slot = s.slot(r, i);
      bool computes = slot.empty();
      for (const op& o : slot)
        if (!is_p2p(o.k)) {
          out.push(o);
          computes = true;
        }
      if (computes) out.close_slot();
    }
  }
  return out;
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

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/schedule/impl/transfers.ipp>
#endif
