// weft::compiled: the generators at run time (generators/impl/*.ipp), so that a trainer's file
// that generates schedules compiles none of them.
#include <weft/generators/impl/controllable_memory.ipp>
#include <weft/generators/impl/dualpipe.ipp>
#include <weft/generators/impl/interleaved.ipp>
#include <weft/generators/impl/interleaved_zero_bubble.ipp>
#include <weft/generators/impl/looped_bfs.ipp>
#include <weft/generators/impl/one_f_one_b.ipp>
#include <weft/generators/impl/zero_bubble_v.ipp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif
