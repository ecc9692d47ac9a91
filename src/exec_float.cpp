// weft::exec_compiled: the built-in dense and MoE models and their executors for float (the other
// element type in a file of its own: the two build in parallel, 800 MB each).
#include <weft/exec/impl/dense_model.ipp>
#include <weft/exec/impl/executor.ipp>
#include <weft/exec/impl/moe_executor.ipp>
#include <weft/exec/impl/moe_layer.ipp>
#include <weft/exec/impl/moe_model.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::exec_compiled is built with WEFT_SEPARATE_COMPILATION"
#endif

namespace weft::exec {

template struct dense_model<float>;
template struct moe_layer<float>;
template struct moe_model<float>;
template class dense_executor<float>;
template class moe_executor<float>;

}  // namespace weft::exec
