// `weft cp-rounds` (MindSpeed's adaptive-cp note): a mask's sequence re-mapped and its blocks
// scheduled in rounds under a cap per rank and round.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/time.hpp>
#include "options.hpp"

namespace weft::cli {

struct cp_rounds_args {
  static constexpr std::string_view name = "cp-rounds";
  std::string mask, mask_file;  ///< one of them
  int seq = 0, cp = 0, cap = 6, coarse = 1024;
  bool remap = true;
  weft::seconds budget{2};  ///< planning time budget
  bool json = false;
  std::string svg;  ///< the re-mapped mask
};

int run_command(const cp_rounds_args& o);

}  // namespace weft::cli
