// A measured figure as a function of a size: a published table's rows (a collective's bus
// bandwidth by message size, an attention kernel's rate by sequence length), read between rows
// linearly in log2 of the size — the tables step by powers of two.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>

namespace weft::perf {

struct curve_point {
  double x = 0, y = 0;  ///< the size; the figure measured at it
};

/// A table of up to 16 rows by ascending size; empty: no table (the caller's single figure).
struct curve {
  std::array<curve_point, 16> points{};
  int count = 0;

  constexpr bool empty() const noexcept { return count == 0; }
  /// The figure at the largest size measured.
  constexpr double last() const noexcept {
    return count == 0 ? 0 : points[static_cast<std::size_t>(count - 1)].y;
  }

  /// The same table with every figure `k` times as large.
  constexpr curve scaled(double k) const noexcept {
    curve out = *this;
    for (curve_point& p : out.points) p.y *= k;
    return out;
  }

  /// The figure at size `x`, between rows linearly in log2(x); beyond the table, its nearest row.
  double at(double x) const noexcept {
    if (count == 0) return 0;
    if (!(x > points[0].x)) return points[0].y;
    for (int i = 1; i < count; ++i) {
      const curve_point& a = points[static_cast<std::size_t>(i - 1)];
      const curve_point& b = points[static_cast<std::size_t>(i)];
      if (x <= b.x) return a.y + std::log2(x / a.x) / std::log2(b.x / a.x) * (b.y - a.y);
    }
    return last();
  }

  /// The share of `last()` the figure at `x` is — for a bandwidth: below the first row the
  /// time stays the first row's (a latency-bound message), so the share falls with the size.
  double share(double x) const noexcept {
    if (count == 0 || !(x > 0)) return 1;
    if (x <= points[0].x) return points[0].y / last() * x / points[0].x;
    return at(x) / last();
  }
};

}  // namespace weft::perf
