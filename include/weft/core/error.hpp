// The exceptions weft throws, three roots for three stories (docs/concepts.md, "Errors"):
// - `config_error`: bad input — impossible parameters, a malformed file, a size past a limit; in
//   a constant expression its throw stops compilation at the line that names the rule. Its
//   kinds: `illegal_schedule` (a schedule that breaks a legality rule), and the readers' own
//   (`csv_error`, `cp::mask_file_error`).
// - `run_error`: a run that stopped — a kernel or hook threw, a peer failed, a wait passed its
//   deadline, an MPI call failed (`mpi::mpi_error`), CP attention's rounds (`cp::cp_run_error`).
// - `internal_error`: a fault in weft itself, an invariant that did not hold; worth a report.
// A program tells them apart by type, never by message; the tool maps each to its exit code
// (docs/limits.md).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <weft/core/op.hpp>

namespace weft {

/// Bad input: what the caller asked for cannot be done (the message says why and what to change).
struct config_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// A schedule that breaks a legality rule (docs/legality.md) where a legal one is needed —
/// lowering, a run, a simulation that deadlocks. `what()` names the rule and the op; a program
/// that wants the whole report asks the checker (`check`).
struct illegal_schedule : config_error {
  using config_error::config_error;
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

/// A fault in weft itself: an invariant its own code should have kept did not hold. Not the
/// caller's input (that is `config_error`) and not the run's environment (`run_error`).
struct internal_error : std::logic_error {
  using std::logic_error::logic_error;
};

/// An error message without its leading "weft: ", to quote inside another (a reader's error
/// about a line, the tool's about a file) so that a message says "weft:" once.
constexpr std::string_view without_prefix(std::string_view what) noexcept {
  constexpr std::string_view prefix = "weft: ";
  if (what.starts_with(prefix)) what.remove_prefix(prefix.size());
  return what;
}

/// An error message with exactly one leading "weft: ", as every surface shows it (the tool's
/// stderr, the Python module's exceptions).
inline std::string with_prefix(std::string_view what) {
  constexpr std::string_view prefix = "weft: ";
  std::string out;  // appended: g++ 12 warns falsely (-Wrestrict) on some + chains
  if (!what.starts_with(prefix)) out += prefix;
  out += what;
  return out;
}

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
  std::size_t from = std::min(at > width / 2 ? at - width / 2 : 0, text.size() - width);
  std::size_t to = from + width;
  // Cut between characters, not inside one of UTF-8's multi-byte sequences.
  const auto inside = [&](std::size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (from > 0 && inside(from)) --from;
  while (to > from && inside(to)) --to;
  width = to - from;
  std::string out;  // appended, not concatenated: g++ 12 warns (-Wrestrict) on the latter
  out.reserve(width + 6);
  if (from > 0) out += "...";
  out += text.substr(from, width);
  if (from + width < text.size()) out += "...";
  return out;
}

/// A number as an error message prints it: a whole number below 1e18 in full ("65536"), any
/// other in the shortest form that reads back as the same double ("0.01", "1e-300",
/// "40000.000000000004"), so that a value just past a bound never prints as the bound.
inline std::string shown(double x) {
  if (std::abs(x) < 1e18 && x == std::trunc(x)) return std::to_string(static_cast<long long>(x));
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof text, x);
  return std::string(text, r.ptr);
}

}  // namespace weft
