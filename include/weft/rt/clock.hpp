// A cheap clock for per-op timestamps. A runner reads the time twice per op; std::chrono's
// steady_clock costs tens of nanoseconds per reading on a virtual machine (a paravirtual clock
// behind the vDSO), more than the rest of an op's bookkeeping. Where the processor has an
// invariant time-stamp counter (x86-64 with the constant-rate, non-stop TSC), `cycle_clock` reads
// it instead and converts ticks to seconds by the rate steady_clock shows between the process's
// first reading and the latest: the longer the process runs, the more exact the rate. Elsewhere,
// or with WEFT_CLOCK=steady in the environment, it is steady_clock itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define WEFT_RT_HAVE_TSC 1
#else
#define WEFT_RT_HAVE_TSC 0
#endif

namespace weft::rt {

class cycle_clock {
 public:
  using ticks = std::uint64_t;

  /// The current time in ticks of this clock.
  static ticks now() noexcept {
#if WEFT_RT_HAVE_TSC
    // The builtin, not <x86intrin.h>: that header costs every includer 100 MB of compiler memory.
    if (tsc()) return __builtin_ia32_rdtsc();
#endif
    return static_cast<ticks>(std::chrono::steady_clock::now().time_since_epoch().count());
  }

  /// Seconds per tick, as measured up to now (call once, after the readings to convert).
  static double seconds_per_tick() {
    using std::chrono::steady_clock;
    if (!tsc()) return static_cast<double>(steady_clock::period::num) / steady_clock::period::den;
    const origin& o = first();
    for (;;) {
      const auto wall = steady_clock::now();
      const ticks t = now();
      const double span = std::chrono::duration<double>(wall - o.wall).count();
      // Too soon to tell the rate apart from the clocks' resolution: wait a little.
      if (t - o.t >= 1000000 && span >= 1e-4) return span / static_cast<double>(t - o.t);
      const auto until = wall + std::chrono::microseconds(200);
      while (steady_clock::now() < until) {
      }
    }
  }

  /// Is the time-stamp counter in use? Where the processor has an invariant one
  /// (`invariant_tsc`), unless the environment says `WEFT_CLOCK=steady`: to compare the two, or
  /// where reading the counter is slow (a hypervisor that traps it).
  static bool tsc() noexcept {
    static const bool use = [] {
      const char* choice = std::getenv("WEFT_CLOCK");
      return invariant_tsc() && !(choice && std::string_view(choice) == "steady");
    }();
    return use;
  }

  /// Does the processor say its time-stamp counter runs at a constant rate in every power state?
  static bool invariant_tsc() noexcept {
#if WEFT_RT_HAVE_TSC
    static const bool invariant = [] {
      unsigned a = 0, b = 0, c = 0, d = 0;
      // CPUID 0x80000007, EDX bit 8: the counter runs at a constant rate in every power state.
      return __get_cpuid(0x80000007u, &a, &b, &c, &d) != 0 && (d & (1u << 8)) != 0;
    }();
    return invariant;
#else
    return false;
#endif
  }

  /// The clock in use, by name: "tsc" or "steady_clock".
  static const char* name() noexcept { return tsc() ? "tsc" : "steady_clock"; }

 private:
  struct origin {
    std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
    ticks t = now();
  };
  static origin& first() {
    static origin o;
    return o;
  }

 public:
  /// Takes the first reading (the origin of the rate), if nothing has yet: call before a run.
  static void start() { (void)first(); }
};

}  // namespace weft::rt
