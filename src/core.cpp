// weft::compiled: the core's run-time work that every simulating file would otherwise compile
// again — lowering, with the legality check and the program builder (schedule/impl/lower.ipp).
#include <weft/schedule/impl/lower.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
