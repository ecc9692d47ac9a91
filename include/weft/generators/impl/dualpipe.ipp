// The generators of dualpipe.hpp at run time: inline in header-only builds, compiled once into
// `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/dualpipe.hpp>

namespace weft::detail {

WEFT_DECL schedule dualpipev_at_run_time(const pipeline_params& p) {
  return gen::build_dualpipev(p);
}
WEFT_DECL schedule dualpipe_at_run_time(const pipeline_params& p) { return gen::build_dualpipe(p); }

}  // namespace weft::detail
