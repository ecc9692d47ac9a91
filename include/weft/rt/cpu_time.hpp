// CPU time, for calibration: what a thread (or the whole process) spent on a core, apart from
// the wall time it took. A unit of compute's CPU time is its work; how fast that work goes is
// for the cores to decide, and the shared-worker simulator models them (sim/shared_workers.hpp).
// A reading costs a system call (about 0.2 us), so a runner takes them only when asked to measure.
#pragma once

#include <sched.h>
#include <time.h>

#include <thread>

namespace weft::rt {

namespace detail {
inline double cpu_seconds(clockid_t clock) noexcept {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace detail

/// The calling thread's CPU time, in seconds from an arbitrary origin.
inline double thread_cpu_seconds() noexcept { return detail::cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }

/// The whole process's CPU time (every thread's), in seconds from an arbitrary origin.
inline double process_cpu_seconds() noexcept {
  return detail::cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

/// The cores this process may run on: its CPU affinity (which `taskset` and containers narrow),
/// else the machine's.
inline unsigned usable_cores() noexcept {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
#endif
  const unsigned h = std::thread::hardware_concurrency();
  return h > 0 ? h : 1;
}

}  // namespace weft::rt
