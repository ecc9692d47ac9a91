// Subcommands compiled on their own, so that a change to one (and the heavy headers it needs)
// does not rebuild the others.
#pragma once

#include "cli.hpp"

namespace weft::cli {

/// `weft tp2d` (seed: tp-2d); returns the exit code, throws as the other commands do.
int tp2d_command(const request& q);

}  // namespace weft::cli
