// A header that throws outside weft's exception tree, for the check's failing test.
#pragma once
#include <stdexcept>

inline void refuse(int n) {
  // throw std::logic_error in a comment is not a throw
  if (n < 0) throw std::length_error("negative");
}
