// The alpha-beta model of links and collectives (docs/metrics.md): how long a message of n bytes
// takes on a link class, and a collective on p ranks. Below both the simulator (which predicts
// with it) and the runtime (whose in-process backend emulates a link with it).
#pragma once

#include <weft/core/time.hpp>

namespace weft {

/// A link class: a message of n bytes takes alpha + n * beta.
struct link_model {
  seconds alpha{0};  ///< latency
  seconds beta{0};   ///< time per byte (1 / bandwidth)

  static constexpr link_model with_bandwidth(seconds alpha, double bytes_per_s) noexcept {
    return {alpha, seconds(1.0 / bytes_per_s)};
  }
  /// NVLink/HCCS-class link inside a node: 2 us, 150 GB/s.
  static constexpr link_model intra_node() noexcept { return with_bandwidth(seconds(2e-6), 150e9); }
  /// RDMA between nodes of a data centre: 10 us, 25 GB/s.
  static constexpr link_model inter_node() noexcept { return with_bandwidth(seconds(10e-6), 25e9); }
  /// Between data centres `km` apart (MindSpeed's pp-cross-dc-comm-overlap note): the
  /// inter-node link's (`dc`) latency plus 5 ms per 1000 km of fibre, and its bandwidth divided
  /// by the interconnect's convergence ratio (what a device's port gets of the links between the
  /// centres when every device sends at once; 1: the full port).
  static constexpr link_model cross_dc(double km, double bandwidth_ratio = 1,
                                       link_model dc = inter_node()) noexcept {
    return {dc.alpha + seconds(5e-3 * km / 1000.0), dc.beta * bandwidth_ratio};
  }
};

/// Collective times on `p` ranks for `n` bytes per rank (docs/metrics.md).
namespace collective {
constexpr seconds p2p(link_model l, double n) noexcept { return l.alpha + n * l.beta; }
constexpr seconds ring_all_gather(link_model l, int p, double n) noexcept {
  return (p - 1.0) * l.alpha + (p - 1) / static_cast<double>(p) * n * l.beta;
}
constexpr seconds ring_reduce_scatter(link_model l, int p, double n) noexcept {
  return ring_all_gather(l, p, n);
}
constexpr seconds ring_all_reduce(link_model l, int p, double n) noexcept {
  return 2.0 * (p - 1) * l.alpha + 2 * (p - 1) / static_cast<double>(p) * n * l.beta;
}
constexpr seconds pairwise_all_to_all(link_model l, int p, double n) noexcept {
  return (p - 1.0) * l.alpha + (p - 1) / static_cast<double>(p) * n * l.beta;
}
/// Tensor parallelism around one block (attention, or an MLP) on p ranks, n bytes of its full
/// activation: with sequence parallelism an all-gather before it and a reduce-scatter after,
/// without it an all-reduce after (Megatron's layout).
constexpr seconds tensor_parallel_block(link_model l, int p, double n,
                                        bool sequence_parallel) noexcept {
  return sequence_parallel ? 2.0 * ring_all_gather(l, p, n) : ring_all_reduce(l, p, n);
}
}  // namespace collective

/// A pipeline transfer's shape: what one device of a stage holds of a micro-batch's activation.
struct pipeline_activation {
  double micro_batch_size = 1, seq = 0, hidden = 0;
  int tp = 1, cp = 1;
  bool sequence_parallel = false;
  double bytes_per_value = 2;  ///< bf16
};

/// The bytes one device sends per pipeline transfer: its share of the activation (or its
/// gradient) — the sequence split over context parallelism, and over tensor parallelism with
/// sequence parallelism (Megatron then sends seq / tp tokens per device). The one rule for a
/// planned job (plan/estimate.hpp) and the cross-DC scenario (sim/xdc_preset.hpp).
constexpr double pipeline_transfer_bytes(const pipeline_activation& a) noexcept {
  const double tokens = a.micro_batch_size * a.seq / a.cp;
  return tokens * a.hidden * a.bytes_per_value / (a.sequence_parallel ? a.tp : 1);
}

}  // namespace weft
