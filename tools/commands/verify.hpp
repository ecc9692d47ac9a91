// `weft verify`: a PyTorch schedule CSV read and checked; when legal, what PyTorch's own
// simulator would say of it.
#pragma once

#include <string>
#include <string_view>

#include "options.hpp"

namespace weft::cli {

struct verify_args {
  static constexpr std::string_view name = "verify";
  std::string file;  ///< the CSV
  bool json = false;
};

int run_command(const verify_args& o);

}  // namespace weft::cli
