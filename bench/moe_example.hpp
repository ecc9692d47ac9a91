// The MoE example the calibration benchmarks run (in-process: calibrate.cpp; over MPI:
// mpi_moe.cpp): 2 pipeline ranks x 2 expert-parallel replicas, 8 micro-batches of the demo model.
#pragma once

#include <weft/exec/moe_model.hpp>

namespace weft::bench {

inline constexpr int pipeline_ranks = 2, replicas = 2, micro = 8;

/// The demo model cut into `stages` stages of `layers` MoE layers each.
inline exec::moe_config example_config(int stages, int layers) {
  exec::moe_config c = exec::demo_config();
  c.stages = stages;
  c.layers = layers;
  c.micro = micro;
  c.replicas = replicas;
  c.seed = 3;
  return c;
}

}  // namespace weft::bench
