// A tensor-parallel linear layer as a schedule (MindSpeed's tp-2d note): its all-gather, the pieces
// of its matmul and its reduce-scatter are ops on compute and comm streams, overlapped as the
// note's switches say — so the checker proves an overlap, the simulator times it and the runner
// executes it, all through the one semantics (model_desc::tp names the dependencies).
#pragma once

#include <string>

#include <weft/core/error.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/verify.hpp>

namespace weft::tp {

/// The tp-2d note's forward overlap switches. They exclude one another: the note says so, and two
/// different ways to cut one matmul cannot both hold.
struct overlap_switches {
  bool ag_matmul = false;  ///< --enable-overlap-ag-with-matmul
  bool matmul_rs = false;  ///< --enable-overlap-matmul-with-rs
  bool fused = false;      ///< --coc-fused-kernel
};

/// The overlap the switches ask for; `config_error` when more than one is on (no silent
/// precedence).
inline tp_overlap resolve(const overlap_switches& s) {
  const int on = int{s.ag_matmul} + int{s.matmul_rs} + int{s.fused};
  if (on > 1)
    throw config_error(
        "weft: tp2d: --enable-overlap-ag-with-matmul, --enable-overlap-matmul-with-rs and "
        "--coc-fused-kernel exclude one another: at most one forward overlap at a time");
  if (s.ag_matmul) return tp_overlap::ag_matmul;
  if (s.matmul_rs) return tp_overlap::matmul_rs;
  if (s.fused) return tp_overlap::fused;
  return tp_overlap::none;
}

/// The name the CLI and the docs use: none, ag-matmul, matmul-rs, fused.
constexpr const char* name_of(tp_overlap o) noexcept {
  switch (o) {
    case tp_overlap::ag_matmul:
      return "ag-matmul";
    case tp_overlap::matmul_rs:
      return "matmul-rs";
    case tp_overlap::fused:
      return "fused";
    default:
      return "none";
  }
}

/// Comm lanes: the all-gather (a ring's steps) on lane 0, the reduce-scatter on lane 1, so a
/// piece's reduce-scatter never queues behind the next ring step.
inline constexpr int gather_lane = 0;
inline constexpr int scatter_lane = 1;

/// The sizes of a linear's two groups: the one its input rows are all-gathered over and the one
/// its output rows are reduce-scattered over.
struct linear_groups {
  int gather = 1;
  int scatter = 1;
};

/// How many pieces the matmul comes in: a ring has one per member of the gather group (each
/// member's rows, the rank's own first); matmul↔reduce-scatter one per member of the scatter
/// group (MindSpeed's y chunks, strided so each member's share of a piece is a slice of its own
/// rows); no overlap one.
constexpr int pieces_for(tp_overlap o, linear_groups g) noexcept {
  switch (o) {
    case tp_overlap::ag_matmul:
    case tp_overlap::fused:
      return g.gather;
    case tp_overlap::matmul_rs:
      return g.scatter;
    default:
      return 1;
  }
}

/// The model of one tensor-parallel linear overlapped as `o`, its matmul in `pieces`.
constexpr model_desc linear_model(tp_overlap o, int pieces, bool backward = true) noexcept {
  return {.stages = stage_set::whole_block(), .splits = pieces, .backward = backward, .tp = o};
}

/// Appends a linear's forward to `s` (a schedule of `linear_model`): a ring's step j + 1 issued
/// beside piece j of the matmul, a piece's reduce-scatter beside the next piece.
constexpr void add_forward(schedule& s) {
  const model_desc& m = s.model;
  const int pieces = m.splits;
  const auto coll = [](kind k, phase ph, int sp) {
    return make_op(k, ph, 0, 0, 0, sp, k == kind::all_gather ? gather_lane : scatter_lane);
  };
  if (!m.tp_ring()) s.add_slot({coll(kind::all_gather, phase::F, 0)});
  for (int j = 0; j < pieces; ++j) {
    s.ops.push_back(make_op(kind::block, phase::F, 0, 0, 0, j));
    if (m.tp_ring() && j + 1 < pieces) s.ops.push_back(coll(kind::all_gather, phase::F, j + 1));
    if (m.tp_scatter_pieces() && j > 0)
      s.ops.push_back(coll(kind::reduce_scatter, phase::F, j - 1));
    s.slot_end.push_back(static_cast<std::uint32_t>(s.ops.size()));
  }
  s.add_slot({coll(kind::reduce_scatter, phase::F, m.tp_scatter_pieces() ? pieces - 1 : 0)});
}

/// Appends a linear's backward: the output gradient's all-gather, every piece's input gradient
/// (dX, or the fused B), then the input gradient's reduce-scatter beside the weight gradients
/// (dW) when `split_backward`.
constexpr void add_backward(schedule& s, bool split_backward) {
  const int pieces = s.model.splits;
  const auto piece = [](phase ph, int sp) { return make_op(kind::block, ph, 0, 0, 0, sp); };
  s.add_slot({make_op(kind::all_gather, phase::B, 0, 0, 0, 0, gather_lane)});
  for (int j = 0; j < pieces; ++j) s.add_slot({piece(split_backward ? phase::dX : phase::B, j)});
  const op scatter = make_op(kind::reduce_scatter, phase::B, 0, 0, 0, 0, scatter_lane);
  if (!split_backward) {
    s.add_slot({scatter});
    return;
  }
  s.add_slot({piece(phase::dW, 0), scatter});
  for (int j = 1; j < pieces; ++j) s.add_slot({piece(phase::dW, j)});
}

/// One linear overlapped as `o`, its matmul in `pieces`: the forward, then (`backward`) the
/// backward.
constexpr schedule linear_schedule(tp_overlap o, int pieces, bool backward = true,
                                   bool split_backward = false) {
  schedule s(linear_model(o, pieces, backward));
  s.add_rank();
  add_forward(s);
  if (backward) add_backward(s, split_backward);
  return s;
}

/// The backward alone, a fragment that takes the forward for granted (`forward_done`): what a
/// layer runs after the layers above it have given it its output's gradient.
constexpr schedule linear_backward(tp_overlap o, int pieces, bool split_backward = false) {
  schedule s(linear_model(o, pieces, true));
  s.add_rank();
  add_backward(s, split_backward);
  return s;
}
inline constexpr done_pattern forward_done = done(F);

/// The schedule of a linear with groups `g` and overlap `o`; `config_error` for sizes out of
/// range.
inline schedule linear_schedule(tp_overlap o, linear_groups g, bool backward = true,
                                bool split_backward = false) {
  if (g.gather < 1 || g.scatter < 1 || g.gather > limits::parts || g.scatter > limits::parts)
    throw config_error("weft: tp2d: group sizes must be in [1, " + std::to_string(limits::parts) +
                       "], got gather " + std::to_string(g.gather) + " and scatter " +
                       std::to_string(g.scatter));
  return linear_schedule(o, pieces_for(o, g), backward, split_backward);
}

}  // namespace weft::tp
