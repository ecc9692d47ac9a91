// The run-time copies of the generators of zero_bubble_v.hpp, compiled once into `weft::compiled`
// (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them where called.
#pragma once

#include <weft/generators/zero_bubble_v.hpp>

WEFT_COMPILE_STEPS(weft::gen::zb_v)
