// How loose the schedule search's lower bound is where its suite leaves the largest gap: the
// suite's MoE profile (a V of DeepSeek-V3-like sub-stages, fb-overlap, all-to-alls as long as a
// forward sub-stage) on instances small enough to exhaust. Per row: the bound the search is
// judged by, the exhaustive optimum (`search::exact_schedule`: every combination of rank orders,
// backwards fused or split, pairs allowed), the search's best and the best generator's. Where
// the optimum lies well above the bound, the gap the suite reports at pp 16 is the bound's as
// much as the search's.
//
//   search_exact [BUDGET_S [ROWS]]   (the search's budget per row, default 2; the first ROWS
//                                    rows only)
#include <cstdio>
#include <cstdlib>

#include "search_problems.hpp"

#include <weft/search/exact.hpp>
#include <weft/search/search.hpp>

using namespace weft;
using weft::bench::moe_vee;

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 2.0;
  const int max_rows = argc > 2 ? std::atoi(argv[2]) : 1 << 30;
  std::printf(
      "| pp | micro | backwards | bound | exact optimum | plans exhausted | optimum over bound | "
      "search | best generator |\n"
      "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  struct row {
    int pp, micro;
    bool split;  ///< backwards fused or split (else fused only: a smaller space to exhaust)
  };
  int rows = 0;
  for (const row r : {row{1, 2, false}, row{1, 2, true}, row{1, 3, false}, row{1, 4, false},
                      row{2, 2, false}, row{2, 3, false}}) {
    if (rows++ >= max_rows) break;
    const search::unit_problem q = moe_vee(r.pp, r.micro, 0);
    const auto found = search::find_schedule(q, {.budget_s = budget, .split = r.split});
    const auto exact = search::exact_schedule(q, r.split, true, 5'000'000);
    const double bound = search::bounds_of(q, r.split).best().count();
    const auto gen = found.best_generator();
    std::printf("| %d | %d | %s | %.2f | ", r.pp, r.micro, r.split ? "fused or split" : "fused",
                bound);
    if (exact && exact->best)
      std::printf("%.2f | %llu | %+.1f %% | ", exact->best->makespan.count(),
                  static_cast<unsigned long long>(exact->plans),
                  100 * (exact->best->makespan.count() / bound - 1));
    else
      std::printf("%s | | | ", exact ? "none legal" : "too many to exhaust");
    std::printf("%.2f | ", found.best ? found.best->makespan.count() : 0.0);
    // The generators' plans split their backwards: none is a plan of fused ones.
    if (gen)
      std::printf("%.2f |\n", gen->makespan.count());
    else
      std::printf("none of fused backwards |\n");
    std::fflush(stdout);
  }
}
