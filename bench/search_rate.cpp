// How many plans the schedule search judges a second (`search::evaluate`: built, checked,
// lowered, simulated), on two of the suite's problems, with glibc's allocator as it comes (after
// an untimed warm-up round, so its sliding thresholds have settled as in a long search) and then
// asked to keep freed memory (`keep_freed_heap`, include/weft/core/heap.hpp) — side by side in
// one run, medians of the rounds (ROUNDS odd: the middle one), with the page faults a plan takes.
// Then how many it estimates step by step (`search::step_timing`): a whole plan, and a plan one
// local-search move away from the plan kept, timed from the move's first changed step on (the
// moves drawn beforehand, as the search draws them, so the timing is the estimate's alone).
// And how far those estimates are from the simulator's makespans of the same plans.
//
//   search_rate [ROUNDS [SECONDS_A_ROUND]]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "search_problems.hpp"

#include <weft/core/heap.hpp>
#include <weft/search/search.hpp>
#include <weft/search/step_timing.hpp>

using namespace weft;

namespace {

struct problem_plan {
  std::string name;
  search::unit_problem q;
  search::step_order p;  ///< a plan judged over and over: the best generator's (within the cap)
  std::size_t ops = 0;   ///< of its lowered program
};

/// The two problems, each with the best of its generators' plans as the search judges them (a
/// plan over the cap with its forwards held back); nothing when none is legal.
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
      const search::step_order p = search::detail::forwards_deferred(*g.p, x.q.model.max_live);
      if (const auto s = search::evaluate(x.q, p); s && (best < 0 || s->makespan.count() < best)) {
        best = s->makespan.count();
        x.p = p;
      }
    }
    if (best < 0) return {};
    search::step_order p = x.p;
    p.model = x.q.model;
    p.overlap = x.q.overlap;
    x.ops = lower(search::to_schedule(p)).size();
  }
  return out;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct measured {
  double plans_per_s = 0, faults_per_plan = 0;
};

/// `rounds` rounds of `seconds` each judging `x`'s plan: the median round's rate, and the page
/// faults a plan took over them all.
measured rate(const problem_plan& x, int rounds, double seconds) {
  using clock = std::chrono::steady_clock;
  std::vector<double> rates;
  long plans = 0;
  const long faults = minor_faults();
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = clock::now();
    long n = 0;
    double elapsed = 0;
    do {
      if (!search::evaluate(x.q, x.p)) {
        std::fprintf(stderr, "search_rate: %s: its plan was judged illegal\n", x.name.c_str());
        std::exit(1);
      }
      ++n;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    } while (elapsed < seconds);
    rates.push_back(static_cast<double>(n) / elapsed);
    plans += n;
  }
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2],
          static_cast<double>(minor_faults() - faults) / static_cast<double>(plans)};
}

/// Estimates a second of `x`'s plan: whole, and one move away from it (`moves` drawn once:
/// plans in order with what each changed), medians of `rounds` rounds of `seconds`.
struct estimated {
  double whole = 0, moved = 0;
  double mean_error = 0, worst_error = 0;  ///< |estimate / simulated - 1| over the moved plans
};
estimated estimate_rate(const problem_plan& x, int rounds, double seconds) {
  using clock = std::chrono::steady_clock;
  search::step_timing<units> t(x.q);
  if (!t(x.p) || !t.keep()) {
    std::fprintf(stderr, "search_rate: %s: its plan has no estimate\n", x.name.c_str());
    std::exit(1);
  }
  std::vector<search::step_order> moved;
  std::vector<std::vector<std::size_t>> same;
  std::mt19937_64 rng(1);
  while (moved.size() < 64) {
    search::step_order p = x.p;
    const auto ch = search::detail::move(p, rng, true, true);
    if (!ch || !search::detail::in_order(p.model, p.ranks[ch->rank])) continue;
    std::vector<std::size_t> s(p.ranks.size());
    for (std::size_t r = 0; r < s.size(); ++r) s[r] = p.ranks[r].size();
    s[ch->rank] = ch->from;
    moved.push_back(std::move(p));
    same.push_back(std::move(s));
  }
  const auto rate = [&](auto&& one) {
    std::vector<double> rates;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = clock::now();
      long n = 0;
      double elapsed = 0;
      do {
        one(static_cast<std::size_t>(n) % moved.size());
        ++n;
        elapsed = std::chrono::duration<double>(clock::now() - t0).count();
      } while (elapsed < seconds);
      rates.push_back(static_cast<double>(n) / elapsed);
    }
    std::sort(rates.begin(), rates.end());
    return rates[rates.size() / 2];
  };
  double sink = 0;
  estimated out;
  out.whole = rate([&](std::size_t i) { sink += t(moved[i]).value_or(0); });
  out.moved = rate([&](std::size_t i) { sink += t(moved[i], same[i]).value_or(0); });
  int judged = 0;
  for (const search::step_order& p : moved)
    if (const auto sim = search::evaluate(x.q, p); sim && t(p)) {
      const double e = std::abs(*t(p) / sim->makespan.count() - 1);
      out.mean_error += e;
      out.worst_error = std::max(out.worst_error, e);
      ++judged;
    }
  if (judged > 0) out.mean_error /= judged;
  if (sink < 0) std::printf("%f\n", sink);  // keeps the estimates from being optimised away
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  const std::vector<problem_plan> ps = problems();
  if (ps.empty()) {
    std::fprintf(stderr, "search_rate: no generator's plan is legal for a problem\n");
    return 1;
  }
  std::vector<measured> before;
  for (const problem_plan& x : ps) {
    rate(x, 1, seconds);  // warm-up, not reported
    before.push_back(rate(x, rounds, seconds));
  }
  const bool kept = keep_freed_heap();
  std::printf(
      "problem                          ops a plan   plans/s as it comes (faults a plan)   "
      "freed heap kept (faults a plan)   ratio\n");
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (kept) rate(ps[i], 1, seconds);  // warm-up, as before
    const measured after = kept ? rate(ps[i], rounds, seconds) : before[i];
    std::printf("%-32s %10zu %21.0f (%12.1f) %17.0f (%12.1f) %7.2f\n", ps[i].name.c_str(),
                ps[i].ops, before[i].plans_per_s, before[i].faults_per_plan, after.plans_per_s,
                after.faults_per_plan, after.plans_per_s / before[i].plans_per_s);
  }
  if (!kept) std::printf("(the allocator is not glibc's, or refused: nothing kept)\n");
  std::printf(
      "\nproblem                          plans/s estimated: whole   one move away   "
      "|estimate / simulated - 1| over those plans: mean, worst\n");
  for (const problem_plan& x : ps) {
    const estimated e = estimate_rate(x, rounds, seconds);
    std::printf("%-32s %26.0f %15.0f   %8.2f %% %8.2f %%\n", x.name.c_str(), e.whole, e.moved,
                100 * e.mean_error, 100 * e.worst_error);
  }
}
