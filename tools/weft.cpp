// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality,
// simulate, run on in-process ranks, plan context parallelism and training jobs, search.
// `weft --help` and `weft SUBCOMMAND --help` list the options; the command line is parsed in
// cli.cpp, and each subcommand is carried out by its own file under commands/.
//
// Exit codes: 0 done (legal, generated, simulated), 1 illegal, 2 bad input (arguments, files,
// impossible configurations, limits; docs/limits.md). Every error is one line on stderr.
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <variant>

#include <weft/core/error.hpp>
#include "cli.hpp"
#include "commands/common.hpp"

int main(int argc, char** argv) {
  const weft::cli::parsed p = weft::cli::parse(argc, argv);
  if (!p.run) {
    std::cout << p.out;
    std::cerr << p.err;
    return p.exit_code;
  }
  const std::string hint = weft::cli::help_hint("weft " + std::string(weft::cli::name_of(p.what)));
  // Every failure is one message and an exit code; nothing aborts.
  try {
    return std::visit([](const auto& o) { return weft::cli::run_command(o); }, p.what);
  } catch (const weft::cli::stop& e) {
    std::cerr << e.what() << "\n";
    return e.code;
  } catch (const weft::config_error& e) {  // an impossible configuration or a limit
    std::cerr << e.what() << "\n" << hint << "\n";
    return weft::cli::exit_bad_input;
  } catch (const std::bad_alloc&) {
    std::cerr << "weft: out of memory; the request is too large for this machine "
                 "(docs/limits.md)\n";
    return weft::cli::exit_bad_input;
  } catch (const std::exception& e) {
    std::cerr << "weft: " << e.what() << "\n";
    return weft::cli::exit_bad_input;
  }
}
