// The facts of MindSpeed's tp-2d note's scenario (tp/preset.hpp prices it): a dense layer's
// shapes, the device, the machines' mesh. Data only, in the simulator's layer, so that the
// planner reads a preset's files into them (plan/presets.hpp) without standing above the
// tensor-parallel runtime.
#pragma once

#include <weft/core/link.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/device.hpp>

namespace weft {

/// Machines of `per_node` devices: a fast link inside one (HCCS), a slower one between two
/// (one RoCE port per device). Ascend 910B servers (Atlas 800T A2) by default.
struct node_mesh {
  int per_node = 8;
  link_model intra = link_model::intra_node();
  link_model inter = link_model::inter_node();
  /// Collectives over members on several machines run in two levels (NCCL's and HCCL's
  /// hierarchical algorithms); false: as one flat ring, as slow as its slowest link.
  bool hierarchical = true;
};

/// A dense layer with grouped-query attention and a SwiGLU MLP on a mesh of machines. The model
/// and the device have no defaults here: they are read from a model, a job and a cluster
/// (`plan::tp_layer_facts_of`; the note's run is presets/llama3-405b: llama3-405B, Llama Team
/// 2024, at tp 16 on Ascend 910B servers), so each number has one home; only the precision
/// (bf16) is assumed, and the mesh's classes of links (`node_mesh`) unless a cluster says.
struct tp_layer_facts {
  double hidden = 0, ffn = 0;
  int heads = 0, kv_heads = 0;
  double seq = 0;
  int micro_batch_size = 0;
  double bytes_per_value = 2;  ///< bf16 activations
  device_facts device{};
  node_mesh mesh{};
  /// What overlap costs (`contention_facts::published()` prices it); each linear's gathers and
  /// scatters take the link class of the group they run over (inter-node once it spans
  /// machines). Inactive by default: overlap is free.
  contention_facts contention{};

  constexpr double tokens() const noexcept { return seq * micro_batch_size; }
  constexpr double kv_width() const noexcept { return hidden * kv_heads / heads; }
};

}  // namespace weft
