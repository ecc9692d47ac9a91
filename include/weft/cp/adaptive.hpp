// Adaptive context parallelism end to end (MindSpeed's adaptive-cp note): coarsen the mask,
// re-map the sequence, schedule the tasks in rounds under the communication cap.
#pragma once

#include <chrono>
#include <vector>

#include <weft/core/time.hpp>
#include <weft/cp/mask.hpp>
#include <weft/cp/remap.hpp>
#include <weft/cp/rounds.hpp>

namespace weft::cp {

struct adaptive_options {
  int coarse = 1024;  ///< coarse mask size S'; 0: plan on the full mask
  bool remap = true;  ///< false: keep the original order (a mask already local, e.g. windows)
  remap_options remapping{};
  round_options planning{};
};

struct adaptive_layout {
  dense_mask coarse;             ///< the mask the planner saw
  int tokens_per_cell = 1;       ///< tokens a coarse cell stands for
  remap_result remapped;         ///< the order (of coarse cells) and its scores
  dense_mask grid_before, grid;  ///< cp x cp, original order and chosen order
  round_assignment assignment;
  seconds planning_time{0};  ///< re-mapping included
  /// The chosen order of the full sequence: each coarse cell's tokens, in order.
  std::vector<int> token_order() const {
    std::vector<int> out;
    out.reserve(remapped.order.size() * static_cast<std::size_t>(tokens_per_cell));
    for (const int c : remapped.order)
      for (int t = 0; t < tokens_per_cell; ++t) out.push_back(c * tokens_per_cell + t);
    return out;
  }
};

/// Plans `m` for `cp` ranks. Throws `config_error` naming the problem: sizes that do not divide
/// (the sequence by the coarse size, the coarse size by cp), a cap too small for any plan.
template <class Mask>
adaptive_layout adapt_layout(const Mask& m, int cp, adaptive_options o = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  adaptive_layout out;
  const int size = [&] {
    if constexpr (requires { m.size(); })
      return m.size();
    else
      return m.size;
  }();
  if (cp < 1) throw config_error("weft: cp rounds: cp must be >= 1");
  out.coarse = coarsen(m, o.coarse > 0 ? o.coarse : size);
  out.tokens_per_cell = size / out.coarse.size();
  if (out.coarse.size() % cp != 0)
    throw config_error("weft: cp rounds: " + std::to_string(out.coarse.size()) +
                       " coarse cells do not split into " + std::to_string(cp) +
                       " equal slices; pick a cp that divides them");
  if (o.remap) {
    out.remapped = remap(out.coarse, cp, o.remapping);
  } else {
    out.remapped.order = identity_order(out.coarse.size());
  }
  out.grid_before = grid(out.coarse, identity_order(out.coarse.size()), cp);
  out.grid = grid(out.coarse, out.remapped.order, cp);
  if (!o.remap) out.remapped.before = out.remapped.after = score(out.grid);
  out.assignment = assign_rounds(out.grid, o.planning);
  out.planning_time = std::chrono::steady_clock::now() - t0;
  return out;
}

/// Names of one release ago ("plan" is the job planner's word); the layout's rounds, once
/// `.plan`, are `.assignment`.
using adaptive_plan [[deprecated("cp::adaptive_plan is cp::adaptive_layout")]] = adaptive_layout;
template <class Mask>
[[deprecated("cp::plan_adaptive is cp::adapt_layout")]] adaptive_layout plan_adaptive(
    const Mask& m, int cp, adaptive_options o = {}) {
  return adapt_layout(m, cp, o);
}

}  // namespace weft::cp
