// A pipeline's schedule lowered, simulated and measured in schedule units, as simulate and
// compare report it.
#pragma once

#include <weft/schedule/program.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>
#include "options.hpp"

namespace weft::cli {

/// --cost and the presets are unit-free (the DualPipe paper's F, B, W): so is the simulation.
struct simulated {
  program prog;
  unit_timeline time;
  unit_step_metrics metrics;
};

/// Lowers, simulates and measures `s` under the costs asked for (`record_slowed` for pictures);
/// `illegal_schedule` (exit 1) naming each rank's stuck op when it deadlocks. Says what it does on
/// big schedules, which take a while.
simulated simulate_pipeline(const schedule& s, const cost_args& cost, bool record_slowed);

}  // namespace weft::cli
