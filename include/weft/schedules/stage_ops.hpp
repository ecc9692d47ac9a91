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

/// The ops of one chunk's forward (F), fused backward (B) or split backward (dX: input
/// gradients; dW: weight gradients), one op per slot, in chain order (backward: reversed), for
/// micro-batch 0. In a split backward, ops without weights (dispatch, combine) run whole in the
/// dX chain and have nothing in the dW chain. Generators build a chain once per chunk and stamp
/// it per micro-batch: copying a value and patching one field is the cheap way in constant
/// evaluation.
struct chain {
  buffer<op> ops;
};
constexpr chain chain_of(const model_desc& m, const layer_kinds& lk, phase ph, int chunk_) {
  chain c;
  c.ops.reserve(static_cast<std::size_t>(m.layers * m.splits * lk.n));
  if (ph == phase::F) {
    for (int l = 0; l < m.layers; ++l)
      for (int sp = 0; sp < m.splits; ++sp)
        for (int j = 0; j < lk.n; ++j) c.ops.push_back(make_op(lk.k[j], ph, 0, chunk_, l, sp));
    return c;
  }
  for (int l = m.layers - 1; l >= 0; --l)
    for (int sp = m.splits - 1; sp >= 0; --sp)
      for (int j = lk.n - 1; j >= 0; --j) {
        const kind k = lk.k[j];
        if (ph == phase::B || has_weights(k))
          c.ops.push_back(make_op(k, ph, 0, chunk_, l, sp));
        else if (ph == phase::dX)
          c.ops.push_back(make_op(k, phase::B, 0, chunk_, l, sp));
      }
  return c;
}

/// Appends `c` for micro-batch `mb_`, one op per slot.
constexpr void append_chain(schedule& s, const chain& c, int mb_) {
  const std::size_t n = c.ops.size();
  const auto base = static_cast<std::uint32_t>(s.ops.size());
  const auto mb16 = static_cast<std::uint16_t>(mb_);
  op* out = s.ops.extend(n);
  std::uint32_t* end = s.slot_end.extend(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = c.ops[i];
    out[i].mb = mb16;
    end[i] = base + static_cast<std::uint32_t>(i) + 1;
  }
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
