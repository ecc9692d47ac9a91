// Lowering at run time (schedule/lower.hpp): part of the header in header-only builds, compiled
// once into `weft::compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <weft/schedule/lower.hpp>

namespace weft::detail {

WEFT_DECL program lower_at_run_time(const schedule& input, bool checked) {
  return lower(input, checked);
}

}  // namespace weft::detail
