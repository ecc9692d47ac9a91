// weft::nn_compiled: the reference kernels that the built-in models, AMPipe's and the
// tensor-parallel layers share — attention, the norms, the router and the expert MLP — compiled
// once for float and double, so that a file using them parses declarations only.
#include <weft/nn/impl/attention.ipp>
#include <weft/nn/impl/experts.ipp>
#include <weft/nn/impl/norm.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::nn_compiled is built with WEFT_SEPARATE_COMPILATION"
#endif

namespace weft::nn {

#define WEFT_NN_INSTANTIATE(T)                                                                     \
  template matrix<T> attend<T>(const matrix<T>&, const matrix<T>&, const matrix<T>&,               \
                               const attention_mask&, Eigen::Index, int, std::vector<matrix<T>>&); \
  template void attend_backward<T>(const matrix<T>&, const matrix<T>&, const matrix<T>&,           \
                                   const matrix<T>&, const std::vector<matrix<T>>&, int,           \
                                   matrix<T>&, matrix<T>&, matrix<T>&);                            \
  template struct attention<T>;                                                                    \
  template struct rms_norm<T>;                                                                     \
  template struct layer_norm<T>;                                                                   \
  template struct router<T>;                                                                       \
  template struct expert_mlp<T>;
WEFT_NN_INSTANTIATE(float)
WEFT_NN_INSTANTIATE(double)
#undef WEFT_NN_INSTANTIATE

}  // namespace weft::nn
