// What a trainer's TU that plans with the core pays: generate, check, lower, simulate, measure.
#include <weft/weft.hpp>

int main() {
  const weft::schedule s = weft::dualpipev({.ranks = 4, .micro = 8});
  const weft::program p = weft::lower(s);
  const auto t = weft::simulate(p, weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}));
  return weft::measure(p, t).bubble_ratio > 0.5;
}
