// The run-time copies of the generators of controllable_memory.hpp, compiled once into
// `weft::compiled` (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them
// where called.
#pragma once

#include <weft/generators/controllable_memory.hpp>

WEFT_COMPILE_STEPS(weft::gen::v_half)
WEFT_COMPILE_STEPS(weft::gen::v_min)
