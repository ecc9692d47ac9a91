// Plain SGD on a run's gradients: what turns one step of a schedule into training. The model's
// layers are updated in place, in `each_param` order, the order the run's gradients come in.
#pragma once

#include <cstddef>

#include <weft/exec/run_result.hpp>
#include <weft/exec/runner.hpp>

namespace weft::exec {

/// value -= lr * grad for every parameter of every stage and layer of `model`.
template <class T, class Model>
void sgd_step(Model& model, const run_result<T>& run, T lr) {
  for (std::size_t s = 0; s < model.stages.size(); ++s)
    for (std::size_t l = 0; l < model.stages[s].size(); ++l) {
      std::size_t k = 0;
      model.stages[s][l].each_param(
          [&](nn::param<T>& p) { p.value -= lr * run.grads.at(s).at(l).at(k++); });
    }
}

}  // namespace weft::exec
