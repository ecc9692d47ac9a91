// What the two benchmarks against published runs share (published_runs.cpp, published_memory.cpp):
// reading a preset's file, and the median of the errors they summarise.
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>

namespace weft::bench {

/// The whole of file `path`; `config_error` naming it when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) throw config_error("cannot read " + path);
  return s.str();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace weft::bench
