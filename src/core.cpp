// weft::compiled: the core's run-time work that every simulating file would otherwise compile
// again — lowering, with the legality check and the program builder (sim/impl/program.ipp).
#include <weft/sim/impl/program.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
