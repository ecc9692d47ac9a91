// Which machine this process runs on, as a number: what a world of processes compares to put
// the ranks of one machine on one time line (their steady clocks agree).
#pragma once

#include <cstdint>

#include <unistd.h>

namespace weft::rt {

/// This machine, as a number every process on it computes alike (its host name's FNV-1a hash,
/// 32 bits, so a double holds it exactly).
inline double this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::uint32_t h = 2166136261u;
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return static_cast<double>(h);
}

}  // namespace weft::rt
