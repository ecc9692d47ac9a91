// The generators of one_f_one_b.hpp at run time: inline in header-only builds, compiled once into
// `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/one_f_one_b.hpp>

namespace weft::detail {

WEFT_DECL schedule gpipe_at_run_time(const pipeline_params& p) { return gen::build_gpipe(p); }
WEFT_DECL schedule one_f_one_b_at_run_time(const pipeline_params& p) {
  return gen::build_one_f_one_b(p);
}
WEFT_DECL schedule zb_h1_at_run_time(const pipeline_params& p) { return gen::build_zb_h1(p); }

}  // namespace weft::detail
