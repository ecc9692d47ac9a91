// `weft simulate`: a schedule over simulated time (makespan, bubble, exposed communication), or a
// MindSpeed note's whole scenario (--preset ampipe-16p, llama2-70b-xdc) beside its baseline.
#pragma once

#include <string_view>

#include "options.hpp"

namespace weft::cli {

struct simulate_args {
  static constexpr std::string_view name = "simulate";
  pipeline_args pipeline;
  cost_args cost;
  delay_args delay;  ///< llama2-70b-xdc's link between the data centres
  output_args output;
};

int run_command(const simulate_args& o);

}  // namespace weft::cli
