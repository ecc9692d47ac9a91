// What a device computes and moves: every scenario and every cluster (plan/cluster.hpp, the
// built-in devices from public facts; a cluster file's own) prices its work the same way.
#pragma once

namespace weft {

struct device_facts {
  double peak_flops = 0;          ///< dense fp16/bf16 FLOP/s
  double efficiency = 0;          ///< what large matmuls and flash attention sustain of it
  double memory_bytes_per_s = 0;  ///< HBM bandwidth
  /// What attention's score kernels (flash attention) sustain of the peak; 0: `efficiency`.
  double attention_efficiency = 0;

  constexpr double sustained_flops() const noexcept { return peak_flops * efficiency; }
  constexpr double attention_flops() const noexcept {
    return peak_flops * (attention_efficiency > 0 ? attention_efficiency : efficiency);
  }
};

}  // namespace weft
