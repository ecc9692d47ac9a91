// The generators of controllable_memory.hpp at run time: inline in header-only builds, compiled
// once into `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/controllable_memory.hpp>

namespace weft::detail {

WEFT_DECL schedule v_half_at_run_time(const pipeline_params& p) { return gen::build_v_half(p); }
WEFT_DECL schedule v_min_at_run_time(const pipeline_params& p) { return gen::build_v_min(p); }

}  // namespace weft::detail
