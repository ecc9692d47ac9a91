// 2D tensor parallelism: the tp_x x tp_y grid and its sharded layers. Needs the `weft::nn`
// target (Eigen 3).
#pragma once

#include <weft/tp/grid.hpp>
#include <weft/tp/layers.hpp>
