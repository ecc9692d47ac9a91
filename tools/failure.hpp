// What the tool says and how it exits when a command fails: the one place that maps weft's
// exception tree (core/error.hpp) to exit codes, so that one failure ends every subcommand the
// same way, with one "weft:" line.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace weft::cli {

/// Exit codes: 0 done (legal, generated, simulated), 1 illegal (a schedule that breaks a rule, a
/// run that stopped, a plan over its memory with --check), 2 bad input, 3 a fault in weft.
inline constexpr int exit_ok = 0, exit_illegal = 1, exit_bad_input = 2, exit_internal = 3;

/// How a failure ends the command.
struct failure {
  int code = exit_internal;
  std::string message;           ///< one line (a deadlock report: one line per rank after it)
  bool shows_help = false;       ///< bad input: point at the subcommand's --help
  bool same_everywhere = false;  ///< bad input is the same on every rank: said once, by rank 0
};

/// The failure an exception stands for, by its type: `illegal_schedule` 1, `run_error` (MPI's,
/// CP attention's) 1, `config_error` and an allocation too large 2, anything else 3.
failure failure_of(const std::exception_ptr& e);

/// "weft: FILE: what", for an error a reader raised about a file the user named.
std::string in_file(std::string_view file, std::string_view what);

/// The line after a bad-input message: where `command` ("weft", "weft run") lists its options.
std::string help_hint(std::string_view command);

}  // namespace weft::cli
