// What a run of a model gives back: the loss, the program and its measured timeline, what
// calibration reads (run_measures), and every parameter gradient — with the helpers that sum
// gradients in a fixed order and compare them with a serial reference. Eigen lives here, not in the
// runner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include <weft/nn/tensor.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/run_measures.hpp>
#include <weft/schedule/timeline.hpp>

namespace weft::exec {

template <class T>
struct run_result : run_measures {
  T loss = 0;
  program prog;
  timeline time;  ///< measured (replica 0), in seconds from the start of the run
  /// Per model stage and layer, the gradient of every parameter (summed over micro-batches,
  /// replicas and the chunks that carry the stage), in the layer's `each_param` order.
  std::vector<std::vector<std::vector<nn::matrix<T>>>> grads;
};

/// The model stage chunk `c` carries: DualPipe carries the model twice, chunk c and
/// c + chunks/2 hold the same stage.
constexpr int stage_of_chunk(const model_desc& m, int c) noexcept {
  return m.bidirectional && c >= m.chunks() / 2 ? c - m.chunks() / 2 : c;
}

/// Adds every parameter gradient of `layer` into `into` (one matrix per parameter, in
/// `each_param` order), creating them on first use. Callers add in a fixed order, so repeated
/// runs are equal bit for bit.
template <class Layer, class T>
void add_grads(Layer& layer, std::vector<nn::matrix<T>>& into) {
  std::size_t k = 0;
  layer.each_param([&](nn::param<T>& p) {
    if (into.size() <= k) into.push_back(nn::matrix<T>::Zero(p.grad.rows(), p.grad.cols()));
    into[k++] += p.grad;
  });
}

/// Do two runs agree bit for bit: the same loss and every gradient equal?
template <class T>
bool same_bits(const run_result<T>& a, const run_result<T>& b) {
  if (a.loss != b.loss || a.grads.size() != b.grads.size()) return false;
  for (std::size_t s = 0; s < a.grads.size(); ++s) {
    if (a.grads[s].size() != b.grads[s].size()) return false;
    for (std::size_t l = 0; l < a.grads[s].size(); ++l) {
      if (a.grads[s][l].size() != b.grads[s][l].size()) return false;
      for (std::size_t k = 0; k < a.grads[s][l].size(); ++k)
        if (a.grads[s][l][k] != b.grads[s][l][k]) return false;
    }
  }
  return true;
}

/// The largest relative error (Frobenius norm of the difference over the reference's norm) of
/// any parameter gradient of a run against a reference model that has run its `serial_step`.
template <class T, class Model>
double max_grad_rel_err(const run_result<T>& run, Model& reference) {
  double worst = 0;
  for (std::size_t s = 0; s < reference.stages.size(); ++s)
    for (std::size_t l = 0; l < reference.stages[s].size(); ++l) {
      std::size_t k = 0;
      reference.stages[s][l].each_param([&](nn::param<T>& p) {
        const nn::matrix<T>& g = run.grads.at(s).at(l).at(k++);
        const double scale = std::max(1e-30, static_cast<double>(p.grad.norm()));
        worst = std::max(worst, static_cast<double>((g - p.grad).norm()) / scale);
      });
    }
  return worst;
}

}  // namespace weft::exec
