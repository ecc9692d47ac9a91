// A tensor-parallel linear layer as a schedule (seed: tp-2d): its all-gather, the pieces of its
// matmul and its reduce-scatter are ops on compute and comm streams, overlapped as the seed's
// switches say — so the checker proves an overlap, the simulator times it and the runner
// executes it, all through the one semantics (model_desc::tp names the dependencies).
#pragma once

#include <string>

#include <weft/core/error.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft::tp {

/// The seed's forward overlap switches. They exclude one another: the seed says so, and two
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

/// One linear's forward (and backward) as slots. Forward: a ring's step j + 1 issued beside
/// piece j of the matmul, a piece's reduce-scatter beside the next piece; backward: the output
/// gradient's all-gather, every piece's input gradient (dX, or the fused B), then the input
/// gradient's reduce-scatter beside the weight gradients (dW) when `split_backward`.
constexpr schedule linear_schedule(tp_overlap o, int pieces, bool backward = true,
                                   bool split_backward = false) {
  schedule s(linear_model(o, pieces, backward));
  const model_desc& m = s.model;
  const auto coll = [](kind k, phase ph, int sp) {
    return make_op(k, ph, 0, 0, 0, sp, k == kind::all_gather ? gather_lane : scatter_lane);
  };
  const auto piece = [](phase ph, int sp) { return make_op(kind::block, ph, 0, 0, 0, sp); };
  s.add_rank();
  if (!m.tp_ring()) s.add_slot({coll(kind::all_gather, phase::F, 0)});
  for (int j = 0; j < pieces; ++j) {
    s.ops.push_back(piece(phase::F, j));
    if (m.tp_ring() && j + 1 < pieces) s.ops.push_back(coll(kind::all_gather, phase::F, j + 1));
    if (m.tp_scatter_pieces() && j > 0)
      s.ops.push_back(coll(kind::reduce_scatter, phase::F, j - 1));
    s.slot_end.push_back(static_cast<std::uint32_t>(s.ops.size()));
  }
  s.add_slot({coll(kind::reduce_scatter, phase::F, m.tp_scatter_pieces() ? pieces - 1 : 0)});
  if (!backward) return s;
  s.add_slot({coll(kind::all_gather, phase::B, 0)});
  for (int j = 0; j < pieces; ++j) s.add_slot({piece(split_backward ? phase::dX : phase::B, j)});
  if (!split_backward) {
    s.add_slot({coll(kind::reduce_scatter, phase::B, 0)});
    return s;
  }
  s.add_slot({piece(phase::dW, 0), coll(kind::reduce_scatter, phase::B, 0)});
  for (int j = 1; j < pieces; ++j) s.add_slot({piece(phase::dW, j)});
  return s;
}

/// The schedule of a linear with groups `g` and overlap `o`; `config_error` for sizes out of
/// range.
inline schedule linear_schedule(tp_overlap o, linear_groups g, bool backward = true,
                                bool split_backward = false) {
  if (g.gather < 1 || g.scatter < 1 || g.gather > 255 || g.scatter > 255)
    throw config_error("weft: tp2d: group sizes must be in [1, 255], got gather " +
                       std::to_string(g.gather) + " and scatter " + std::to_string(g.scatter));
  return linear_schedule(o, pieces_for(o, g), backward, split_backward);
}

}  // namespace weft::tp
