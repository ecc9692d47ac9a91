// A trainer's planning file as its author writes it: four generators with MoE sub-stages,
// lowered, simulated and measured, then a search for a better 1F1B-shaped schedule. Compiled with
// WEFT_BENCH_CONSTANT=1 the sizes are constants (`constexpr int P = 8, M = 32;`), as most trainers
// state them; otherwise they are read from the command line. Neither should cost a proof's
// compile time: nothing here is proven at compile time (bench/compile_time.sh headers).
#include <cstdio>
#include <cstdlib>

#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/search/search.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>

namespace {

struct sizes {
  int ranks, micro, layers;
};

sizes read_sizes([[maybe_unused]] int argc, [[maybe_unused]] char** argv) {
#if WEFT_BENCH_CONSTANT
  constexpr int P = 8, M = 32, L = 4;
  return {P, M, L};
#else
  const auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  return {arg(1, 8), arg(2, 32), arg(3, 4)};
#endif
}

void report(const char* name, const weft::schedule& s, const weft::unit_cost_model& cost) {
  const weft::program p = weft::lower(s);
  const auto t = weft::simulate(p, cost);
  const auto m = weft::measure(p, t);
  std::printf("%-12s %7zu ops  step %8.1f  bubble %5.1f %%\n", name, s.ops.size(),
              m.makespan.count(), 100 * m.bubble_ratio);
}

}  // namespace

int main(int argc, char** argv) {
  const auto cost = weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 1, .A2A = 1});
#if WEFT_BENCH_CONSTANT
  // The arguments as constants in the calls themselves, where g++ may try to fold them.
  report(
      "1f1b",
      weft::one_f_one_b({.ranks = 8, .micro = 32, .layers = 4, .stages = weft::stage_set::moe()}),
      cost);
  report("interleaved",
         weft::interleaved(
             {.ranks = 8, .micro = 32, .chunks = 2, .layers = 2, .stages = weft::stage_set::moe()}),
         cost);
  report("zb-v",
         weft::zb_v({.ranks = 8, .micro = 32, .layers = 2, .stages = weft::stage_set::moe()}),
         cost);
  report("dualpipev",
         weft::dualpipev({.ranks = 8,
                          .micro = 32,
                          .layers = 2,
                          .stages = weft::stage_set::moe_with_shared(),
                          .overlap = weft::overlap_options::all()}),
         cost);
  const sizes z = read_sizes(argc, argv);
#else
  const sizes z = read_sizes(argc, argv);
  const weft::pipeline_params p{
      .ranks = z.ranks, .micro = z.micro, .layers = z.layers, .stages = weft::stage_set::moe()};
  report("1f1b", weft::one_f_one_b(p), cost);
  report("interleaved",
         weft::interleaved({.ranks = z.ranks,
                            .micro = z.micro,
                            .chunks = 2,
                            .layers = z.layers / 2,
                            .stages = weft::stage_set::moe()}),
         cost);
  report("zb-v", weft::zb_v(p), cost);
  weft::pipeline_params pair = p;
  pair.stages = weft::stage_set::moe_with_shared();
  pair.overlap = weft::overlap_options::all();
  report("dualpipev", weft::dualpipev(pair), cost);
#endif

  weft::search::unit_problem q;
  q.model = {.ranks = z.ranks, .micro = z.micro, .max_live = z.ranks + 4};
  q.cost = weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 1});
  const auto r = weft::search::find_schedule(q, {.budget_s = 1, .seed = 1});
  if (!r.best) return 1;
  std::printf("search: %.1f (bound %.1f)\n", r.best->makespan.count(), r.bound.best().count());
  return 0;
}
