// `weft check`: a generator's schedule proved legal, or its violations named (exit 1).
#pragma once

#include <string_view>

#include "options.hpp"

namespace weft::cli {

struct check_args {
  static constexpr std::string_view name = "check";
  pipeline_args pipeline;
  int max_live = 0;  ///< rule 5: live activations per rank (0: no bound)
  bool json = false;
};

int run_command(const check_args& o);

}  // namespace weft::cli
