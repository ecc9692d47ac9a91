// Deprecated: `run_measures` lives in <weft/schedule/run_measures.hpp> as `weft::run_measures`,
// beside the timeline it completes (CHANGELOG.md). This header and the alias go in the next
// release.
#pragma once

#include <weft/schedule/run_measures.hpp>

namespace weft::exec {
using weft::run_measures;  // as exec/runner.hpp also declares it
}  // namespace weft::exec
