// `weft compare`: several schedules of one pipeline simulated side by side.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace weft::cli {

struct compare_args {
  static constexpr std::string_view name = "compare";
  std::vector<std::string> schedules;  ///< --schedules; `pipeline.schedule` is unused
  pipeline_args pipeline;
  cost_args cost;
  bool json = false;
};

int run_command(const compare_args& o);

}  // namespace weft::cli
