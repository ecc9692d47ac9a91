// weft::exec_compiled: the executors' heavy parts compiled once — the runner's loop, the
// built-in models' set-up and serial reference, and both executors, for float and double. A
// target that links it compiles with WEFT_SEPARATE_COMPILATION and parses declarations only.
#include <weft/exec/impl/executor.ipp>
#include <weft/exec/impl/moe_executor.ipp>
#include <weft/exec/impl/runner.ipp>
#include <weft/exec/impl/dense_model.ipp>
#include <weft/exec/impl/moe_model.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::exec_compiled is built with WEFT_SEPARATE_COMPILATION"
#endif

namespace weft::exec {

template struct dense_model<float>;
template struct dense_model<double>;
template struct moe_model<float>;
template struct moe_model<double>;
template class dense_executor<float>;
template class dense_executor<double>;
template class moe_executor<float>;
template class moe_executor<double>;

}  // namespace weft::exec
