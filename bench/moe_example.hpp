// The MoE example the calibration benchmarks run (in-process: calibrate.cpp; over MPI:
// mpi_moe.cpp): 2 pipeline ranks x 2 expert-parallel replicas, 8 micro-batches of the demo model.
#pragma once

#include <algorithm>
#include <vector>

#include <weft/exec/moe_model.hpp>
#include <weft/sim/cost.hpp>

namespace weft::bench {

inline constexpr int pipeline_ranks = 2, replicas = 2, micro = 8;

/// The median of some runs' figures: what the benchmarks report on a noisy machine.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

/// The emulated link the in-process benchmarks put under every all-to-all and transfer.
inline constexpr link_model ep_link = link_model::with_bandwidth(seconds(150e-6), 2e9);

/// The bytes of a pipeline transfer: a micro-batch's activation.
inline double activation_bytes(const exec::moe_config& c) {
  return double(c.tokens) * c.width * sizeof(float);
}

/// What `ep_link` costs, as the in-process backend charges it: an all-to-all by the values a
/// member receives (its tokens' k rows, dispatch F with the expert column, after a count
/// exchange), a transfer by its activation.
inline cost_model link_costs(const exec::moe_config& c) {
  const double rows = c.tokens * c.top_k, f = sizeof(float);
  const seconds a2a = collective::pairwise_all_to_all(ep_link, c.replicas, rows * c.width * f);
  const seconds counts = collective::pairwise_all_to_all(ep_link, c.replicas, c.replicas * f);
  const seconds dispatch =
      counts + collective::pairwise_all_to_all(ep_link, c.replicas, rows * (c.width + 1) * f);
  const seconds p2p = collective::p2p(ep_link, activation_bytes(c));
  cost_model m;
  m.set(kind::dispatch, phase::F, dispatch)
      .set(kind::dispatch, phase::B, a2a)
      .set(kind::combine, phase::F, a2a)
      .set(kind::combine, phase::B, a2a);
  for (kind k : {kind::send, kind::recv}) m.set(k, phase::F, p2p).set(k, phase::B, p2p);
  return m;
}

}  // namespace weft::bench
