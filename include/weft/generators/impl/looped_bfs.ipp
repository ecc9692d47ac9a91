// The run-time copies of the generators of looped_bfs.hpp, compiled once into `weft::compiled`
// (WEFT_SEPARATE_COMPILATION, config.hpp); header-only builds instantiate them where called.
#pragma once

#include <weft/generators/looped_bfs.hpp>

WEFT_COMPILE_STEPS(weft::gen::looped_bfs)
