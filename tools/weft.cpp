// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality,
// simulate, run on in-process ranks, plan context parallelism and training jobs, search.
// `weft --help` and `weft SUBCOMMAND --help` list the options; the command line is parsed in
// cli.cpp, and each subcommand is carried out by its own file under commands/.
//
// Exit codes (failure.hpp, the one place that maps a failure's type to its code): 0 done (legal,
// generated, simulated), 1 illegal or a run that stopped, 2 bad input (arguments, files,
// impossible configurations, limits; docs/limits.md), 3 a fault in weft. Every error is one
// line on stderr that starts "weft:".
#include <exception>
#include <iostream>
#include <string>
#include <variant>

#include "cli.hpp"
#include "commands/common.hpp"
#include "failure.hpp"

int main(int argc, char** argv) {
  const weft::cli::parsed p = weft::cli::parse(argc, argv);
  if (!p.run) {
    std::cout << p.out;
    std::cerr << p.err;
    return p.exit_code;
  }
  std::cerr << p.note;
  // Every failure is one message and an exit code; nothing aborts.
  try {
    return std::visit([](const auto& o) { return weft::cli::run_command(o); }, p.what);
  } catch (...) {
    const weft::cli::failure f = weft::cli::failure_of(std::current_exception());
    std::cerr << f.message << "\n";
    if (f.shows_help)
      std::cerr << weft::cli::help_hint("weft " + std::string(weft::cli::name_of(p.what))) << "\n";
    return f.code;
  }
}
