// libFuzzer harness: the weft tool's command line. The input is the arguments, separated by NUL
// bytes; parsing must end in a request or an exit code with a message, and the KEY=VALUE lists
// and mask families it accepts must build or refuse cleanly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/cp/families.hpp>
#include "cli.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = weft::fuzz::arguments(data, size);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const weft::cli::parsed p = weft::cli::parse(static_cast<int>(argv.size()), argv.data());
  if (!p.run && p.exit_code == 0 && p.out.empty()) __builtin_trap();  // a stop says something
  if (!p.run && p.exit_code != 0 && p.err.empty()) __builtin_trap();
  const auto* cp = std::get_if<weft::cli::cp_rounds_args>(&p.what);
  if (p.run && cp && !cp->mask.empty()) {
    try {
      (void)weft::cp::masks::by_name(cp->mask, cp->seq < 4096 ? cp->seq : 4096);
    } catch (const weft::config_error&) {
    }
  }
  return 0;
}
