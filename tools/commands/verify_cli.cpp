// `weft verify`'s options (commands/verify.hpp) on CLI11: the CSV file; and the rules CLI11
// cannot express (`check`). The groups it shares with other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, verify_args& o, deferred&) {
  sub.add_option("file", o.file, "the CSV file")->required();
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const verify_args&) {}

}  // namespace weft::cli
