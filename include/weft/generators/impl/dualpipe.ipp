// The run-time copies of the generators of dualpipe.hpp, compiled once into `weft::compiled`
// (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them where called.
#pragma once

#include <weft/generators/dualpipe.hpp>

WEFT_COMPILE_STEPS(weft::gen::dualpipev)
WEFT_COMPILE_STEPS(weft::gen::dualpipe)
