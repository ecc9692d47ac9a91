// How many plans the schedule search judges a second (`search::evaluate`: built, checked,
// lowered, simulated), on two of the suite's problems, with glibc's allocator as it comes and
// then asked to keep freed memory (`keep_freed_heap`, include/weft/core/heap.hpp) — side by side
// in one run, medians of five rounds.
//
//   search_rate [ROUNDS [SECONDS_A_ROUND]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "search_problems.hpp"

#include <weft/core/heap.hpp>
#include <weft/search/search.hpp>

using namespace weft;

namespace {

struct problem_plan {
  std::string name;
  search::unit_problem q;
  search::step_order p;  ///< a plan judged over and over: the best generator's (within the cap)
};

std::vector<problem_plan> problems() {
  std::vector<problem_plan> out;
  search::unit_problem loop;
  loop.model = {.ranks = 4, .micro = 8, .max_live = 6};
  loop.cost = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 1.5});
  out.push_back({"pp 4 x 8, cross-DC, loop, cap 6", loop, {}});
  out.push_back({"pp 16 x 64, MoE V, cap 32", weft::bench::moe_vee(16, 64, 32), {}});
  for (problem_plan& x : out) {
    double best = -1;
    for (const search::generator_order& g : search::generator_orders(x.q.model, x.q.overlap)) {
      if (!g.p) continue;
      const search::step_order p =
          search::detail::forwards_deferred(*g.p, x.q.model.max_live);  // as the search does
      if (const auto s = search::evaluate(x.q, p); s && (best < 0 || s->makespan.count() < best)) {
        best = s->makespan.count();
        x.p = p;
      }
    }
  }
  return out;
}

/// Plans judged a second: `rounds` rounds of `seconds` each, their median.
double rate(const problem_plan& x, int rounds, double seconds) {
  using clock = std::chrono::steady_clock;
  std::vector<double> rates;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = clock::now();
    long n = 0;
    double elapsed = 0;
    do {
      if (!search::evaluate(x.q, x.p)) std::abort();  // a legal plan, judged legal every time
      ++n;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    } while (elapsed < seconds);
    rates.push_back(static_cast<double>(n) / elapsed);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  const std::vector<problem_plan> ps = problems();
  std::vector<double> before;
  for (const problem_plan& x : ps) before.push_back(rate(x, rounds, seconds));
  const bool kept = keep_freed_heap();
  std::printf(
      "problem                              plans/s as it comes   freed heap kept   ratio\n");
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const double after = kept ? rate(ps[i], rounds, seconds) : before[i];
    std::printf("%-36s %19.0f %17.0f %7.2f\n", ps[i].name.c_str(), before[i], after,
                after / before[i]);
  }
  if (!kept) std::printf("(the allocator is not glibc's, or refused: nothing kept)\n");
}
