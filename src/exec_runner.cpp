// weft::exec_compiled, part 1 of 3: the runner's loop (exec/impl/runner.ipp), compiled once for
// every model. Parts 2 and 3 hold the built-in models and executors for float and for double,
// apart so that the library builds in parallel and no one file needs a gigabyte of memory.
#include <weft/exec/impl/runner.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::exec_compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
