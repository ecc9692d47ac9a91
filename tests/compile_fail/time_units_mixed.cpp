// One unit of time: a unit-free cost never lands in a table of seconds, and a simulation's costs
// and options share one time type.
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/simulate.hpp>
using namespace weft;

int main() {
  const program p = lower(one_f_one_b({.ranks = 2, .micro = 2}));
  const unit_cost_model formula = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
#ifdef WEFT_KO
  cost_model device;
  device.set(kind::block, phase::F, formula.of(kind::block, phase::F));
  const sim_options waits{.event_latency = seconds(1e-6)};
#else
  cost_model device = formula.at(seconds(1e-3));
  device.set(kind::block, phase::F, formula.of(kind::block, phase::F).at(seconds(1e-3)));
  const unit_sim_options waits{.event_latency = 0.01};
#endif
  return simulate(p, formula, waits).deadlocked() || simulate(p, device).deadlocked();
}
