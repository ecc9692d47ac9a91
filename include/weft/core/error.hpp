// The two exceptions weft throws. `config_error`: an impossible configuration (bad generator
// parameters, malformed input, an argument out of range); in a constant expression its throw
// stops compilation at the line that names the rule. `run_error`: a run that stopped, from every
// runtime weft has (the runner and the executors on it, CP attention, the TP layers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <weft/core/op.hpp>

namespace weft {

struct config_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// A run that stopped: a kernel or a hook threw, a peer process failed, or a wait passed its
/// deadline. `what()` tells the whole story in one line; the fields give its parts to a program
/// that handles it: the rank that failed (for a run that timed out, the first rank stuck; -1
/// when another process failed, which `what()` names), the op it ran or was stuck at (none when
/// the runtime has no ops, as CP attention's rounds), and the exception it raised (`cause`; none
/// for a timeout or a peer's failure).
struct run_error : std::runtime_error {
  int rank = -1;
  std::optional<op> at;
  std::exception_ptr cause;

  explicit run_error(const std::string& what, int rank_ = -1, std::optional<op> at_ = {},
                     std::exception_ptr cause_ = nullptr)
      : std::runtime_error(what), rank(rank_), at(at_), cause(std::move(cause_)) {}
};

/// What an exception says: its `what()`, or "unknown error" for one that is not a
/// `std::exception` (a failed kernel's, to name in a `run_error`).
inline std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

/// A user's text as an error message quotes it: whole when short, else the `width` characters
/// around position `at` with "..." for what is left out — so that an error about a 10 MB input is
/// still one line.
inline std::string excerpt(std::string_view text, std::size_t at = 0, std::size_t width = 60) {
  if (text.size() <= width) return std::string(text);
  const std::size_t from = std::min(at > width / 2 ? at - width / 2 : 0, text.size() - width);
  std::string out;  // appended, not concatenated: g++ 12 warns (-Wrestrict) on the latter
  out.reserve(width + 6);
  if (from > 0) out += "...";
  out += text.substr(from, width);
  if (from + width < text.size()) out += "...";
  return out;
}

/// A number as an error message prints it: a whole number below 1e18 in full ("65536"), any
/// other as printf's %g ("0.01", "1e-300", "1e+18").
inline std::string shown(double x) {
  if (std::abs(x) < 1e18 && x == std::trunc(x)) return std::to_string(static_cast<long long>(x));
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace weft
