// The generators of zero_bubble_v.hpp at run time: inline in header-only builds, compiled once into
// `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/zero_bubble_v.hpp>

namespace weft::detail {

WEFT_DECL schedule zb_v_at_run_time(const pipeline_params& p) { return gen::build_zb_v(p); }

}  // namespace weft::detail
