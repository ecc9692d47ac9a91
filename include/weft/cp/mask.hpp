// Attention masks for context parallelism: a dense boolean form for short sequences, a compact
// range form for long ones (blocks of queries x keys with a band of allowed offsets), coarsening
// to a smaller grid (a coarse cell has work if any entry in it attends), and the cp x cp grid of
// tasks a sequence order gives.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <weft/core/error.hpp>

namespace weft::cp {

/// Limits that keep a mask's cost bounded before anything is allocated (docs/limits.md): a
/// sequence of at most 2^24 tokens (so token arithmetic stays in `int`), a dense mask of at most
/// 2^26 entries (64 MB; 8192 x 8192), a range mask of at most 2^20 blocks.
inline constexpr int max_tokens = 1 << 24;
inline constexpr std::size_t max_dense_entries = std::size_t{1} << 26;
inline constexpr int max_blocks = 1 << 20;

/// A square boolean mask, row-major: entry (q, k) is true when query q attends to key k.
class dense_mask {
 public:
  dense_mask() = default;
  explicit dense_mask(int size) : n_(size) {
    if (size < 1) throw config_error("weft: mask: the size must be >= 1");
    if (static_cast<std::size_t>(size) * static_cast<std::size_t>(size) > max_dense_entries)
      throw config_error("weft: mask: a dense " + std::to_string(size) + " x " +
                         std::to_string(size) + " mask is over the limit of " +
                         std::to_string(max_dense_entries) +
                         " entries; plan on a coarse grid (--coarse) instead");
    bits_.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
  }
  int size() const noexcept { return n_; }
  bool operator()(int q, int k) const noexcept { return bits_[index(q, k)] != 0; }
  void set(int q, int k, bool v = true) noexcept { bits_[index(q, k)] = v ? 1 : 0; }
  std::span<const std::uint8_t> row(int q) const noexcept {
    return {bits_.data() + index(q, 0), static_cast<std::size_t>(n_)};
  }
  /// How many (query, key) pairs attend.
  std::size_t count() const noexcept {
    return static_cast<std::size_t>(std::count(bits_.begin(), bits_.end(), std::uint8_t{1}));
  }
  friend bool operator==(const dense_mask&, const dense_mask&) = default;

 private:
  std::size_t index(int q, int k) const noexcept {
    return static_cast<std::size_t>(q) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(k);
  }
  int n_ = 0;
  std::vector<std::uint8_t> bits_;
};

/// Queries [q_begin, q_end) attend to keys [k_begin, k_end) where the offset q - k lies in
/// [min_offset, max_offset]: full (no limit), causal (>= 0), a causal window of w (0 .. w-1), a
/// bidirectional one (-(w-1) .. w-1).
struct mask_block {
  static constexpr int unbounded = std::numeric_limits<int>::max();
  int q_begin = 0, q_end = 0, k_begin = 0, k_end = 0;
  int min_offset = -unbounded, max_offset = unbounded;

  bool covers(int q, int k) const noexcept {
    const long d = static_cast<long>(q) - k;
    return q >= q_begin && q < q_end && k >= k_begin && k < k_end && d >= min_offset &&
           d <= max_offset;
  }
  /// Whether some entry of the rectangle [q0, q1) x [k0, k1) attends under this block.
  bool touches(int q0, int q1, int k0, int k1) const noexcept {
    const int a0 = std::max(q0, q_begin), a1 = std::min(q1, q_end);
    const int b0 = std::max(k0, k_begin), b1 = std::min(k1, k_end);
    if (a0 >= a1 || b0 >= b1) return false;
    const long lo = static_cast<long>(a0) - (b1 - 1), hi = static_cast<long>(a1 - 1) - b0;
    return std::max<long>(lo, min_offset) <= std::min<long>(hi, max_offset);
  }
};

/// A mask as a union of blocks: long sequences without S x S storage.
struct range_mask {
  int size = 0;
  std::vector<mask_block> blocks;

  bool operator()(int q, int k) const noexcept {
    for (const mask_block& b : blocks)
      if (b.covers(q, k)) return true;
    return false;
  }
  dense_mask dense() const {
    dense_mask m(size);
    for (const mask_block& b : blocks)
      for (int q = b.q_begin; q < b.q_end; ++q) {  // only the keys the band reaches
        const long lo = std::max<long>(b.k_begin, static_cast<long>(q) - b.max_offset);
        const long hi = std::min<long>(b.k_end - 1, static_cast<long>(q) - b.min_offset);
        for (long k = lo; k <= hi; ++k) m.set(q, static_cast<int>(k));
      }
    return m;
  }
};

/// Throws unless `b` lies inside a mask of `size`.
inline void check_block(const mask_block& b, int size) {
  if (b.q_begin < 0 || b.q_begin > b.q_end || b.q_end > size || b.k_begin < 0 ||
      b.k_begin > b.k_end || b.k_end > size)
    throw config_error("weft: mask: block [" + std::to_string(b.q_begin) + ", " +
                       std::to_string(b.q_end) + ") x [" + std::to_string(b.k_begin) + ", " +
                       std::to_string(b.k_end) + ") is outside a " + std::to_string(size) +
                       "-token mask");
}

/// The `coarse` x `coarse` mask whose cell (a, b) has work when any entry of the block of
/// `size / coarse` queries x keys it stands for attends. `coarse` must divide the size; a mask
/// no larger than `coarse` is returned as it is (nothing to coarsen).
inline dense_mask coarsen(const range_mask& m, int coarse) {
  if (coarse < 1) throw config_error("weft: mask: the coarse size must be >= 1");
  for (const mask_block& b : m.blocks) check_block(b, m.size);
  if (m.size <= coarse) return m.dense();
  if (m.size % coarse != 0)
    throw config_error("weft: mask: " + std::to_string(m.size) +
                       " tokens are not a multiple of the coarse size " + std::to_string(coarse) +
                       "; pick a divisor, or plan without coarsening");
  const int f = m.size / coarse;
  dense_mask out(coarse);
  for (const mask_block& b : m.blocks) {
    if (b.q_begin == b.q_end || b.k_begin == b.k_end) continue;
    for (int a = b.q_begin / f; a <= (b.q_end - 1) / f; ++a) {
      // Only the key cells the band of offsets reaches from this row of cells.
      const long q0 = std::max(a * f, b.q_begin), q1 = std::min((a + 1) * f, b.q_end) - 1;
      const long lo = std::max<long>(b.k_begin, q0 - static_cast<long>(b.max_offset));
      const long hi = std::min<long>(b.k_end - 1, q1 - static_cast<long>(b.min_offset));
      for (long c = lo / f; lo <= hi && c <= hi / f; ++c)
        if (!out(a, static_cast<int>(c)) &&
            b.touches(a * f, (a + 1) * f, static_cast<int>(c) * f, static_cast<int>(c + 1) * f))
          out.set(a, static_cast<int>(c));
    }
  }
  return out;
}

/// As above, for a dense mask: a cell has work if any entry in its block attends.
inline dense_mask coarsen(const dense_mask& m, int coarse) {
  if (coarse < 1) throw config_error("weft: mask: the coarse size must be >= 1");
  if (m.size() <= coarse) return m;
  if (m.size() % coarse != 0)
    throw config_error("weft: mask: " + std::to_string(m.size()) +
                       " tokens are not a multiple of the coarse size " + std::to_string(coarse) +
                       "; pick a divisor, or plan without coarsening");
  const int f = m.size() / coarse;
  dense_mask out(coarse);
  for (int q = 0; q < m.size(); ++q) {
    const auto row = m.row(q);
    for (int k = 0; k < m.size(); ++k)
      if (row[static_cast<std::size_t>(k)]) out.set(q / f, k / f);
  }
  return out;
}

/// The cp x cp grid of a sequence order: `order[p]` is the token at position p; rank r holds
/// positions [r S / cp, (r + 1) S / cp). Cell (i, j) is a task when some query of slice i attends
/// to some key of slice j.
inline dense_mask grid(const dense_mask& m, std::span<const int> order, int cp) {
  const int n = m.size();
  if (cp < 1 || n % cp != 0)
    throw config_error("weft: mask: " + std::to_string(n) + " tokens do not split into " +
                       std::to_string(cp) + " equal slices");
  if (order.size() != static_cast<std::size_t>(n))
    throw config_error("weft: mask: the order has " + std::to_string(order.size()) +
                       " positions, the mask " + std::to_string(n) + " tokens");
  std::vector<int> slice(static_cast<std::size_t>(n), -1);
  for (int p = 0; p < n; ++p) {
    const int t = order[static_cast<std::size_t>(p)];
    if (t < 0 || t >= n || slice[static_cast<std::size_t>(t)] >= 0)
      throw config_error("weft: mask: the order is not a permutation of the tokens");
    slice[static_cast<std::size_t>(t)] = p / (n / cp);
  }
  dense_mask g(cp);
  for (int q = 0; q < n; ++q) {
    const auto row = m.row(q);
    const int i = slice[static_cast<std::size_t>(q)];
    for (int k = 0; k < n; ++k)
      if (row[static_cast<std::size_t>(k)]) g.set(i, slice[static_cast<std::size_t>(k)]);
  }
  return g;
}

/// The identity order of `n` tokens.
inline std::vector<int> identity_order(int n) {
  std::vector<int> o(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) o[static_cast<std::size_t>(i)] = i;
  return o;
}

}  // namespace weft::cp
