// The run-time copies of the generators of one_f_one_b.hpp, compiled once into `weft::compiled`
// (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them where called.
#pragma once

#include <weft/generators/one_f_one_b.hpp>

WEFT_COMPILE_STEPS(weft::gen::gpipe)
WEFT_COMPILE_STEPS(weft::gen::one_f_one_b)
WEFT_COMPILE_STEPS(weft::gen::zb_h1)
