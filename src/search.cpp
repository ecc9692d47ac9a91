// weft::compiled: the schedule search (search/search.hpp) for both time types, so that a
// trainer's file that searches generates no code for it.
#include <weft/search/search.hpp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif

namespace weft::search {
template search_result<units> find_schedule(const basic_problem<units>&, const search_options&);
template search_result<seconds> find_schedule(const basic_problem<seconds>&, const search_options&);
}  // namespace weft::search
