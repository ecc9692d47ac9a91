// A tiny MoE transformer for executing sub-stage schedules: each model stage is a stack of MoE
// layers (moe_layer.hpp), the loss is the mean squared error of the last stage's output against a
// target. With expert parallelism the world holds `replicas` copies of every pipeline rank; each
// copy trains on its own data and holds experts / replicas of every layer's routed experts
// (expert e on replica e / (experts / replicas)), so dispatch and combine cross ranks. Everything
// comes from a seed, so a run and the serial reference start from the same numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <weft/config.hpp>
#include <weft/core/error.hpp>
#include <weft/exec/moe_layer.hpp>
#include <weft/nn/experts.hpp>

namespace weft::exec {

struct moe_config {
  int stages = 2;  ///< model stages (a pipeline's chunks carry them)
  int layers = 1;  ///< MoE layers per stage
  int tokens = 8;  ///< per micro-batch and replica
  int width = 8;
  int heads = 2;
  int ffn = 16;
  int experts = 4;  ///< routed experts per layer
  int top_k = 2;
  bool shared_expert = true;
  int micro = 4;
  int replicas = 1;  ///< expert-parallel degree
  /// Routing capacity (nn::router): 0 is dropless, so AMPipe's chunks change nothing; > 0 caps
  /// each expert per routing call — per AMPipe chunk, as MindSpeed computes it.
  double capacity_factor = 0;
  std::uint64_t seed = 1;
};

/// A model that trains in a blink yet whose kernels take long enough to stand out from the
/// runtime's overhead: 32 tokens of width 32, 4 heads, 4 experts (top-2) of width 64 and a
/// shared expert. What `weft run`, the training example and the calibration benchmark use.
inline moe_config demo_config() {
  moe_config c;
  c.tokens = 32;
  c.width = 32;
  c.heads = 4;
  c.ffn = 64;
  c.experts = 4;
  c.top_k = 2;
  return c;
}

/// Throws `config_error` naming the first impossible setting.
inline void validate_config(const moe_config& c) {
  const auto need = [](bool ok, const std::string& why) {
    if (!ok) throw config_error("weft: moe model: " + why);
  };
  need(c.stages >= 1 && c.layers >= 1 && c.micro >= 1, "stages, layers and micro must be >= 1");
  need(c.tokens >= 1 && c.width >= 1 && c.ffn >= 1, "tokens, width and ffn must be >= 1");
  need(c.heads >= 1 && c.width % c.heads == 0, "heads must divide width");
  need(c.experts >= 1 && c.top_k >= 1 && c.top_k <= c.experts, "top_k must be in [1, experts]");
  need(c.replicas >= 1 && c.experts % c.replicas == 0,
       "replicas (expert parallelism) must divide experts");
  need(c.capacity_factor >= 0 && c.capacity_factor <= 1e6,
       "capacity_factor must be 0 (dropless) or a positive factor");
}

template <class T>
struct moe_model {
  moe_config cfg;
  std::vector<std::vector<moe_layer<T>>> stages;            ///< [stage][layer]
  std::vector<std::vector<nn::matrix<T>>> inputs, targets;  ///< [replica][micro-batch]
  nn::attention_mask mask;

  explicit moe_model(const moe_config& c);

  /// The replica that holds routed expert `e`.
  int owner(int e) const noexcept { return e / (cfg.experts / cfg.replicas); }
  /// The loss is the mean over every micro-batch of every replica.
  T loss_divisor() const noexcept { return T(cfg.micro * cfg.replicas); }

  /// The loss and every gradient of a serial run: each micro-batch of each replica through every
  /// stage forward and back, one after the other, all experts local. Replicated parameters get
  /// the sum over replicas (what a data-parallel all-reduce gives); an expert gets every token
  /// routed to it. The reference a distributed run must match. With `degree` > 1 every layer runs
  /// as AMPipe's chunks (moe_layer::forward_chunked): the same numbers up to rounding when
  /// routing is dropless, the per-chunk capacity's when it is not.
  T serial_step(int degree = 1);
};

#ifdef WEFT_SEPARATE_COMPILATION
extern template struct moe_model<float>;
extern template struct moe_model<double>;
#endif

}  // namespace weft::exec

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/exec/impl/moe_model.ipp>
#endif
