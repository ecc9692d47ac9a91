// weft::nn_compiled: the nn component's heavy run-time parts, compiled once — CP's sequence
// re-mapping (cp/impl/remap.ipp: Eigen's QR and SVD, k-means), which a file that merely includes
// cp/remap.hpp header-only pays seconds for.
#include <weft/cp/impl/remap.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::nn_compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
