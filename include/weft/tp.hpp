// 2D tensor parallelism: the tp_x x tp_y grid, its sharded layers, a linear's overlaps as
// schedules, and running them (a linear, or an attention + MLP layer) on in-process ranks. Needs
// the `weft::nn` target (Eigen 3).
#pragma once

#include <weft/tp/grid.hpp>
#include <weft/tp/layer_run.hpp>
#include <weft/tp/layers.hpp>
#include <weft/tp/run.hpp>
#include <weft/tp/schedule.hpp>
