// One unit of time. Costs, link latencies, simulated and measured timelines, metrics and
// pictures are `weft::seconds` (std::chrono's duration of double seconds: `2ms` and `1.5e-6s`
// convert to it). Unit-free work with formulas — the DualPipe paper's F, B, W, where a forward
// chunk costs 1 — uses `weft::units`, a distinct type: a cost in units beside one in seconds
// fails to compile, and going from one to the other takes an explicit scale.
#pragma once

#include <compare>
#include <concepts>
#include <version>

// In C++20 <chrono> also brings calendars, time zones and their I/O: 45 MB more compiler memory
// in every file that includes it. libstdc++ keeps durations and clocks apart.
#if defined(__GLIBCXX__) && __has_include(<bits/chrono.h>)
#include <bits/chrono.h>
#else
#include <chrono>
#endif

namespace weft {

using seconds = std::chrono::duration<double>;

/// Unit-free schedule time ("schedule units"): a plain number is one, a duration is not.
class units {
 public:
  using rep = double;

  constexpr units() noexcept = default;
  constexpr units(double v) noexcept : v_(v) {}  // NOLINT: a plain number is unit-free time

  constexpr double count() const noexcept { return v_; }
  /// Real time, given what one unit stands for.
  constexpr seconds at(seconds per_unit) const noexcept { return seconds(v_ * per_unit.count()); }

  constexpr units operator-() const noexcept { return units(-v_); }
  constexpr units& operator+=(units o) noexcept { return v_ += o.v_, *this; }
  constexpr units& operator-=(units o) noexcept { return v_ -= o.v_, *this; }
  constexpr units& operator*=(double f) noexcept { return v_ *= f, *this; }
  constexpr units& operator/=(double f) noexcept { return v_ /= f, *this; }
  friend constexpr units operator+(units a, units b) noexcept { return units(a.v_ + b.v_); }
  friend constexpr units operator-(units a, units b) noexcept { return units(a.v_ - b.v_); }
  friend constexpr units operator*(units a, double f) noexcept { return units(a.v_ * f); }
  friend constexpr units operator*(double f, units a) noexcept { return units(f * a.v_); }
  friend constexpr units operator/(units a, double f) noexcept { return units(a.v_ / f); }
  friend constexpr double operator/(units a, units b) noexcept { return a.v_ / b.v_; }
  friend constexpr bool operator==(units, units) noexcept = default;
  friend constexpr auto operator<=>(units, units) noexcept = default;

 private:
  double v_ = 0;
};

/// The two kinds of time weft computes with.
template <class T>
concept time_type = std::same_as<T, seconds> || std::same_as<T, units>;

/// A unit's name for tables and axes.
template <time_type T>
constexpr const char* unit_name() noexcept {
  return std::same_as<T, seconds> ? "s" : "units";
}

}  // namespace weft
