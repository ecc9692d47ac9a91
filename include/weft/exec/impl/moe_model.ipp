// The moe_model set-up and serial reference (exec/moe_model.hpp): part of the header in
// header-only builds, compiled once for float and double into `weft::exec_compiled` with
// WEFT_SEPARATE_COMPILATION.
#pragma once

#include <string>
#include <vector>

#include <weft/exec/moe_model.hpp>
#include <weft/exec/seeded.hpp>
#include <weft/exec/serial.hpp>

namespace weft::exec {

template <class T>
moe_model<T>::moe_model(const moe_config& c) : cfg(c) {
  validate_config(c);
  mask = nn::causal_mask(c.tokens);
  seeded_normal<T> random(c.seed);
  for (int s = 0; s < c.stages; ++s) {
    auto& stage = stages.emplace_back();
    for (int l = 0; l < c.layers; ++l) {
      moe_layer<T> layer;
      init_attention(layer, c.width, c.heads, random);
      layer.route.w = nn::param<T>(random(c.width, c.experts, 1.0 / std::sqrt(double(c.width))));
      layer.route.k = c.top_k;
      layer.route.capacity_factor = c.capacity_factor;
      layer.experts.resize(static_cast<std::size_t>(c.experts));
      for (auto& e : layer.experts) init_mlp(e, c.width, c.ffn, random);
      if (c.shared_expert) init_mlp(layer.shared, c.width, c.ffn, random);
      stage.push_back(std::move(layer));
    }
  }
  inputs.resize(static_cast<std::size_t>(c.replicas));
  targets.resize(static_cast<std::size_t>(c.replicas));
  for (int r = 0; r < c.replicas; ++r)
    for (int m = 0; m < c.micro; ++m) {
      inputs[static_cast<std::size_t>(r)].push_back(random(c.tokens, c.width, 1.0));
      targets[static_cast<std::size_t>(r)].push_back(random(c.tokens, c.width, 1.0));
    }
}

template <class T>
T moe_model<T>::serial_step(int degree) {
  if (degree < 1 || cfg.tokens % degree != 0)
    throw config_error("weft: moe model: the AMPipe degree (" + std::to_string(degree) +
                       ") must divide the tokens per micro-batch (" + std::to_string(cfg.tokens) +
                       ")");
  T loss = 0;
  zero_grads(stages);
  for (int m = 0; m < cfg.micro; ++m)
    for (int r = 0; r < cfg.replicas; ++r) {
      const auto& x = inputs[static_cast<std::size_t>(r)][static_cast<std::size_t>(m)];
      const auto& t = targets[static_cast<std::size_t>(r)][static_cast<std::size_t>(m)];
      if (degree == 1) {
        loss += serial_pass(stages, x, mask, t, loss_divisor());
        continue;
      }
      // As serial_pass, each layer in chunks.
      using chunks = std::vector<typename moe_layer<T>::context>;
      std::vector<std::vector<chunks>> ctx(stages.size());
      nn::matrix<T> y = x;
      for (std::size_t s = 0; s < stages.size(); ++s)
        for (auto& layer : stages[s])
          y = layer.forward_chunked(y, mask, ctx[s].emplace_back(static_cast<std::size_t>(degree)));
      nn::matrix<T> dy = nn::mse_loss<T>::gradient(y, t) / loss_divisor();
      for (std::size_t s = stages.size(); s-- > 0;)
        for (std::size_t l = stages[s].size(); l-- > 0;) {
          dy = stages[s][l].backward_dx_chunked(dy, ctx[s][l]);
          stages[s][l].backward_dw_chunked(ctx[s][l]);
        }
      loss += nn::mse_loss<T>::value(y, t) / loss_divisor();
    }
  return loss;
}

}  // namespace weft::exec
