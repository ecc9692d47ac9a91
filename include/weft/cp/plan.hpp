// Deprecated: cp/rounds.hpp (`cp::cp_plan` is now `cp::round_assignment`).
#pragma once

#include <weft/cp/rounds.hpp>
