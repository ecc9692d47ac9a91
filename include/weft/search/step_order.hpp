// A step order: per rank, the order of its chunks' forwards and backwards (fused, or split into
// dX and dW), and forward/backward pairs overlapped — a pipeline-level schedule. It is what the
// generators speak (generators/builder.hpp) and what the search rearranges: small (one step per
// micro-batch and chunk), and built into a schedule of any sub-stages and overlap options the same
// way every generator's is, so an order found for whole blocks holds for MoE layers too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/builder.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/text.hpp>

namespace weft::search {

enum class action : std::uint8_t {
  F,   ///< a chunk's forward
  B,   ///< its fused backward
  I,   ///< the input-gradient half of a split backward (dX; PyTorch's I)
  W,   ///< the weight-gradient half (dW)
  FB,  ///< a forward overlapped with a backward of another micro-batch (DualPipe's F&B)
};

/// One step of a rank: `action` on (mb, chunk); an FB step's backward is (bmb, bchunk).
struct step {
  action a = action::F;
  std::uint16_t mb = 0, chunk = 0;
  std::uint16_t bmb = 0, bchunk = 0;
  friend constexpr bool operator==(const step&, const step&) = default;
};

/// What a step does to its rank's live activation units as rule 5 counts them
/// (docs/legality.md): a forward claims one — an overlapped pair's before its backward frees
/// one — and a fused backward or a dW frees one; a dX frees none.
struct live_change {
  int claims = 0, frees = 0;
};
constexpr live_change live_change_of(action a) noexcept {
  switch (a) {
    case action::F:
      return {1, 0};
    case action::B:
    case action::W:
      return {0, 1};
    case action::I:
      return {0, 0};
    case action::FB:
      return {1, 1};
  }
  return {};
}

/// A pipeline-level schedule: `model` (ranks, chunks and placement, micro-batches, layers and
/// sub-stages, the memory cap in `max_live`) and per rank its steps in issue order.
struct step_order {
  model_desc model;
  overlap_options overlap = overlap_options::none();
  std::vector<std::vector<step>> ranks;
  friend bool operator==(const step_order&, const step_order&) = default;
};

/// The schedule `p` describes, expanded to its model's sub-stages and overlap options.
inline schedule to_schedule(const step_order& p) {
  gen::pipeline_builder b(p.model, p.overlap);
  for (const std::vector<step>& steps : p.ranks) {
    b.add_rank();
    for (const step& s : steps) switch (s.a) {
        case action::F:
          b.forward(s.mb, s.chunk);
          break;
        case action::B:
          b.backward(s.mb, s.chunk);
          break;
        case action::I:
          b.backward_input(s.mb, s.chunk);
          break;
        case action::W:
          b.backward_weight(s.mb, s.chunk);
          break;
        case action::FB:
          b.overlapped(s.mb, s.chunk, s.bmb, s.bchunk);
          break;
      }
  }
  return b.take();
}

/// The plan of a pipeline-level schedule — whole blocks (`stage_set::whole_block()`), no
/// explicit transfers: what every generator gives for whole blocks. Idle steps (empty slots, as
/// PyTorch's orders pad theirs) are dropped: a plan is an order, and the simulators wait for what
/// an op needs anyway. Throws `config_error` naming the first slot that is not one chunk's
/// forward or backward, or a forward and a backward overlapped.
inline step_order step_order_of(const schedule& s,
                                overlap_options overlap = overlap_options::none()) {
  step_order p{s.model, overlap, {}};
  p.ranks.resize(static_cast<std::size_t>(s.ranks()));
  for (int r = 0; r < s.ranks(); ++r)
    for (int k = 0; k < s.slots(r); ++k) {
      const auto ops = s.slot(r, k);
      if (ops.empty()) continue;
      const auto bad = [&] {
        std::string what;
        for (const op& o : ops) what += (what.empty() ? "" : " | ") + to_string(o);
        return config_error("weft: search: rank " + std::to_string(r) + ", slot " +
                            std::to_string(k) + " (" + what +
                            ") is not a pipeline-level step (a chunk's forward, backward, dX or "
                            "dW of whole blocks, or a forward and a backward overlapped)");
      };
      for (const op& o : ops)
        if (o.k != kind::block || o.layer != 0 || o.split != 0) throw bad();
      const auto at = [](const op& o, action a) { return step{a, o.mb, o.chunk, 0, 0}; };
      if (ops.size() == 1) {
        const op& o = ops[0];
        p.ranks[static_cast<std::size_t>(r)].push_back(at(o, o.ph == phase::F    ? action::F
                                                             : o.ph == phase::B  ? action::B
                                                             : o.ph == phase::dX ? action::I
                                                                                 : action::W));
      } else if (ops.size() == 2 && ops[0].ph == phase::F && ops[1].ph == phase::B) {
        p.ranks[static_cast<std::size_t>(r)].push_back(
            {action::FB, ops[0].mb, ops[0].chunk, ops[1].mb, ops[1].chunk});
      } else {
        throw bad();
      }
    }
  return p;
}

/// "F3.1": action, micro-batch, chunk (PyTorch's CSV spells the same "1F3"); an FB step
/// "F3.1+B1.0".
inline std::string to_string(const step& s) {
  static constexpr const char* names[] = {"F", "B", "I", "W", "F"};
  std::string t =
      names[static_cast<int>(s.a)] + std::to_string(s.mb) + "." + std::to_string(s.chunk);
  if (s.a == action::FB) t += "+B" + std::to_string(s.bmb) + "." + std::to_string(s.bchunk);
  return t;
}

/// Names of one release ago (the job planner is `weft::plan`; this is an order of steps).
using plan [[deprecated("search::plan is search::step_order")]] = step_order;
[[deprecated("search::plan_of is search::step_order_of")]] inline step_order plan_of(
    const schedule& s, overlap_options overlap = overlap_options::none()) {
  return step_order_of(s, overlap);
}

}  // namespace weft::search
