// The one way a runtime of weft waits on the host: for an operation's event, until it completes,
// its deadline passes, or a failure elsewhere says to stop. The runner, the results' collection,
// CP attention and the TP layers all wait through it, and word a timeout the same way.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include <weft/core/error.hpp>
#include <weft/core/time.hpp>
#include <weft/rt/stream.hpp>

namespace weft::rt {

/// A wait's limit: the point in time, and the budget it came from, to name in an error.
struct deadline {
  std::chrono::steady_clock::time_point at;
  seconds budget{0};

  /// `budget` from now; a budget past what the clock counts (infinity, say) is no limit.
  /// `config_error` for a negative budget or one that is not a number.
  static deadline after(seconds budget) {
    using clock = std::chrono::steady_clock;
    if (!(budget >= seconds{0}))
      throw config_error("weft: a wait's time-out must be 0 s or more, got " +
                         deadline{{}, budget}.budget_words());
    const auto now = clock::now();
    if (budget >= std::chrono::duration<double>(clock::time_point::max() - now))
      return {clock::time_point::max(), budget};
    return {now + std::chrono::duration_cast<clock::duration>(budget), budget};
  }
  bool passed() const { return std::chrono::steady_clock::now() >= at; }
  /// The budget in words: "30 s", "0.2 s".
  std::string budget_words() const {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", budget.count());
    return text;
  }
};

/// How a wait ended.
enum class await_end { done, stopped, timed_out };

/// How often a wait looks whether to stop: a failure elsewhere does not fire the event waited for.
inline constexpr std::chrono::milliseconds look_every{5};

/// Waits for `e` until `d`, giving up as soon as `stop()` returns true (another rank failed).
template <class Stop>
await_end await(const event& e, const deadline& d, Stop&& stop) {
  while (!e.wait_for(look_every)) {
    if (stop()) return await_end::stopped;
    if (d.passed()) return await_end::timed_out;
  }
  return await_end::done;
}
/// Waits for `e` until `d`.
inline await_end await(const event& e, const deadline& d) {
  return await(e, d, [] { return false; });
}

}  // namespace weft::rt
