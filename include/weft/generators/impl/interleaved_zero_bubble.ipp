// The generators of interleaved_zero_bubble.hpp at run time: inline in header-only builds, compiled
// once into `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/interleaved_zero_bubble.hpp>

namespace weft::detail {

WEFT_DECL schedule interleaved_zero_bubble_at_run_time(const interleaved_params& p) {
  return gen::build_interleaved_zero_bubble(p);
}

}  // namespace weft::detail
