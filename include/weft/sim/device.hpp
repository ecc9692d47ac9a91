// The devices the presets run on, from public facts: one place for a device's numbers, so every
// scenario that names a device prices its work the same way.
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

/// Ascend 910B (Atlas 800T A2): 313 TFLOP/s fp16 peak, 60% sustained, 1.6 TB/s HBM; its links
/// are link_model::intra_node (HCCS) and inter_node (one 200 Gb/s RoCE port per device).
inline constexpr device_facts ascend_910b{
    .peak_flops = 313e12, .efficiency = 0.6, .memory_bytes_per_s = 1.6e12};

}  // namespace weft
