// The simulator alone: lower a generated schedule, simulate it, measure the step.
#include <weft/generators/dualpipe.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>

int main() {
  const weft::program p = weft::lower(weft::dualpipev({.ranks = 4, .micro = 8}));
  const auto t = weft::simulate(p, weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}));
  return weft::measure(p, t).bubble_ratio > 0.5;
}
