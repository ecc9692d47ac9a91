// doctest's Approx for weft's time types, so a check reads `CHECK(m.makespan == Approx(7))`
// whatever unit the simulation ran in, and a failure prints the value with its unit.
#pragma once

#include <string>

#include <doctest/doctest.h>
#include <weft/core/time.hpp>

namespace doctest {
template <weft::time_type T>
bool operator==(T t, const Approx& a) {
  return t.count() == a;
}
template <weft::time_type T>
bool operator!=(T t, const Approx& a) {
  return t.count() != a;
}
template <weft::time_type T>
struct StringMaker<T> {
  static String convert(T t) {
    return (std::to_string(t.count()) + " " + weft::unit_name<T>()).c_str();
  }
};
}  // namespace doctest

namespace weft::testing {
/// Approx of a time, for comparing two times of one type.
template <time_type T>
doctest::Approx approx(T t) {
  return doctest::Approx(t.count());
}
}  // namespace weft::testing
