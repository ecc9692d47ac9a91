// The weft tool's command line: which subcommand was asked for, with its options parsed,
// range-checked and read into typed values (CLI11), with no side effects, so the fuzzer can drive
// it as the tool does. Each subcommand's options are its own struct (commands/NAME.hpp).
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "commands/check.hpp"
#include "commands/compare.hpp"
#include "commands/cp_rounds.hpp"
#include "commands/generate.hpp"
#include "commands/plan.hpp"
#include "commands/run.hpp"
#include "commands/search.hpp"
#include "commands/simulate.hpp"
#include "commands/tp2d.hpp"
#include "commands/verify.hpp"
#include "options.hpp"

namespace weft::cli {

/// A subcommand and its options: `run_command` carries each out.
using command = std::variant<generate_args, check_args, verify_args, simulate_args, compare_args,
                             run_args, tp2d_args, cp_rounds_args, search_args, plan_args>;

/// The subcommand's name, as typed.
inline std::string_view name_of(const command& c) {
  return std::visit([](const auto& o) { return o.name; }, c);
}

/// The outcome of parsing: a command to carry out, or an exit code with what to print.
struct parsed {
  bool run = false;  ///< true: carry out `what`; false: print `out`/`err`, exit with `exit_code`
  int exit_code = exit_ok;
  std::string out, err;
  std::string note;  ///< said on stderr before the command runs (a former name used)
  command what;
};

/// Parses `argv` (argv[0] is the program). Never exits and never throws for bad input.
parsed parse(int argc, const char* const* argv);

/// The version `weft --version` prints.
const char* version();

}  // namespace weft::cli
