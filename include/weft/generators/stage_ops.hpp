// Building blocks for generators: the slots of one chunk's forward or backward, and of a forward
// overlapped with a backward, layer by layer — MoE fb-overlap (DeepSeek's pairing, MindSpeed's
// warm-up/cool-down self-overlap) lives here.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft {

/// Which parts of MoE fb-overlap a generator uses (MindSpeed's moe-fb-overlap note).
/// `overlap_options::none()` (and `{}`: every part off) is the baseline, each chunk's forward and
/// backward op after op; `overlap_options::all()` turns every part on.
struct overlap_options {
  /// Where a schedule overlaps a forward with a backward of another micro-batch, issue them
  /// layer by layer in pairs: attn-F ‖ combine-B, mlp-B ‖ dispatch-F, mlp-F ‖ dispatch-B,
  /// attn-B ‖ combine-F. Off: the forward, then the backward.
  bool pair_forward_backward = false;
  /// In those pairs, split expert and attention backward into dX and dW; the expert dW hides
  /// dispatch-B and the attention dW runs last (where it hides pipeline transfers).
  bool split_dw = false;
  /// Alone (warm-up, cool-down): the shared expert's forward hides dispatch-F, its backward
  /// hides combine-B, and the routed experts' dW hides dispatch-B.
  bool self_overlap = false;
  /// AMPipe (MindSpeed's ampipe note), for a model whose micro-batches are split along the sequence
  /// (`splits` > 1): each layer's forward runs every split's attention (dispatching each as
  /// soon as it is routed), then every split's experts (combining each as soon as it is done),
  /// so dispatch(s) hides behind attention(s+1) and combine(s) behind experts(s+1); the
  /// backward mirrors it over the splits last to first (combine-B of all, experts, attention).
  /// Off: each split's sub-stages one after the other, which hides nothing.
  bool pipeline_splits = false;
  /// Pipe-experts multi-stream (from the AMPipe note): where a layer's routed-expert path runs in
  /// pieces (`pieces` > 1) or pipelined splits, its second all-to-all of each direction (combine-F,
  /// dispatch-B) runs on a second comm stream, so it never queues behind the first.
  bool multi_stream_all_to_all = false;

  static constexpr overlap_options none() noexcept { return {}; }
  static constexpr overlap_options all() noexcept { return {true, true, true, true, true}; }
  friend constexpr bool operator==(const overlap_options&, const overlap_options&) = default;
};

namespace gen {

/// A run of slots for one or two (micro-batch, chunk) pairs, built once per model and stamped
/// per use: an op's `mb` field says whose it is (0: the forward's, 1: the backward's); `chunk`
/// is filled in when stamped. Copying a value and patching two fields is the cheap way to append
/// in constant evaluation.
struct pattern {
  buffer<op> ops;
  buffer<std::uint32_t> slot_end;  ///< relative to the pattern
  bool two_sided = false;          ///< holds ops of both sides

  constexpr void add(kind k, phase ph, int layer, int split, int whose, int lane = 0) {
    ops.push_back(make_op(k, ph, whose, 0, layer, split, lane));
    two_sided = two_sided || whose != 0;
  }
  constexpr void close() { slot_end.push_back(static_cast<std::uint32_t>(ops.size())); }
  constexpr void slot(kind k, phase ph, int layer, int split, int whose) {
    add(k, ph, layer, split, whose);
    close();
  }
};

/// Appends `p` with side 0 as (mb0, chunk0) and side 1 as (mb1, chunk1).
constexpr void stamp(schedule& s, const pattern& p, int mb0, int chunk0, int mb1 = 0,
                     int chunk1 = 0) {
  const std::size_t n = p.ops.size(), slots = p.slot_end.size();
  const auto base = static_cast<std::uint32_t>(s.ops.size());
  const std::uint16_t mbs[2] = {static_cast<std::uint16_t>(mb0), static_cast<std::uint16_t>(mb1)};
  const std::uint8_t chunks[2] = {static_cast<std::uint8_t>(chunk0),
                                  static_cast<std::uint8_t>(chunk1)};
  op* out = s.ops.extend(n);
  std::uint32_t* end = s.slot_end.extend(slots);
  if (!p.two_sided && slots == n) {  // the common case, kept lean for constant evaluation
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = p.ops[i];
      out[i].mb = mbs[0];
      out[i].chunk = chunks[0];
      end[i] = base + static_cast<std::uint32_t>(i) + 1;
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = p.ops[i];
    const int whose = p.ops[i].mb;
    out[i].mb = mbs[whose];
    out[i].chunk = chunks[whose];
  }
  for (std::size_t j = 0; j < slots; ++j) end[j] = base + p.slot_end[j];
}

/// The layer's kinds, and the MoE sub-stages a layer has.
struct layer_shape {
  kind k[kind_count] = {};
  int n = 0;
  bool moe = false, shared = false;

  constexpr explicit layer_shape(const stage_set& st) noexcept {
    for (int i = 0; i < kind_count; ++i)
      if (st.has(static_cast<kind>(i))) k[n++] = static_cast<kind>(i);
    moe =
        st.has(kind::attn) && st.has(kind::dispatch) && st.has(kind::mlp) && st.has(kind::combine);
    shared = st.has(kind::shared);
  }
};

/// An op of a layer's sub-stage chains, for `merge_streams`: its `split` is its own part (a
/// piece's for the routed-expert path).
struct chain_op {
  kind k;
  phase ph;
  int split;
  int lane = 0;
};

/// Does `a` need `b` within one layer of `m`: the sub-stage chain of one split as the dependency
/// rules derive it (`consumes`: forward attn -> dispatch -> mlp -> combine and attn -> shared;
/// backward reversed; dX -> dW), piece j of split s (part s * pieces + j) on split s's.
constexpr bool needs_in_layer(const chain_op& a, const chain_op& b, const model_desc& m) {
  const auto owner = [&](const chain_op& x) { return m.split_of(x.k, x.split); };
  if (model_desc::in_pieces(a.k) && model_desc::in_pieces(b.k) ? a.split != b.split
                                                               : owner(a) != owner(b))
    return false;
  if (a.ph == phase::F) return b.ph == phase::F && consumes(a.k, b.k, m.stages);
  if (b.ph == phase::F) return false;
  if (a.ph == phase::dW) return b.k == a.k && b.ph == phase::dX;
  return b.ph != phase::dW && consumes(b.k, a.k, m.stages);
}

/// Streams of a layer's pipelined sub-stages: compute, the all-to-all lane, and with
/// multi-stream a second all-to-all lane.
struct layer_streams {
  buffer<chain_op> list[3];
};

/// Slots for one layer from the ops of each stream, each list in stream order: each slot issues
/// the next op of every list whose in-layer producers are in earlier slots, so a comm op shares
/// a slot with the compute op it hides behind.
constexpr void merge_streams(pattern& p, int layer, const layer_streams& st, const model_desc& m,
                             int whose) {
  std::size_t at[3] = {0, 0, 0};
  const auto ready = [&](const chain_op& x) {
    for (int q = 0; q < 3; ++q)
      for (std::size_t i = at[q]; i < st.list[q].size(); ++i)
        if (needs_in_layer(x, st.list[q][i], m)) return false;
    return true;
  };
  for (;;) {
    bool take[3] = {false, false, false}, any = false, left = false;
    for (int q = 0; q < 3; ++q) {
      if (at[q] >= st.list[q].size()) continue;
      left = true;
      take[q] = ready(st.list[q][at[q]]);
      any = any || take[q];
    }
    if (!left) return;
    if (!any) throw config_error("weft: ampipe: the sub-stage order is not a dependency order");
    for (int q = 0; q < 3; ++q)
      if (take[q]) {
        const chain_op& x = st.list[q][at[q]++];
        p.add(x.k, x.ph, layer, x.split, whose, x.lane);
      }
    p.close();
  }
}

/// Is a layer's forward or backward pipelined over its splits (AMPipe) or pieces (pipe-experts)?
constexpr bool pipelined_layers(const model_desc& m, overlap_options o) {
  const layer_shape ls(m.stages);
  return ls.moe && ((o.pipeline_splits && m.splits > 1) || m.pieces > 1);
}

/// The lane of a layer's second all-to-all (combine-F, dispatch-B).
constexpr int second_a2a_lane(overlap_options o) {
  return o.multi_stream_all_to_all ? second_all_to_all_lane : all_to_all_lane;
}

/// A pipelined layer's forward for splits [first, end) (all of them with AMPipe, one at a time
/// without): the attention of every split, then the shared expert of every split, then the
/// routed experts of every piece, on the compute stream; the dispatches, then the combines, on
/// the all-to-all lane (the combines on a second lane with multi-stream).
constexpr void pipelined_forward(pattern& p, const model_desc& m, overlap_options o, int layer,
                                 int first, int end, int whose) {
  layer_streams st;
  const int P = m.pieces, lane2 = second_a2a_lane(o);
  for (int sp = first; sp < end; ++sp) st.list[0].push_back({kind::attn, phase::F, sp});
  if (m.stages.has(kind::shared))
    for (int sp = first; sp < end; ++sp) st.list[0].push_back({kind::shared, phase::F, sp});
  for (int q = first * P; q < end * P; ++q) {
    st.list[0].push_back({kind::mlp, phase::F, q});
    st.list[1].push_back({kind::dispatch, phase::F, q});
  }
  for (int q = first * P; q < end * P; ++q)
    st.list[lane2 == 0 ? 1 : 2].push_back({kind::combine, phase::F, q, lane2});
  merge_streams(p, layer, st, m, whose);
}

/// A pipelined layer's backward for splits [first, end), last to first: the shared expert's and
/// the routed experts' backward, then attention's, on the compute stream (a fused B with
/// self-overlap splits the experts into dX and dW, the dW after every dX); every combine-B, then
/// every dispatch-B, on the all-to-all lane (the dispatch-Bs on a second lane with
/// multi-stream). `ph` is B or dX as in `backward_pattern`.
constexpr void pipelined_backward(pattern& p, const model_desc& m, overlap_options o, phase ph,
                                  int layer, int first, int end, int whose) {
  layer_streams st;
  const int P = m.pieces, lane2 = second_a2a_lane(o);
  const bool split_experts = ph == phase::B && o.self_overlap;
  const phase expert_ph = split_experts ? phase::dX : ph;
  if (m.stages.has(kind::shared))
    for (int sp = end - 1; sp >= first; --sp) st.list[0].push_back({kind::shared, ph, sp});
  for (int q = end * P - 1; q >= first * P; --q) st.list[0].push_back({kind::mlp, expert_ph, q});
  if (split_experts)
    for (int q = end * P - 1; q >= first * P; --q) st.list[0].push_back({kind::mlp, phase::dW, q});
  for (int sp = end - 1; sp >= first; --sp) st.list[0].push_back({kind::attn, ph, sp});
  for (int q = end * P - 1; q >= first * P; --q) st.list[1].push_back({kind::combine, phase::B, q});
  for (int q = end * P - 1; q >= first * P; --q)
    st.list[lane2 == 0 ? 1 : 2].push_back({kind::dispatch, phase::B, q, lane2});
  merge_streams(p, layer, st, m, whose);
}

/// One chunk's forward: per layer, per split, the kinds in order; with self-overlap, the shared
/// expert beside dispatch; with AMPipe (`pipeline_splits`, MoE layers in several splits), the
/// splits pipelined.
constexpr pattern forward_pattern(const model_desc& m, overlap_options o, int whose = 0) {
  const layer_shape ls(m.stages);
  pattern p;
  for (int l = 0; l < m.layers; ++l) {
    if (pipelined_layers(m, o)) {
      if (o.pipeline_splits)
        pipelined_forward(p, m, o, l, 0, m.splits, whose);
      else
        for (int sp = 0; sp < m.splits; ++sp) pipelined_forward(p, m, o, l, sp, sp + 1, whose);
      continue;
    }
    for (int sp = 0; sp < m.splits; ++sp) {
      if (o.self_overlap && ls.moe && ls.shared) {
        p.slot(kind::attn, phase::F, l, sp, whose);
        p.add(kind::dispatch, phase::F, l, sp, whose);
        p.add(kind::shared, phase::F, l, sp, whose);
        p.close();
        p.slot(kind::mlp, phase::F, l, sp, whose);
        p.slot(kind::combine, phase::F, l, sp, whose);
        continue;
      }
      for (int j = 0; j < ls.n; ++j) p.slot(ls.k[j], phase::F, l, sp, whose);
    }
  }
  return p;
}

/// One chunk's backward, layers and kinds reversed. `ph`: B (fused), dX (input gradients: kinds
/// without weights run whole, B) or dW (weight gradients: only kinds with weights). A fused
/// backward with self-overlap splits the experts: combine-B ‖ shared-B, mlp-dX,
/// dispatch-B ‖ mlp-dW, attn-B; a dX pass with self-overlap puts the shared expert's dX beside
/// combine-B.
constexpr pattern backward_pattern(const model_desc& m, overlap_options o, phase ph,
                                   int whose = 0) {
  const layer_shape ls(m.stages);
  pattern p;
  for (int l = m.layers - 1; l >= 0; --l) {
    if (pipelined_layers(m, o) && ph != phase::dW) {
      if (o.pipeline_splits)
        pipelined_backward(p, m, o, ph, l, 0, m.splits, whose);
      else
        for (int sp = m.splits - 1; sp >= 0; --sp)
          pipelined_backward(p, m, o, ph, l, sp, sp + 1, whose);
      continue;
    }
    for (int sp = m.splits - 1; sp >= 0; --sp) {
      if (ph == phase::B && o.self_overlap && ls.moe) {
        p.add(kind::combine, phase::B, l, sp, whose);
        if (ls.shared) p.add(kind::shared, phase::B, l, sp, whose);
        p.close();
        p.slot(kind::mlp, phase::dX, l, sp, whose);
        p.add(kind::dispatch, phase::B, l, sp, whose);
        p.add(kind::mlp, phase::dW, l, sp, whose);
        p.close();
        p.slot(kind::attn, phase::B, l, sp, whose);
        continue;
      }
      if (ph == phase::dX && o.self_overlap && ls.moe && ls.shared) {
        // A zero-bubble input-gradient pass: the shared expert's dX hides combine-B; the
        // routed experts' dW, which would hide dispatch-B, runs later with the other dW.
        p.add(kind::combine, phase::B, l, sp, whose);
        p.add(kind::shared, phase::dX, l, sp, whose);
        p.close();
        p.slot(kind::mlp, phase::dX, l, sp, whose);
        p.slot(kind::dispatch, phase::B, l, sp, whose);
        p.slot(kind::attn, phase::dX, l, sp, whose);
        continue;
      }
      for (int j = ls.n - 1; j >= 0; --j) {
        const kind k = ls.k[j];
        if (!(ph == phase::B || ph == phase::dX || has_weights(k))) continue;
        // The routed-expert path's pieces of this split, last to first.
        const int P = model_desc::in_pieces(k) ? m.pieces : 1;
        for (int q = (sp + 1) * P - 1; q >= sp * P; --q)
          p.slot(k, ph == phase::B || has_weights(k) ? ph : phase::B, l, q, whose);
      }
    }
  }
  return p;
}

/// A forward (side 0) overlapped with a backward (side 1) of other micro-batches.
///  - Whole blocks: one slot per layer, the backward on compute lane 1 (PyTorch's OVERLAP_F_B:
///    the schedule's own statement, whatever the options).
///  - MoE layers, paired: per layer DeepSeek's four pairs; with `split_dw`,
///    attn-F ‖ combine-B, mlp-dX ‖ dispatch-F, mlp-dW ‖ dispatch-B, mlp-F, attn-dX ‖ combine-F,
///    attn-dW (shared-expert ops in slots of their own).
///  - Other sub-stage layers, paired: the two chains op by op, the backward op on lane 1 when it
///  shares a
///    stream class with its partner.
///  - Not paired: the forward, then the backward.
constexpr pattern overlap_pattern(const model_desc& m, overlap_options o) {
  const layer_shape ls(m.stages);
  if (!o.pair_forward_backward && !m.stages.has(kind::block)) {
    pattern f = forward_pattern(m, o, 0);
    const pattern b = backward_pattern(m, o, phase::B, 1);
    const auto base = static_cast<std::uint32_t>(f.ops.size());
    for (const op& x : b.ops) f.ops.push_back(x);
    for (const std::uint32_t e : b.slot_end) f.slot_end.push_back(base + e);
    f.two_sided = true;
    return f;
  }
  pattern p;
  if (ls.moe) {
    for (int i = 0; i < m.layers; ++i)
      for (int j = 0; j < m.splits; ++j) {
        const int fl = i, fs = j, bl = m.layers - 1 - i, bs = m.splits - 1 - j;
        p.add(kind::attn, phase::F, fl, fs, 0);
        p.add(kind::combine, phase::B, bl, bs, 1);
        p.close();
        if (ls.shared) p.slot(kind::shared, phase::B, bl, bs, 1);
        if (o.split_dw) {
          p.add(kind::mlp, phase::dX, bl, bs, 1);
          p.add(kind::dispatch, phase::F, fl, fs, 0);
          p.close();
          p.add(kind::mlp, phase::dW, bl, bs, 1);
          p.add(kind::dispatch, phase::B, bl, bs, 1);
          p.close();
          p.slot(kind::mlp, phase::F, fl, fs, 0);
        } else {
          p.add(kind::mlp, phase::B, bl, bs, 1);
          p.add(kind::dispatch, phase::F, fl, fs, 0);
          p.close();
          p.add(kind::mlp, phase::F, fl, fs, 0);
          p.add(kind::dispatch, phase::B, bl, bs, 1);
          p.close();
        }
        if (ls.shared) p.slot(kind::shared, phase::F, fl, fs, 0);
        p.add(kind::attn, o.split_dw ? phase::dX : phase::B, bl, bs, 1);
        p.add(kind::combine, phase::F, fl, fs, 0);
        p.close();
        if (o.split_dw) p.slot(kind::attn, phase::dW, bl, bs, 1);
      }
    return p;
  }
  const overlap_options plain = overlap_options::none();
  const pattern f = forward_pattern(m, plain, 0);
  const pattern b = backward_pattern(m, plain, phase::B, 1);
  const std::size_t n = f.ops.size() > b.ops.size() ? f.ops.size() : b.ops.size();
  for (std::size_t j = 0; j < n; ++j) {
    if (j < f.ops.size()) p.ops.push_back(f.ops[j]);
    if (j < b.ops.size()) {
      op x = b.ops[j];
      if (j < f.ops.size() && stream_of(x.k) == stream_of(f.ops[j].k)) x.lane = 1;
      p.ops.push_back(x);
    }
    p.close();
  }
  p.two_sided = true;
  return p;
}

}  // namespace gen
}  // namespace weft
