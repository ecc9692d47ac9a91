// Adaptive context parallelism over sparse attention masks: mask families and files, the
// planner, remapping, pictures, and the attention that runs a plan. Needs the `weft::nn` target
// (Eigen 3).
#pragma once

#include <weft/cp/adaptive.hpp>
#include <weft/cp/attention.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/picture.hpp>
#include <weft/cp/remap.hpp>
#include <weft/cp/rounds.hpp>
