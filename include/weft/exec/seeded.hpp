// Seeded parameters and data for the reference models: the same seed gives the same numbers, so a
// run and its serial reference start alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include <weft/nn/tensor.hpp>

namespace weft::exec {

/// Matrices of normal numbers from one seeded generator, in the order they are asked for.
template <class T>
class seeded_normal {
 public:
  explicit seeded_normal(std::uint64_t seed) : rng_(seed) {}
  nn::matrix<T> operator()(int rows, int cols, double scale) {
    nn::matrix<T> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(scale * normal_(rng_));
    return m;
  }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

/// A pre-norm layer's attention half: unit norm gains, attention weights ~ N(0, 1/width).
template <class T, class Layer>
void init_attention(Layer& layer, int width, int heads, seeded_normal<T>& random) {
  layer.norm1.g = nn::param<T>(nn::matrix<T>::Ones(1, width));
  layer.norm2.g = nn::param<T>(nn::matrix<T>::Ones(1, width));
  layer.attn.heads = heads;
  for (nn::param<T>* p : {&layer.attn.wq, &layer.attn.wk, &layer.attn.wv, &layer.attn.wo})
    *p = nn::param<T>(random(width, width, 1.0 / std::sqrt(static_cast<double>(width))));
}

/// An MLP (dense layer, routed or shared expert) width -> ffn -> width, scaled to keep unit
/// variance.
template <class T, class Mlp>
void init_mlp(Mlp& mlp, int width, int ffn, seeded_normal<T>& random) {
  mlp.w1 = nn::param<T>(random(width, ffn, 1.0 / std::sqrt(static_cast<double>(width))));
  mlp.w2 = nn::param<T>(random(ffn, width, 1.0 / std::sqrt(static_cast<double>(ffn))));
}

}  // namespace weft::exec
