// Building blocks for generators: the ops of one chunk's forward or backward, in chain order.
#pragma once

#include <cstdint>

#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::gen {

/// The kinds of a layer in forward order (block, or attn, dispatch, mlp, combine, shared).
struct layer_kinds {
  kind k[kind_count] = {};
  int n = 0;
};
constexpr layer_kinds layer_kinds_of(const stage_set& st) noexcept {
  layer_kinds lk;
  for (int i = 0; i < kind_count; ++i)
    if (st.has(static_cast<kind>(i))) lk.k[lk.n++] = static_cast<kind>(i);
  return lk;
}

/// Appends the forward (F) or fused backward (B) of (mb, chunk), one op per slot, in chain order
/// (backward: reversed). Writes into storage it extends once, the cheap way in constant evaluation.
constexpr void append_chunk(schedule& s, const layer_kinds& lk, phase ph, int mb_, int chunk_) {
  const model_desc& m = s.model;
  const auto n = static_cast<std::size_t>(m.layers * m.splits * lk.n);
  const auto base = static_cast<std::uint32_t>(s.ops.size());
  op* out = s.ops.extend(n);
  std::uint32_t* end = s.slot_end.extend(n);
  std::uint32_t i = 0;
  const bool fwd = ph == phase::F;
  for (int l = 0; l < m.layers; ++l)
    for (int sp = 0; sp < m.splits; ++sp)
      for (int j = 0; j < lk.n; ++j, ++i) {
        out[i] = fwd ? make_op(lk.k[j], ph, mb_, chunk_, l, sp)
                     : make_op(lk.k[lk.n - 1 - j], ph, mb_, chunk_, m.layers - 1 - l, m.splits - 1 - sp);
        end[i] = base + i + 1;
      }
}
constexpr void append_forward(schedule& s, const layer_kinds& lk, int mb_, int chunk_) {
  append_chunk(s, lk, phase::F, mb_, chunk_);
}
constexpr void append_backward(schedule& s, const layer_kinds& lk, int mb_, int chunk_) {
  append_chunk(s, lk, phase::B, mb_, chunk_);
}

/// Lanes a generator puts transfers on: sends and receives on separate comm streams, so a
/// blocked send never holds back the receive its peer is waiting for.
inline constexpr int send_lane = 0;
inline constexpr int recv_lane = 1;

/// Appends a transfer in its own slot when the model needs one there.
constexpr void append_transfer(schedule& s, kind k, phase ph, int mb_, int chunk_) {
  const op t = make_op(k, ph, mb_, chunk_, 0, 0, k == kind::send ? send_lane : recv_lane);
  if (op_index(s.model, false).transfer_peer(t) >= 0) s.add_slot(t);
}

}  // namespace weft::gen
