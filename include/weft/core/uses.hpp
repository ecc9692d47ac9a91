// The (kind, phase) pairs a set of ops uses: what a model must have kernels for. Apart from the
// model binding (core/binding.hpp) so the parts that compute it need none of its templates.
#pragma once

#include <cstdint>

#include <weft/core/kinds.hpp>
#include <weft/core/op.hpp>

namespace weft {

/// The (kind, phase) pairs a schedule uses, as a structural value.
struct kind_phase_set {
  std::uint64_t bits = 0;
  constexpr bool has(kind k, phase p) const noexcept {
    return (bits >> (static_cast<int>(k) * phase_count + static_cast<int>(p))) & 1u;
  }
  constexpr kind_phase_set with(kind k, phase p) const noexcept {
    return {bits | (std::uint64_t{1} << (static_cast<int>(k) * phase_count + static_cast<int>(p)))};
  }
  /// The same without any phase of kind `k`.
  constexpr kind_phase_set without(kind k) const noexcept {
    const std::uint64_t all_phases = (std::uint64_t{1} << phase_count) - 1;
    return {bits & ~(all_phases << (static_cast<int>(k) * phase_count))};
  }
  friend constexpr bool operator==(kind_phase_set, kind_phase_set) = default;
};

/// The (kind, phase) pairs of a range of ops (a schedule's `ops`, or any container of `op`).
template <class Ops>
constexpr kind_phase_set uses_ops(const Ops& ops) noexcept {
  kind_phase_set s;
  for (const op& o : ops) s = s.with(o.k, o.ph);
  return s;
}
/// The (kind, phase) pairs anything with an `ops` member uses (a schedule, a fixed schedule).
template <class Sched>
requires requires(const Sched& s) { s.ops; }
constexpr kind_phase_set uses(const Sched& s) noexcept { return uses_ops(s.ops); }

}  // namespace weft
