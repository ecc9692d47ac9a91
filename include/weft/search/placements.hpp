// The schedule search over placements: where the chunks sit is part of the schedule — a loop of
// 1, 2, ... chunks per rank (1F1B, interleaved) or a V of two (ZB-V, DualPipeV) — so a search
// that keeps one placement can call a plan optimal that another placement beats. Each placement
// is its own problem with its own bounds; the best over them is reported beside the bound of the
// problem it solves, and the least of the bounds, which holds for every placement tried.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/search/search.hpp>

namespace weft::search {

/// The placements a search tries when none is asked for: model `m` as a loop of 1 to
/// `max_chunks` chunks per rank, then as a V (two chunks a rank) — where a memory cap given in a
/// rank's whole-model units (`m.max_live`, for `m`'s one chunk per rank) becomes the same bytes
/// in each placement's smaller units: cap x chunks per rank.
inline std::vector<model_desc> placements_to_try(const model_desc& m, int max_chunks = 4) {
  if (max_chunks < 1 || max_chunks > 64)
    throw config_error("placements_to_try: max_chunks must be in [1, 64], got " +
                       std::to_string(max_chunks));
  if (m.chunks_per_rank != 1 || m.place != placement::loop || m.bidirectional)
    throw config_error(
        "placements_to_try: the model to place is a loop of one chunk per rank, whose "
        "chunk is a rank's whole share of the model");
  std::vector<model_desc> out;
  const auto with = [&](placement p, int chunks) {
    model_desc x = m;
    x.place = p;
    x.chunks_per_rank = chunks;
    x.max_live = m.max_live > 0 ? m.max_live * chunks : 0;
    out.push_back(x);
  };
  for (int k = 1; k <= max_chunks; ++k) with(placement::loop, k);
  with(placement::vee, 2);
  return out;
}

/// How a placement is named: "loop, 2 chunks per rank", "vee (2 chunks per rank)".
inline std::string placement_name(const model_desc& m) {
  if (m.place == placement::vee) return "vee (2 chunks per rank)";
  return "loop, " + std::to_string(m.chunks_per_rank) +
         (m.chunks_per_rank == 1 ? " chunk per rank" : " chunks per rank");
}

/// One placement's search.
template <time_type T>
struct placement_search {
  basic_problem<T> problem;
  search_result<T> result;
};

template <time_type T>
struct placements_result {
  std::vector<placement_search<T>> searched;  ///< in the order tried
  std::optional<std::size_t> best;            ///< the placement of the fastest plan found
  /// The least of the placements' bounds: no plan of any placement tried is faster.
  T bound{0};
  const placement_search<T>& best_search() const { return searched.at(*best); }
};

/// Searches each of `problems` in turn, the budget and the evaluation (and estimate) caps of `opt`
/// evenly among those not yet searched (a placement that stops early at its bound leaves its
/// time to the rest); the fastest plan over all of them is the best.
template <time_type T>
placements_result<T> find_over_placements(const std::vector<basic_problem<T>>& problems,
                                          const search_options& opt = {}) {
  if (problems.empty()) throw config_error("find_over_placements: no placement to search");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  placements_result<T> out;
  std::uint64_t evaluations = 0, estimated = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const auto left = static_cast<double>(problems.size() - i);
    search_options o = opt;
    const double spent = std::chrono::duration<double>(clock::now() - t0).count();
    o.budget_s = std::max(0.0, opt.budget_s - spent) / left;
    if (opt.max_evaluations > 0)
      o.max_evaluations = std::max<std::uint64_t>(
          1, (opt.max_evaluations - std::min(evaluations, opt.max_evaluations)) /
                 static_cast<std::uint64_t>(left));
    if (opt.max_estimates > 0)
      o.max_estimates =
          std::max<std::uint64_t>(1, (opt.max_estimates - std::min(estimated, opt.max_estimates)) /
                                         static_cast<std::uint64_t>(left));
    placement_search<T> s{problems[i], find_schedule(problems[i], o)};
    evaluations += s.result.evaluations;
    estimated += s.result.estimated;
    const T b = s.result.bound.best();
    out.bound = i == 0 ? b : std::min(out.bound, b);
    if (s.result.best &&
        (!out.best || s.result.best->makespan < out.searched[*out.best].result.best->makespan))
      out.best = out.searched.size();
    out.searched.push_back(std::move(s));
  }
  return out;
}

}  // namespace weft::search
