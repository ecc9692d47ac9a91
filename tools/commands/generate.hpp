// `weft generate`: a generator's schedule printed as slots or as PyTorch's schedule CSV.
#pragma once

#include <string_view>

#include "options.hpp"

namespace weft::cli {

/// `--format`: weft's slots, or PyTorch's schedule CSV (whole chunks only).
enum class listing { text, csv };

struct generate_args {
  static constexpr std::string_view name = "generate";
  pipeline_args pipeline;
  listing format = listing::text;
};

int run_command(const generate_args& o);

}  // namespace weft::cli
