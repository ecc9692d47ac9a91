// The run-time copies of the generators of interleaved_zero_bubble.hpp, compiled once into
// `weft::compiled` (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them
// where called.
#pragma once

#include <weft/generators/interleaved_zero_bubble.hpp>

WEFT_COMPILE_STEPS(weft::gen::interleaved_zero_bubble)
