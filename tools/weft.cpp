// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality,
// simulate, run on in-process ranks, plan context parallelism and training jobs, search.
// `weft --help` and `weft SUBCOMMAND --help` list the options; the command line is parsed in
// cli.cpp, and each subcommand is carried out by its own file under commands/.
//
// Exit codes (failure.hpp, the one place that maps a failure's type to its code): 0 done (legal,
// generated, simulated), 1 illegal or a run that stopped, 2 bad input (arguments, files,
// impossible configurations, limits; docs/limits.md), 3 a fault in weft. Every error is one
// line on stderr that starts "weft:".
#include <algorithm>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include <weft/core/heap.hpp>

#include "cli.hpp"
#include "commands/common.hpp"
#include "failure.hpp"

namespace {

/// With --json, a failure is also a JSON object on stdout — its message and exit code — so that
/// a program reading the output always gets JSON.
void json_failure(int argc, char** argv, const std::string& message, int code) {
  if (std::none_of(argv + 1, argv + argc,
                   [](const char* a) { return std::string_view(a) == "--json"; }))
    return;
  std::string text = message;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::cout << nlohmann::json{{"error", text}, {"exit_code", code}}.dump() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const weft::cli::parsed p = weft::cli::parse(argc, argv);
  if (!p.run) {
    std::cout << p.out;
    std::cerr << p.err;
    // The parser's message, without the line that points to --help; none when the subcommand
    // refused --json itself.
    const std::string first = p.err.substr(0, p.err.find('\n'));
    if (p.exit_code != 0 && first.find("--json") == std::string::npos)
      json_failure(argc, argv, first, p.exit_code);
    return p.exit_code;
  }
  std::cerr << p.note;
  // Every command: a search judges thousands of plans, each allocating and freeing arrays of a
  // few hundred kilobytes, kept for reuse rather than faulted in again (weft/core/heap.hpp).
  weft::keep_freed_heap();
  // Every failure is one message and an exit code; nothing aborts.
  try {
    return std::visit([](const auto& o) { return weft::cli::run_command(o); }, p.what);
  } catch (...) {
    const weft::cli::failure f = weft::cli::failure_of(std::current_exception());
    std::cerr << f.message << "\n";
    json_failure(argc, argv, f.message, f.code);
    if (f.shows_help)
      std::cerr << weft::cli::help_hint("weft " + std::string(weft::cli::name_of(p.what))) << "\n";
    return f.code;
  }
}
