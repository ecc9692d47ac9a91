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

/// Appends the forward of (mb, chunk), one op per slot: layers in order, kinds in chain order.
constexpr void append_forward(schedule& s, const layer_kinds& lk, int mb_, int chunk_) {
  const model_desc& m = s.model;
  for (int l = 0; l < m.layers; ++l)
    for (int sp = 0; sp < m.splits; ++sp)
      for (int j = 0; j < lk.n; ++j) s.add_slot(make_op(lk.k[j], phase::F, mb_, chunk_, l, sp));
}

/// Appends the fused backward of (mb, chunk), one op per slot, in reverse chain order.
constexpr void append_backward(schedule& s, const layer_kinds& lk, int mb_, int chunk_) {
  const model_desc& m = s.model;
  for (int l = m.layers - 1; l >= 0; --l)
    for (int sp = m.splits - 1; sp >= 0; --sp)
      for (int j = lk.n - 1; j >= 0; --j) s.add_slot(make_op(lk.k[j], phase::B, mb_, chunk_, l, sp));
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
