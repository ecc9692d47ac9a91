// When each op of a program ran: the result type of both simulators and of the executor.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/core/op.hpp>
#include <weft/core/time.hpp>

namespace weft {

/// A stretch of time in which an op ran below full rate: a link it shared, or its device busy
/// with the other kind of work (only the rate simulator, sim/contended.hpp, records them).
template <time_type T>
struct basic_slowed {
  std::uint32_t op = 0;  ///< an op of the program
  T from{0}, to{0};
  double rate = 1;  ///< the share of full speed it ran at
};

using slowed_stretch = basic_slowed<seconds>;

/// When each op of a program ran, simulated or measured: what the simulators and the executor
/// produce alike, and what traces, pictures and metrics read.
template <time_type T>
struct basic_timeline {
  using duration = T;
  buffer<T> start, finish;  ///< per op of the program; negative if it never ran
  T makespan{0};
  /// On a deadlock, per rank the first op (in issue order) that never completed (`npos`
  /// for a rank that finished), else empty.
  buffer<std::uint32_t> blocked;
  /// Where ops ran below full rate, per stretch of one rate; empty without contention.
  buffer<basic_slowed<T>> slowed;
  constexpr bool deadlocked() const noexcept { return !blocked.empty(); }
  constexpr bool ran(std::uint32_t i) const noexcept { return start[i] >= T{0}; }
  constexpr T duration_of(std::uint32_t i) const noexcept { return finish[i] - start[i]; }
};
/// Simulated in seconds, or measured.
using timeline = basic_timeline<seconds>;
/// Simulated from unit-free costs.
using unit_timeline = basic_timeline<units>;

}  // namespace weft
