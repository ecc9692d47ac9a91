// weft::compiled: the runner's loop (exec/impl/runner.ipp), compiled once for every model. It
// needs no Eigen: a model of one's own runs on it with weft::weft alone.
#include <weft/exec/impl/runner.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
