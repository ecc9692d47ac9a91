// The serial reference step both reference models share: one micro-batch through every layer of
// every stage forward, the loss, and back, accumulating every weight gradient in place.
#pragma once

#include <cstddef>
#include <vector>

#include <weft/nn/attention.hpp>
#include <weft/nn/experts.hpp>

namespace weft::exec {

/// Zeroes every parameter gradient of `stages` ([stage][layer]).
template <class Stages>
void zero_grads(Stages& stages) {
  for (auto& stage : stages)
    for (auto& layer : stage) layer.each_param([](auto& p) { p.zero_grad(); });
}

/// `x` through `stages` and back with the loss mse(y, target) / `divisor`; returns that loss.
template <class T, class Stages>
T serial_pass(Stages& stages, nn::matrix<T> x, const nn::attention_mask& mask,
              const nn::matrix<T>& target, T divisor) {
  using context = typename std::remove_cvref_t<decltype(stages[0][0])>::context;
  std::vector<std::vector<context>> ctx(stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s) {
    ctx[s].resize(stages[s].size());
    for (std::size_t l = 0; l < stages[s].size(); ++l) x = stages[s][l].forward(x, mask, ctx[s][l]);
  }
  nn::matrix<T> dy = nn::mse_loss<T>::gradient(x, target) / divisor;
  for (std::size_t s = stages.size(); s-- > 0;)
    for (std::size_t l = stages[s].size(); l-- > 0;) {
      dy = stages[s][l].backward_dx(dy, ctx[s][l]);
      stages[s][l].backward_dw(ctx[s][l]);
    }
  return nn::mse_loss<T>::value(x, target) / divisor;
}

}  // namespace weft::exec
