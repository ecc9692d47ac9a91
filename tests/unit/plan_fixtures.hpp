// The planning tests' small cases, whose FLOPs and bytes the tests derive by hand: a dense model
// of hidden 1024 (8 heads of 128, GeLU over 4096, no biases, 1000 tokens of vocabulary) and a
// device that sustains its whole peak of 1 PFLOP/s, with 1 TB/s of HBM.
#pragma once

#include <weft/plan/cluster.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan::testing {

inline transformer tiny_dense(int layers) {
  transformer m;
  m.model_type = "tiny";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 4096;
  m.vocab = 1000;
  m.mlp = mlp_kind::plain;
  return m;
}

inline cluster ideal_cluster() {
  cluster c = clusters[0];
  c.device = {.peak_flops = 1e15, .efficiency = 1, .memory_bytes_per_s = 1e12};
  c.chip = {};  // no tile model: every matmul at the sustained rate, the memory at its full
  return c;
}

}  // namespace weft::plan::testing
