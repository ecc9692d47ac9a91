// 2D tensor parallelism's groups (MindSpeed's tp-2d note): tp = tp_x · tp_y ranks as a grid. Rank r
// sits at x = r mod tp_x, y = r div tp_x: the TP-X groups are contiguous runs of tp_x ranks (same
// y), the TP-Y groups stride by tp_x (same x), as MindSpeed builds them.
#pragma once

#include <string>
#include <vector>

#include <weft/core/error.hpp>

namespace weft::tp {

struct grid {
  int tp_x = 2, tp_y = 2;
  int base = 0;  ///< the world rank of grid rank 0

  constexpr int size() const noexcept { return tp_x * tp_y; }
  constexpr int x_of(int r) const noexcept { return (r - base) % tp_x; }
  constexpr int y_of(int r) const noexcept { return (r - base) / tp_x; }
  constexpr int rank_at(int x, int y) const noexcept { return base + y * tp_x + x; }

  /// The TP-X group of world rank `r` (its row of the grid, in x order).
  std::vector<int> x_group(int r) const {
    std::vector<int> g;
    for (int x = 0; x < tp_x; ++x) g.push_back(rank_at(x, y_of(r)));
    return g;
  }
  /// The TP-Y group of world rank `r` (its column, in y order).
  std::vector<int> y_group(int r) const {
    std::vector<int> g;
    for (int y = 0; y < tp_y; ++y) g.push_back(rank_at(x_of(r), y));
    return g;
  }
};

/// Throws `config_error` unless `tp` = tp_x · tp_y with both > 1 (the note's "need satisfy
/// tp = tp_x * tp_y", N1 > 1, N2 > 1).
inline grid make_grid(int tp, int tp_x, int tp_y) {
  const auto bad = [](const std::string& why) { throw config_error("weft: tp-2d: " + why); };
  if (tp_x < 2 || tp_y < 2)
    bad("tp_x and tp_y must both be > 1 (tp_x = " + std::to_string(tp_x) +
        ", tp_y = " + std::to_string(tp_y) + "); with one of them 1 use 1D tensor parallelism");
  if (tp_x > 4096 || tp_y > 4096 || tp_x * tp_y != tp)
    bad("need satisfy tp = tp_x * tp_y (tp = " + std::to_string(tp) +
        ", tp_x = " + std::to_string(tp_x) + ", tp_y = " + std::to_string(tp_y) + ")");
  return {.tp_x = tp_x, .tp_y = tp_y};
}

/// Megatron's 1D tensor parallelism with sequence parallelism, as a grid: tp x 1. Its TP-Y
/// groups are single ranks, so every collective over them is a copy and the layers in
/// layers.hpp become Megatron's column- and row-parallel pairs ([s / tp, H] between layers).
inline grid one_d_grid(int tp) {
  if (tp < 1 || tp > 4096)
    throw config_error("weft: tp: the tensor-parallel size must be in [1, 4096], not " +
                       std::to_string(tp));
  return {.tp_x = tp, .tp_y = 1};
}

/// What one rank sends in a layer's forward, in bytes of `value_bytes` each, for s tokens,
/// hidden H and FFN width F (docs/tp-2d.md derives them): rings, as `rank_comm` counts.
struct layer_volume {
  double mlp = 0, attention = 0;
};
constexpr layer_volume forward_volume(const grid& g, double s, double H, double F,
                                      double value_bytes) noexcept {
  const double X = g.tp_x, Y = g.tp_y, n = X * Y, b = value_bytes;
  // fc1: all-gather [s/X, H/Y] over X, reduce-scatter [s, F/X] over Y; fc2 the reverse.
  const double mlp = (2 * (X - 1) * s * H / n + 2 * (Y - 1) * s * F / n) * b;
  // QKV: all-gather over X, reduce-scatter [s, 3H/X] over Y; k and v's rows gathered over Y;
  // the projection: all-gather [s/Y, H/X] over Y, reduce-scatter [s, H/Y] over X.
  const double attention = (2 * (X - 1) * s * H / n + 6 * (Y - 1) * s * H / n) * b;
  return {mlp, attention};
}

}  // namespace weft::tp
