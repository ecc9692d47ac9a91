// weft::compiled: the core's run-time work that every simulating file would otherwise compile
// again — lowering, with the legality check and the program builder (schedule/impl/lower.ipp),
// the check on its own (verify.ipp) and the lowering of transfers (transfers.ipp).
#include <weft/schedule/impl/lower.ipp>
#include <weft/schedule/impl/transfers.ipp>
#include <weft/schedule/impl/verify.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
