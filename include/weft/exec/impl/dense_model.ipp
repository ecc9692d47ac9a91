// The dense_model set-up and serial reference (exec/dense_model.hpp): part of the header in
// header-only builds, compiled once for float and double into `weft::exec_compiled` with
// WEFT_SEPARATE_COMPILATION.
#pragma once

#include <weft/exec/dense_model.hpp>
#include <weft/exec/seeded.hpp>
#include <weft/exec/serial.hpp>

namespace weft::exec {

template <class T>
dense_model<T>::dense_model(const dense_config& c) : cfg(c), mask(nn::causal_mask(c.tokens)) {
  seeded_normal<T> random(c.seed);
  for (int s = 0; s < c.stages; ++s) {
    auto& stage = stages.emplace_back();
    for (int l = 0; l < c.layers; ++l) {
      dense_layer<T> layer;
      init_attention(layer, c.width, c.heads, random);
      init_mlp(layer.mlp, c.width, c.ffn, random);
      stage.push_back(std::move(layer));
    }
  }
  for (int m = 0; m < c.micro; ++m) {
    inputs.push_back(random(c.tokens, c.width, 1.0));
    targets.push_back(random(c.tokens, c.width, 1.0));
  }
}

template <class T>
T dense_model<T>::serial_step() {
  T loss = 0;
  zero_grads(stages);
  for (int m = 0; m < cfg.micro; ++m)
    loss += serial_pass(stages, inputs[static_cast<std::size_t>(m)], mask,
                        targets[static_cast<std::size_t>(m)], T(cfg.micro));
  return loss;
}

}  // namespace weft::exec
