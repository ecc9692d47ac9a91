// The checker at run time (schedule/verify.hpp): part of the header in header-only builds,
// compiled once into `weft::compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <weft/schedule/verify.hpp>

namespace weft::detail {

WEFT_DECL report check_at_run_time(const schedule& s, const check_options& opt) {
  return checker(s, opt).run();
}

}  // namespace weft::detail
