// A searching program's heap. A search judges thousands of plans, and each is lowered, checked
// and simulated into arrays of a few hundred kilobytes each that are freed at once. glibc hands
// blocks that large back to the system (mmap, or trimming the heap's top) and the next plan
// faults every page of them in again: at 16 ranks of 64 micro-batches of MoE sub-stages about
// 800 page faults a plan; kept, such plans are judged 1.15-1.25 times as fast
// (bench/search_rate.cpp; small problems' arrays stay below glibc's thresholds, and gain nothing).
// A program may ask the allocator to keep freed memory for reuse instead. It is the program's
// choice — it changes the allocator of the whole process — so weft's library never makes it; the
// weft tool and the search benchmarks do.
#pragma once

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace weft {

/// Asks glibc's allocator to serve blocks up to `mmap_below` bytes from its heap and to keep up
/// to `trim_above` bytes freed at the heap's top (`mallopt`'s M_MMAP_THRESHOLD and
/// M_TRIM_THRESHOLD), for the whole process. True when both were set; false where the C library
/// is not glibc, or it refused a value, or a value is over 1 GiB (none is set then).
inline bool keep_freed_heap(std::size_t mmap_below = std::size_t{32} << 20,
                            std::size_t trim_above = std::size_t{512} << 20) noexcept {
#if defined(__GLIBC__)
  constexpr auto most = static_cast<std::size_t>(1) << 30;
  if (mmap_below > most || trim_above > most) return false;
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_below)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_above)) == 1;
#else
  (void)mmap_below;
  (void)trim_above;
  return false;
#endif
}

}  // namespace weft
