// libFuzzer harness: PyTorch schedule CSV, read then checked, and lowered when legal. Any input
// must give a schedule or a csv_error; never a crash, a hang or an allocation out of proportion.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/unit_steps.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  weft::schedule s;
  try {
    s = weft::read_pytorch_csv(in);
  } catch (const weft::csv_error&) {
    return 0;
  }
  const weft::report r = weft::check(s, {.max_violations = 20});
  if (!r.ok()) return 0;
  const weft::program p = weft::lower(s);
  if (weft::unit_steps(p).stuck) __builtin_trap();  // legal means deadlock-free
  return 0;
}
