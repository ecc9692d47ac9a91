// Lowering transfers at run time (schedule/transfers.hpp): part of the header in header-only
// builds, compiled once into `weft::compiled` with WEFT_SEPARATE_COMPILATION.
#pragma once

#include <weft/schedule/transfers.hpp>

namespace weft::detail {

WEFT_DECL schedule with_transfers_at_run_time(const schedule& s, transfer_options o) {
  return add_transfers(s, o);
}

}  // namespace weft::detail
