// The schedule search's suite: pipelines of 4, 8 and 16 ranks with 2·pp and 4·pp micro-batches,
// under five cost profiles, each with a memory cap between 1F1B's and twice that. Per row: the
// best generator's makespan, the search's, the lower bound, the search's time and the plans it
// judged in full and estimated step by step; then the goal's figures (never worse, strictly better
// on a third, within 5 % of the bound on average, at most the budget per row).
//
//   search_suite [BUDGET_S [ROWS]]   (ROWS: run the first ROWS rows only)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "search_problems.hpp"

#include <weft/core/heap.hpp>
#include <weft/search/search.hpp>

using namespace weft;

namespace {

struct profile {
  const char* name;
  bool vee, moe;
  pipeline_costs<units> cost;
  double cap;  ///< the memory cap, a multiple of 1F1B's peak (pp units of a rank's whole share)
};

/// Whole-chunk costs of a rank's share; MoE: DeepSeek-V3-like layers (unit_cost_model::
/// deepseek_v3_like) with fb-overlap, each all-to-all twice the preset's — as long as a forward
/// sub-stage, half a backward one (a2a-heavy).
const profile profiles[] = {
    {"uniform F=1 B=2 W=1", false, false, {.F = 1, .B = 2, .W = 1}, 1.0},
    {"F<B: F=1 B=3 W=1.5", false, false, {.F = 1, .B = 3, .W = 1.5}, 2.0},
    {"W-heavy: F=1 B=3 W=2", false, false, {.F = 1, .B = 3, .W = 2}, 1.5},
    {"MoE a2a-heavy, fb-overlap, V", true, true, {.F = 2, .B = 4, .W = 2, .A2A = 1}, 1.0},
    {"cross-DC p2p: P2P=1.5", false, false, {.F = 1, .B = 2, .W = 1, .P2P = 1.5}, 1.5},
};

}  // namespace

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 10.0;
  const int max_rows = argc > 2 ? std::atoi(argv[2]) : 1 << 30;
  weft::keep_freed_heap();  // as the weft tool does (bench/search_rate.cpp)
  std::printf(
      "| pp | micro | costs | cap | best generator | search | bound | search / generator | "
      "over bound | found by | time | judged | estimated |\n"
      "| ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: "
      "|\n");
  int rows = 0, better = 0, worse = 0;
  double over_sum = 0, worst_time = 0;
  for (const int pp : {4, 8, 16})
    for (const int mult : {2, 4})
      for (const profile& pr : profiles) {
        if (rows >= max_rows) break;
        const int micro = mult * pp;
        // 1F1B's peak: pp units of a rank's whole share; a V's units are half a share each.
        const int chunks = pr.vee ? 2 : 1;
        const int cap = static_cast<int>(pr.cap * pp * chunks + 0.5);
        search::unit_problem q;
        if (pr.moe) {
          q = weft::bench::moe_vee(pp, micro, cap, pr.cost.A2A.count());
        } else {
          q.model.ranks = pp;
          q.model.micro = micro;
          if (pr.vee) {
            q.model.chunks_per_rank = 2;
            q.model.place = placement::vee;
          }
          q.overlap = overlap_options::none();
          q.model.max_live = cap;
          q.cost = unit_cost_model::pipeline(pr.cost).scaled_compute(1.0 / chunks);
        }
        const auto r = search::find_schedule(q, {.budget_s = budget});
        const auto gen = r.best_generator();
        std::string gen_text = "none fits";
        if (gen) {
          for (const auto& g : r.generators)
            if (g.result && g.result->makespan == gen->makespan) {
              gen_text = g.name + " " + std::to_string(gen->makespan.count());
              gen_text.erase(gen_text.find_last_not_of('0') + 1);
              if (gen_text.back() == '.') gen_text.pop_back();
              break;
            }
        }
        const double found = r.best ? r.best->makespan.count() : 0;
        const double bound = r.bound.best().count();
        const double ratio = gen && r.best ? found / gen->makespan.count() : 0;
        const double over = bound > 0 ? 100 * (found / bound - 1) : 0;
        ++rows;
        if (gen && r.best && r.best->makespan < gen->makespan) ++better;
        if (gen && r.best && r.best->makespan > gen->makespan) ++worse;
        over_sum += over;
        worst_time = std::max(worst_time, r.seconds);
        std::printf(
            "| %d | %d | %s | %d | %s | %.2f | %.2f | %.3f | %+.1f %% | %s | %.1f s | %llu | %llu "
            "|\n",
            pp, micro, pr.name, q.model.max_live, gen_text.c_str(), found, bound, ratio, over,
            r.found_by.c_str(), r.seconds, static_cast<unsigned long long>(r.evaluations),
            static_cast<unsigned long long>(r.estimated));
        std::fflush(stdout);
      }
  std::printf(
      "\n%d rows: worse than the best generator on %d, strictly better on %d (%.0f %%), %.1f %% "
      "over the bound on average, at most %.1f s per row\n",
      rows, worse, better, rows ? 100.0 * better / rows : 0.0, rows ? over_sum / rows : 0.0,
      worst_time);
}
