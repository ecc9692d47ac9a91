// Derived dependencies: from an op's id and the model description, which ops it needs.
// This is the one place the dependency rules live; the checker, the simulator and the executor
// all ask it.
#pragma once

#include <cstdint>

#include <weft/core/op.hpp>
#include <weft/schedule/model.hpp>

namespace weft {

/// Why an op does not belong to a model (rule 1).
enum class outside : std::uint8_t {
  none,
  micro_batch,  ///< mb >= micro
  chunk,        ///< chunk >= ranks * chunks_per_rank
  layer,        ///< layer >= layers
  split,        ///< split >= splits
  kind,         ///< a layer kind the model's layers do not have
  phase,        ///< backward in a forward-only model, or dX/dW of a kind without weights
  off_path,     ///< a bidirectional model's micro-batch never visits this chunk
  no_transfer,  ///< a send/recv where consecutive chunks share a rank, or past the ends
  p2p_fields,   ///< a send/recv names a layer or split (transfers carry whole chunks)
  lane,         ///< lane >= lanes_per_class
};

/// The in-layer forward input of layer stage `k` in a layer of kinds `st`: the kind whose output
/// it consumes (`kind_table`'s `input`), the layer's entry when the layer lacks that kind (a
/// dense layer's mlp reads attention), or `k` itself for a kind that takes the layer's input.
constexpr kind layer_input_of(kind k, const stage_set& st) noexcept {
  const kind in = traits_of(k).input;
  if (in == k || st.has(in)) return in;
  for (int i = 0; i < kind_count; ++i)
    if (const auto e = static_cast<kind>(i); st.has(e) && traits_of(e).input == e) return e;
  return k;
}

/// Does layer stage `a` consume `b`'s output within one layer of kinds `st` (forward)? The
/// backward runs the same edges reversed: `b`'s input gradient feeds `a`'s.
constexpr bool consumes(kind a, kind b, const stage_set& st) noexcept {
  return a != b && layer_input_of(a, st) == b;
}

/// Where data enters and leaves a layer of kinds `st`, derived from `kind_table`: the entry takes
/// the previous layer's output (or the chunk's input); the outputs — the kinds nothing on the
/// layer's main path consumes: the routed path's tail and the shared expert — make its output,
/// every part of each, in kind order. Generators, transfers and the dependency rules all read
/// the ends from here.
struct layer_ends {
  kind entry = kind::block;
  kind outputs[kind_count] = {};
  int output_count = 0;

  constexpr explicit layer_ends(const stage_set& st) noexcept {
    for (int i = kind_count; i-- > 0;)
      if (const auto k = static_cast<kind>(i); st.has(k) && layer_input_of(k, st) == k) entry = k;
    for (int i = 0; i < kind_count; ++i) {
      const auto k = static_cast<kind>(i);
      if (!st.has(k) || !is_layer_stage(k)) continue;
      // Consumed on the main path: a kind beside it (the shared expert) leaves the output
      // where it was (attention's, in a layer of attention and a shared expert).
      bool consumed = false;
      for (int j = 0; j < kind_count; ++j) {
        const auto c = static_cast<kind>(j);
        consumed = consumed || (st.has(c) && !traits_of(c).beside && consumes(c, k, st));
      }
      if (!consumed) outputs[output_count++] = k;
    }
  }
  constexpr bool is_output(kind k) const noexcept {
    for (int i = 0; i < output_count; ++i)
      if (outputs[i] == k) return true;
    return false;
  }
};

/// Dense numbering of every op a model can have, so per-op state lives in flat arrays.
struct op_index {
  model_desc m;
  int S = 1, K = 1;
  int parts = 1;  ///< values of `split`: splits x pieces (the expert path's; the others' fewer)
  std::int8_t kpos[kind_count] = {};
  std::uint32_t units = 0, p2p_base = 0, coll_base = 0, size = 0;

  // Per kind, what the loops constant evaluation runs per op read (a member array costs it less
  // than a call): its role, how many values its `split` takes, whether it owns weights, the
  // stream index of its lane 0.
  kind_role role[kind_count] = {};
  int parts_of_kind[kind_count] = {};
  bool weighted[kind_count] = {};
  std::uint8_t stream_base[kind_count] = {};
  /// Per chunk (of at most limits::chunks): the rank it sits on (`model_desc::rank_of`).
  std::uint8_t home[limits::chunks + 1] = {};

  constexpr op_index(const model_desc& model, bool with_collectives)
      : m(model), S(model.chunks()), parts(model.parts()) {
    K = 0;
    for (int i = 0; i < kind_count; ++i) {
      const auto k = static_cast<kind>(i);
      kpos[i] = static_cast<std::int8_t>(m.stages.has(k) ? K++ : -1);
      role[i] = traits_of(k).role;
      parts_of_kind[i] = m.parts_of(k);
      weighted[i] = has_weights(k);
      stream_base[i] = static_cast<std::uint8_t>(stream_index({stream_of(k), 0}));
    }
    for (int c = 0; c < S; ++c)  // S <= limits::chunks (validate)
      home[c] = static_cast<std::uint8_t>(m.rank_of(c));
    // In 64 bits, then narrowed: `validate` caps a model's id space at max_op_ids (< 2^32).
    const std::uint64_t per_mb = static_cast<std::uint64_t>(S) *
                                 static_cast<std::uint64_t>(m.layers) *
                                 static_cast<std::uint64_t>(parts);
    units = static_cast<std::uint32_t>(static_cast<std::uint64_t>(m.micro) * per_mb *
                                       static_cast<std::uint64_t>(K));
    p2p_base = units * phase_count;
    coll_base = p2p_base + static_cast<std::uint32_t>(m.micro * S * 4);
    size = static_cast<std::uint32_t>(id_space(m, with_collectives));
  }

  constexpr bool has_kind(kind k) const noexcept { return kpos[static_cast<int>(k)] >= 0; }

  /// The position of a layer-stage op's (mb, chunk, layer, split, kind), phase excluded.
  constexpr std::uint32_t unit(int mb, int c, int l, int sp, kind k) const noexcept {
    return static_cast<std::uint32_t>(((mb * S + c) * m.layers + l) * parts + sp) *
               static_cast<std::uint32_t>(K) +
           static_cast<std::uint32_t>(kpos[static_cast<int>(k)]);
  }

  /// Next / previous chunk on a micro-batch's path, or -1.
  constexpr int next_chunk(int mb, int c) const noexcept { return m.next_chunk(mb, c); }
  constexpr int prev_chunk(int mb, int c) const noexcept { return m.prev_chunk(mb, c); }
  constexpr bool crosses_ranks(int c, int other) const noexcept {
    return other >= 0 && m.rank_of(c) != m.rank_of(other);
  }
  /// The chunk a transfer op exchanges data with, or -1 if no transfer exists there.
  constexpr int transfer_peer(const op& o) const noexcept {
    const int peer = m.transfer_peer_chunk(o.k, o.ph, o.mb, o.chunk);
    return crosses_ranks(o.chunk, peer) ? peer : -1;
  }

  constexpr outside why_outside(const op& o) const noexcept {
    const auto k = static_cast<int>(o.k);
    if (o.mb >= m.micro) return outside::micro_batch;
    if (o.chunk >= S) return outside::chunk;
    if (o.layer >= m.layers) return outside::layer;
    if (o.split >= parts_of_kind[k]) return outside::split;
    const kind_role r = role[k];
    if (r == kind_role::collective) {
      if (m.tp == tp_overlap::off) return outside::none;
      if (o.k == kind::all_reduce) return outside::kind;
      if (m.tp_ops(o.k, o.ph) == 0) return outside::phase;
      return m.tp_has(o.k, o.ph, o.split) ? outside::none : outside::split;
    }
    // Off a bidirectional model's paths (every chunk below S is on a one-way model's path).
    if (m.bidirectional && !m.carries(o.mb, o.chunk)) return outside::off_path;
    if (o.ph != phase::F && !m.backward) return outside::phase;
    if (r == kind_role::transfer) {
      if (o.ph != phase::F && o.ph != phase::B) return outside::phase;
      if (o.layer != 0 || o.split != 0) return outside::p2p_fields;
      return transfer_peer(o) < 0 ? outside::no_transfer : outside::none;
    }
    if (kpos[k] < 0) return outside::kind;
    if ((o.ph == phase::dX || o.ph == phase::dW) && !weighted[k]) return outside::phase;
    return outside::none;
  }

  /// The op's dense id, or npos if it is outside the model.
  constexpr std::uint32_t id(const op& o) const noexcept {
    if (why_outside(o) != outside::none) return npos;
    return raw_id(o);
  }
  /// The op a dense id stands for (lane 0); the inverse of `raw_id`.
  constexpr op op_of(std::uint32_t id) const noexcept {
    if (id >= coll_base) {
      std::uint32_t v = id - coll_base;
      const auto ph = static_cast<phase>(v % phase_count);
      v /= phase_count;
      const auto k =
          static_cast<kind>(static_cast<int>(kind::all_reduce) + static_cast<int>(v % 3));
      v /= 3;
      const int sp = static_cast<int>(v % static_cast<std::uint32_t>(parts));
      v /= static_cast<std::uint32_t>(parts);
      const int l = static_cast<int>(v % static_cast<std::uint32_t>(m.layers));
      v /= static_cast<std::uint32_t>(m.layers);
      return make_op(k, ph, static_cast<int>(v / static_cast<std::uint32_t>(S)),
                     static_cast<int>(v % static_cast<std::uint32_t>(S)), l, sp);
    }
    if (id >= p2p_base) {
      std::uint32_t v = id - p2p_base;
      const kind k = v % 2 ? kind::recv : kind::send;
      const phase ph = (v / 2) % 2 ? phase::B : phase::F;
      v /= 4;
      return make_op(k, ph, static_cast<int>(v / static_cast<std::uint32_t>(S)),
                     static_cast<int>(v % static_cast<std::uint32_t>(S)));
    }
    std::uint32_t v = id;
    const auto ph = static_cast<phase>(v % phase_count);
    v /= phase_count;
    const int kp = static_cast<int>(v % static_cast<std::uint32_t>(K));
    v /= static_cast<std::uint32_t>(K);
    const int sp = static_cast<int>(v % static_cast<std::uint32_t>(parts));
    v /= static_cast<std::uint32_t>(parts);
    const int l = static_cast<int>(v % static_cast<std::uint32_t>(m.layers));
    v /= static_cast<std::uint32_t>(m.layers);
    kind k = kind::block;
    for (int i = 0; i < kind_count; ++i)
      if (kpos[i] == kp) k = static_cast<kind>(i);
    return make_op(k, ph, static_cast<int>(v / static_cast<std::uint32_t>(S)),
                   static_cast<int>(v % static_cast<std::uint32_t>(S)), l, sp);
  }

  /// As `id`, for ops already known to be inside the model.
  constexpr std::uint32_t raw_id(const op& o) const noexcept {
    const auto k = static_cast<int>(o.k);
    const auto ph = static_cast<std::uint32_t>(o.ph);
    if (role[k] == kind_role::layer_stage)  // `unit`, written out: this runs once per op
      return (static_cast<std::uint32_t>(((o.mb * S + o.chunk) * m.layers + o.layer) * parts +
                                         o.split) *
                  static_cast<std::uint32_t>(K) +
              static_cast<std::uint32_t>(kpos[k])) *
                 phase_count +
             ph;
    if (role[k] == kind_role::transfer)
      return p2p_base +
             static_cast<std::uint32_t>(((o.mb * S + o.chunk) * 2 + (o.ph == phase::B)) * 2 +
                                        (o.k == kind::recv));
    const auto u =
        static_cast<std::uint32_t>(((o.mb * S + o.chunk) * m.layers + o.layer) * parts + o.split);
    const auto c =
        static_cast<std::uint32_t>(static_cast<int>(o.k) - static_cast<int>(kind::all_reduce));
    return coll_base + (u * 3 + c) * phase_count + ph;
  }
};

/// The producers of every op, derived from the model. This is the one place the dependency rules
/// live; the checker, the simulator and the executor all ask it. It works on dense ids (one
/// multiply-add per producer) because `static_assert` runs it for every op of large schedules.
///
/// Forward: attn -> dispatch -> mlp -> combine within a layer, the shared expert beside the
/// routed path (after attn); a layer's entry needs every output of the previous layer (all
/// splits: attention mixes tokens), the first layer of a chunk the last layer of the previous
/// chunk on the micro-batch's path, or the local `recv` when the schedule carries transfers.
/// Backward mirrors it from the loss (the last chunk's forward output), each backward op also
/// needs its own forward, and dW needs its dX. With pipe-experts pieces, piece j of split s
/// (`split` s * pieces + j of dispatch, mlp, combine) follows attention of split s, whose
/// backward gathers every piece's. A tensor-parallel linear (model_desc::tp) chains its
/// all-gather, matmul pieces and reduce-scatter as `tp_overlap` says.
class dependency_rules {
 public:
  constexpr dependency_rules(const op_index& ix, bool explicit_p2p) noexcept
      : ix_(ix), explicit_(explicit_p2p) {
    const stage_set& st = ix.m.stages;
    const layer_ends ends(st);
    const auto pos = [&](kind k) { return ix.kpos[static_cast<int>(k)]; };
    entry_ = pos(ends.entry);
    const int P = phase_count;
    kstride_ = P;
    sstride_ = P * ix.K;
    lstride_ = sstride_ * ix.parts;
    pieces_ = ix.m.pieces;
    cstride_ = lstride_ * ix.m.layers;
    mstride_ = cstride_ * ix.S;
    for (int k = 0; k < kind_count; ++k) fwd_from_[k] = bwd_from_[k] = piece_from_[k] = -1;
    for (int i = 0; i < ends.output_count; ++i) {
      out_kp_[i] = pos(ends.outputs[i]);
      out_parts_[i] = ix.m.parts_of(ends.outputs[i]);
      is_output_[static_cast<int>(ends.outputs[i])] = true;
    }
    outs_ = ends.output_count;
    // A part of another granularity: pipe-experts' piece j of split s reads split s's input.
    const auto across_parts = [&](kind a, kind b) {
      return pieces_ > 1 && model_desc::in_pieces(a) != model_desc::in_pieces(b);
    };
    for (int k = 0; k < kind_count; ++k) {
      const kind kk = static_cast<kind>(k);
      const int kp = ix.kpos[k];
      if (kp < 0 || kp == entry_) continue;
      // Forward: the in-layer input, as an id distance (or, across parts, its kind position).
      const kind in = layer_input_of(kk, st);
      if (across_parts(kk, in))
        piece_from_[k] = pos(in);
      else
        fwd_from_[k] = (kp - pos(in)) * kstride_;
    }
    // Backward: the kinds that consume each kind's output feed its gradient; one consumer of
    // the same parts is an id distance, several (or across parts) are listed.
    for (int k = 0; k < kind_count; ++k) {
      const kind kk = static_cast<kind>(k);
      if (ix.kpos[k] < 0) continue;
      for (int j = 0; j < kind_count; ++j)
        if (ix.kpos[j] >= 0 && consumes(static_cast<kind>(j), kk, st))
          succ_[k][succs_[k]++] = static_cast<std::int8_t>(j);
      if (succs_[k] == 1 && !is_output_[k] && !across_parts(kk, static_cast<kind>(succ_[k][0])))
        bwd_from_[k] = (ix.kpos[succ_[k][0]] - ix.kpos[k]) * kstride_;
    }
  }

  /// Id distance from a forward op back to its in-layer input; -1 for a layer's entry.
  constexpr int forward_input_distance(kind k) const noexcept {
    return fwd_from_[static_cast<int>(k)];
  }
  /// Id distance from a backward op's unit forward to the one in-layer successor that feeds its
  /// gradient; -1 where the gradient has several sources or comes from outside the layer.
  constexpr int backward_source_distance(kind k) const noexcept {
    return bwd_from_[static_cast<int>(k)];
  }

  constexpr const op_index& index() const noexcept { return ix_; }

  /// Calls `fn(producer_id, producer_chunk)` for every producer of `o` (whose id is `id`).
  /// `has(id)` tells whether the schedule contains an op: it picks the split (dX) or fused (B)
  /// form of a backward producer.
  template <class Has, class Fn>
  constexpr void producers(const op& o, std::uint32_t id, Has&& has, Fn&& fn) const {
    const int c = o.chunk, mbv = o.mb;
    if (tp_) return tp_linear(o, has, fn);
    // The common case first: a forward op fed by the previous sub-stage of its layer.
    if (o.ph == phase::F && fwd_from_[static_cast<int>(o.k)] >= 0)
      return fn(id - static_cast<std::uint32_t>(fwd_from_[static_cast<int>(o.k)]), c);
    if (is_p2p(o.k)) {
      if (o.k == kind::recv) return;  // its data comes from the matched send
      if (o.ph == phase::F) return outputs(mbv, c, ix_.m.layers - 1, phase::F, fn);
      return input_grads(mbv, c, 0, has, fn);
    }
    if (is_collective(o.k)) return collective(o, has, fn);
    const int l = o.layer;
    const int k = static_cast<int>(o.k);
    const int kp = ix_.kpos[k];
    if (o.ph == phase::F && piece_from_[k] >= 0)  // a piece: its split's input
      return fn(part_id(id, o.split, o.split / pieces_, kp, piece_from_[k]), c);
    switch (o.ph) {
      case phase::F: {
        if (l > 0) return outputs(mbv, c, l - 1, phase::F, fn);
        const int pc = ix_.prev_chunk(mbv, c);
        if (pc < 0) return;
        if (explicit_ && ix_.crosses_ranks(c, pc))
          return fn(transfer_id(kind::recv, phase::F, mbv, c), c);
        return outputs(mbv, pc, ix_.m.layers - 1, phase::F, fn);
      }
      case phase::dW:
        return fn(id - 1, c);  // dX sits just before dW
      case phase::B:
      case phase::dX: {
        fn(id - static_cast<std::uint32_t>(o.ph), c);  // its own forward's activations
        if (const int d = bwd_from_[k]; d >= 0)
          return fn(bx(id - static_cast<std::uint32_t>(o.ph) + static_cast<std::uint32_t>(d), has),
                    c);
        // Several consumers (attention's: the routed path, every piece of it, and the shared
        // expert), then the layer's output gradient if this kind makes the output.
        const std::uint32_t unit0 =
            id - static_cast<std::uint32_t>(static_cast<int>(o.ph) + kp * kstride_);
        for (int i = 0; i < succs_[k]; ++i) {
          const int j = succ_[k][i];
          const auto at = unit0 + static_cast<std::uint32_t>(ix_.kpos[j] * kstride_);
          if (model_desc::in_pieces(static_cast<kind>(j)) != model_desc::in_pieces(o.k))
            for (int q = 0; q < pieces_; ++q)
              fn(bx(at + static_cast<std::uint32_t>((o.split * (pieces_ - 1) + q) * sstride_), has),
                 c);
          else
            fn(bx(at, has), c);
        }
        if (is_output_[k]) output_grad(mbv, c, l, has, fn);
        return;
      }
    }
  }

  /// As above, for an op only known by value.
  template <class Has, class Fn>
  constexpr void producers(const op& o, Has&& has, Fn&& fn) const {
    producers(o, ix_.raw_id(o), has, fn);
  }

 private:
  const op_index& ix_;
  bool explicit_;
  bool tp_ = ix_.m.tp != tp_overlap::off;
  int pieces_ = 1;
  int entry_ = 0;
  int kstride_ = 0, sstride_ = 0, lstride_ = 0, cstride_ = 0, mstride_ = 0;
  // Per kind: the in-layer input's id distance (forward), the single consumer's (backward), the
  // input's kind position across parts; -1 where there is none (set in the constructor).
  int fwd_from_[kind_count] = {};
  int bwd_from_[kind_count] = {};
  int piece_from_[kind_count] = {};
  // Per kind: the kinds that consume its output, in kind order; whether it makes the output.
  std::int8_t succ_[kind_count][kind_count] = {};
  int succs_[kind_count] = {};
  bool is_output_[kind_count] = {};
  // The layer's output kinds: kind positions and parts.
  int out_kp_[kind_count] = {};
  int out_parts_[kind_count] = {};
  int outs_ = 0;

  constexpr std::uint32_t unit_id(int mbv, int c, int l) const noexcept {
    return static_cast<std::uint32_t>(mbv * mstride_ + c * cstride_ + l * lstride_);
  }
  /// The id of kind position `to_kp` at part `to_split` of the unit whose op at kind position
  /// `kp`, part `split`, has id `id` (same phase).
  constexpr std::uint32_t part_id(std::uint32_t id, int split, int to_split, int kp,
                                  int to_kp) const noexcept {
    return id - static_cast<std::uint32_t>(split * sstride_ + kp * kstride_) +
           static_cast<std::uint32_t>(to_split * sstride_ + to_kp * kstride_);
  }
  constexpr std::uint32_t transfer_id(kind k, phase ph, int mbv, int c) const noexcept {
    return ix_.raw_id(make_op(k, ph, mbv, c));
  }
  // The op that produces a unit's input gradient: dX if the schedule splits that backward,
  // otherwise B (also the name used when neither is there).
  template <class Has>
  static constexpr std::uint32_t bx(std::uint32_t unit_f, Has& has) {
    return has(unit_f + 2) ? unit_f + 2 : unit_f + 1;
  }
  // Every output of a layer (all splits, all pieces), in phase `ph`.
  template <class Fn>
  constexpr void outputs(int mbv, int c, int l, phase ph, Fn& fn) const {
    const std::uint32_t base = unit_id(mbv, c, l) + static_cast<std::uint32_t>(ph);
    for (int i = 0; i < outs_; ++i)
      for (int sp = 0; sp < out_parts_[i]; ++sp)
        fn(base + static_cast<std::uint32_t>(sp * sstride_ + out_kp_[i] * kstride_), c);
  }
  // The input gradients of a layer (its entry's backward, all splits).
  template <class Has, class Fn>
  constexpr void input_grads(int mbv, int c, int l, Has& has, Fn& fn) const {
    const std::uint32_t base = unit_id(mbv, c, l) + static_cast<std::uint32_t>(entry_ * kstride_);
    for (int sp = 0; sp < ix_.m.splits; ++sp)
      fn(bx(base + static_cast<std::uint32_t>(sp * sstride_), has), c);
  }
  // Gradient of a layer's output: from the next layer, the next chunk, or the loss.
  template <class Has, class Fn>
  constexpr void output_grad(int mbv, int c, int l, Has& has, Fn& fn) const {
    if (l + 1 < ix_.m.layers) return input_grads(mbv, c, l + 1, has, fn);
    const int nc = ix_.next_chunk(mbv, c);
    if (nc < 0) {  // the loss needs the whole output, and a blocking loss all-reduce its end
      if (ix_.m.loss == loss_reduce::blocking)
        fn(ix_.raw_id(make_op(kind::all_reduce, phase::F, mbv, c)), c);
      return outputs(mbv, c, l, phase::F, fn);
    }
    if (explicit_ && ix_.crosses_ranks(c, nc))
      return fn(transfer_id(kind::recv, phase::B, mbv, c), c);
    input_grads(mbv, nc, 0, has, fn);
  }
  // A tensor-parallel linear (one micro-batch, chunk and layer): forward, the all-gather (a
  // ring's step j after step j - 1), each matmul piece after the rows it multiplies (a ring's
  // piece j after step j, piece 0 at once; otherwise after the whole all-gather), the
  // reduce-scatter after its piece or after every piece; backward, the output gradient's
  // all-gather after the output (the loss), each piece after its forward and that gradient, the
  // input gradient's reduce-scatter after every piece.
  template <class Has, class Fn>
  constexpr void tp_linear(const op& o, Has& has, Fn& fn) const {
    const model_desc& m = ix_.m;
    const auto coll = [&](kind k, phase ph, int sp) {
      fn(ix_.raw_id(make_op(k, ph, o.mb, o.chunk, o.layer, sp)), static_cast<int>(o.chunk));
    };
    const auto piece = [&](int sp, phase ph) {
      fn(ix_.raw_id(make_op(kind::block, ph, o.mb, o.chunk, o.layer, sp)),
         static_cast<int>(o.chunk));
    };
    const auto piece_grad = [&](int sp) {
      const std::uint32_t f =
          ix_.raw_id(make_op(kind::block, phase::F, o.mb, o.chunk, o.layer, sp));
      fn(bx(f, has), static_cast<int>(o.chunk));
    };
    const int P = m.splits;
    if (o.k == kind::all_gather) {
      if (o.ph == phase::F) {
        if (m.tp_ring() && o.split > 1) coll(kind::all_gather, phase::F, o.split - 1);
        return;
      }
      for (int sp = 0; sp < m.tp_ops(kind::reduce_scatter, phase::F); ++sp)
        coll(kind::reduce_scatter, phase::F, sp);
      return;
    }
    if (o.k == kind::reduce_scatter) {
      if (o.ph == phase::B) {
        for (int sp = 0; sp < P; ++sp) piece_grad(sp);
      } else if (m.tp_scatter_pieces()) {
        piece(o.split, phase::F);
      } else {
        for (int sp = 0; sp < P; ++sp) piece(sp, phase::F);
      }
      return;
    }
    if (!is_layer_stage(o.k)) return;
    switch (o.ph) {
      case phase::F:
        if (!m.tp_ring()) return coll(kind::all_gather, phase::F, 0);
        if (o.split > 0) coll(kind::all_gather, phase::F, o.split);
        return;
      case phase::dW:
        return piece(o.split, phase::dX);
      case phase::B:
      case phase::dX:
        piece(o.split, phase::F);
        return coll(kind::all_gather, phase::B, 0);
    }
  }
  // A gradient all-reduce (phase dW) follows every weight gradient of its chunk; a loss
  // all-reduce (phase F, on a micro-batch's last chunk) its forward's output; other collectives
  // carry no derived dependencies.
  template <class Has, class Fn>
  constexpr void collective(const op& o, Has& has, Fn& fn) const {
    const model_desc& m = ix_.m;
    if (o.k == kind::all_reduce && o.ph == phase::F && m.loss != loss_reduce::none &&
        ix_.next_chunk(o.mb, o.chunk) < 0 && m.carries(o.mb, o.chunk))
      return outputs(o.mb, o.chunk, m.layers - 1, phase::F, fn);
    if (o.k != kind::all_reduce || o.ph != phase::dW) return;
    for (int mbi = 0; mbi < m.micro; ++mbi) {
      if (!m.carries(mbi, o.chunk)) continue;
      for (int l = 0; l < m.layers; ++l)
        for (int sp = 0; sp < ix_.parts; ++sp)
          for (int k = 0; k < kind_count; ++k) {
            const int kp = ix_.kpos[k];
            if (kp < 0 || !has_weights(static_cast<kind>(k))) continue;
            if (sp >= m.parts_of(static_cast<kind>(k))) continue;
            const std::uint32_t f = unit_id(mbi, o.chunk, l) +
                                    static_cast<std::uint32_t>(sp * sstride_ + kp * kstride_);
            fn(has(f + 1) ? f + 1 : f + 3, static_cast<int>(o.chunk));
          }
    }
  }
};

}  // namespace weft
