// Deprecated: a run's prediction lives beside the simulator, in <weft/sim/prediction.hpp>, as
// `weft::predicted_run`, `weft::calibrated_from`, `weft::sim_options_from` and
// `weft::co_run_slowdown` (CHANGELOG.md). This header and the aliases go in the next release.
#pragma once

#include <weft/sim/prediction.hpp>

namespace weft::exec {
using weft::calibrated_from;
using weft::co_run_slowdown;
using weft::predicted_run;
using weft::sim_options_from;
}  // namespace weft::exec
