// Live activations per rank, counted in (micro-batch, chunk) units: a unit becomes live at its
// first forward op and is freed with its last backward op (or, without backward, its last
// forward op). Walked in issue order, which is the order memory is claimed on a device.
#pragma once

#include <cstdint>

#include <weft/schedule/schedule.hpp>

namespace weft {

namespace detail {
constexpr bool releases(const model_desc& m, const op& o) noexcept {
  return m.backward ? o.ph != phase::F : o.ph == phase::F;
}

/// Calls `on_claim(rank, op index, live)` whenever a rank's live activations grow, each unit
/// weighing `weight(chunk)` (1: a count; a chunk's bytes: memory).
template <class Weight, class OnClaim>
constexpr void walk_live(const schedule& s, Weight&& weight, OnClaim&& on_claim) {
  const model_desc& m = s.model;
  const std::size_t units =
      static_cast<std::size_t>(m.micro) * static_cast<std::size_t>(m.chunks());
  buffer<std::uint32_t> to_release(units, 0);
  buffer<std::uint8_t> claimed(units, 0);
  const auto key = [&](const op& o) {
    return static_cast<std::size_t>(o.mb) * m.chunks() + o.chunk;
  };
  const auto counts = [&](const op& o) {
    return is_layer_stage(o.k) && o.mb < m.micro && o.chunk < m.chunks();
  };
  for (const op& o : s.ops)
    if (counts(o) && releases(m, o)) ++to_release[key(o)];
  std::uint32_t i = 0;
  for (int r = 0; r < s.ranks(); ++r) {
    decltype(weight(0)) live{0};
    const std::uint32_t last = s.end_slot(r);
    const std::uint32_t end = last == 0 ? 0 : s.slot_end[last - 1];
    for (; i < end; ++i) {
      const op& o = s.ops[i];
      if (!counts(o)) continue;
      const std::size_t k = key(o);
      if (o.ph == phase::F && !claimed[k]) {
        claimed[k] = 1;
        live += weight(o.chunk);
        on_claim(r, i, live);
      }
      if (releases(m, o) && to_release[k] > 0 && --to_release[k] == 0) live -= weight(o.chunk);
    }
  }
}
}  // namespace detail

/// Peak live activation units of every rank.
constexpr buffer<int> peak_live_activations(const schedule& s) {
  buffer<int> peak(static_cast<std::size_t>(s.ranks()), 0);
  detail::walk_live(
      s, [](int) { return 1; },
      [&](int r, std::uint32_t, int live) {
        if (live > peak[static_cast<std::size_t>(r)]) peak[static_cast<std::size_t>(r)] = live;
      });
  return peak;
}

}  // namespace weft

namespace weft {
/// Peak live activations of every rank weighed per chunk: `weight(chunk)` for each live
/// (micro-batch, chunk) unit — a chunk's activation bytes give each rank's peak in bytes.
template <class Weight>
constexpr buffer<double> peak_live_weight(const schedule& s, Weight&& weight) {
  buffer<double> peak(static_cast<std::size_t>(s.ranks()), 0.0);
  detail::walk_live(
      s, [&](int chunk) { return static_cast<double>(weight(chunk)); },
      [&](int r, std::uint32_t, double live) {
        if (live > peak[static_cast<std::size_t>(r)]) peak[static_cast<std::size_t>(r)] = live;
      });
  return peak;
}
}  // namespace weft
