// A searching program's heap. A search judges thousands of plans, and each is lowered, checked
// and simulated into arrays of a few hundred kilobytes that are all freed when its verdict is in.
// glibc serves blocks that large by mmap until a freed one raises its threshold, and trims the
// heap's free top back to the system past a threshold of its own, so the next plan faults pages
// in again (docs/benchmarks.md, "bench/search_rate"). A program may ask it to keep freed memory
// for reuse instead. It is the program's choice — it changes the allocator of the whole process
// — so weft's library never makes it; the weft tool and the search suite do.
#pragma once

#include <cstddef>
#include <cstdlib>  // glibc's <features.h>, which says whether this is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace weft {

/// Asks glibc's allocator to serve requests below `heap_below` bytes from its heap (not by mmap)
/// and to return the heap's free top to the system only once it reaches `trim_from` bytes
/// (`mallopt`'s M_MMAP_THRESHOLD and M_TRIM_THRESHOLD), for the whole process. Both are set,
/// M_MMAP_THRESHOLD first: setting either ends glibc's sliding thresholds, and glibc never refuses
/// the second, so when it refuses the first (over half its largest heap: 32 MiB on 64-bit systems)
/// nothing is set. True when `mallopt` accepted both; false where the C library is not glibc, or
/// a value is over 1 GiB (nothing is set then). A replacement allocator (jemalloc, tcmalloc)
/// may accept and ignore them.
inline bool keep_freed_heap(std::size_t heap_below = std::size_t{32} << 20,
                            std::size_t trim_from = std::size_t{512} << 20) noexcept {
#if defined(__GLIBC__)
  constexpr std::size_t most = std::size_t{1} << 30;
  if (heap_below > most || trim_from > most) return false;
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(heap_below)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_from)) == 1;
#else
  (void)heap_below;
  (void)trim_from;
  return false;
#endif
}

}  // namespace weft
