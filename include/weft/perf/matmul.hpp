// A matmul's time on a device from its shape, as a GEMM library runs it (NVIDIA's "Matrix
// Multiplication Background" guide): the output is cut into tiles, each tile is one thread
// block's work on one SM, and the SMs run the tiles in waves. A partial last tile is computed
// whole (tile quantization) and a partial last wave leaves SMs idle (wave quantization), so a
// matmul reaches the device's best sustained rate only when its tiles fill whole waves; and a
// matmul too thin to reuse what it reads is bound by the memory's bandwidth instead.
#pragma once

#include <algorithm>
#include <cmath>

#include <weft/core/time.hpp>
#include <weft/perf/device.hpp>

namespace weft::perf {

/// A (batched) matmul: `batch` products of an m x k matrix and a k x n one, in `type`.
struct gemm {
  double m = 0, n = 0, k = 0;
  double batch = 1;
  dtype type = dtype::bf16;

  constexpr double flops() const noexcept { return 2 * m * n * k * batch; }
  /// What it reads and writes at least once: both operands and the result.
  constexpr double bytes() const noexcept {
    return bytes_of(type) * batch * (m * k + k * n + m * n);
  }
};

/// How a matmul runs on device `d`: its tiles, the waves they take, and the time.
struct gemm_time {
  double tiles = 0, waves = 0;
  seconds math{0};    ///< the waves of tiles at the device's sustained matmul rate
  seconds memory{0};  ///< its bytes at the memory's sustained bandwidth
  seconds time{0};    ///< the longer of the two
  /// The share of the device's sustained matmul rate it reaches: 1 for whole tiles in whole
  /// waves, less for a partial tile or wave, less again when the memory bounds it.
  double efficiency = 0;
};

/// The time of matmul `g` on device `d`. A tile of `d.tile` outputs over the whole k costs one
/// SM 2 tile.m tile.n k FLOPs at its share of the sustained rate (`d.matmul_flops(type) / sms`);
/// `ceil(tiles / sms)` waves of them run one after another.
inline gemm_time time_of(const device& d, const gemm& g) noexcept {
  gemm_time out;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return out;
  if (d.sms > 0) {
    out.tiles = std::ceil(g.m / d.tile.m) * std::ceil(g.n / d.tile.n) * g.batch;
    out.waves = std::ceil(out.tiles / d.sms);
    const double per_sm = d.matmul_flops(g.type) / d.sms;
    out.math = seconds(out.waves * 2 * d.tile.m * d.tile.n * g.k / per_sm);
  } else {  // no tile model: the sustained rate at any shape
    out.math = seconds(g.flops() / d.matmul_flops(g.type));
  }
  out.memory = seconds(g.bytes() / d.memory_bytes_per_s());
  out.time = std::max(out.math, out.memory);
  out.efficiency = g.flops() / d.matmul_flops(g.type) / out.time.count();
  return out;
}

}  // namespace weft::perf
