// The generators of interleaved.hpp at run time: inline in header-only builds, compiled once into
// `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/interleaved.hpp>

namespace weft::detail {

WEFT_DECL schedule interleaved_at_run_time(const interleaved_params& p) {
  return gen::build_interleaved(p);
}

}  // namespace weft::detail
