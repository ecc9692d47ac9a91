// The exception weft throws for impossible configurations (bad generator parameters, malformed
// input). In a constant expression the throw stops compilation at the line that names the rule.
#pragma once

#include <stdexcept>

namespace weft {

struct config_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace weft
