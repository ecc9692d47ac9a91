// libFuzzer harness: PyTorch schedule CSV, read then checked, and lowered when legal. Any input
// must give a schedule or a csv_error; never a crash, a hang or an allocation out of proportion.
// A schedule the checker calls legal runs to the end under the one semantics (the simulator
// never stops short); PyTorch's unit-step view may still be stuck on it (it holds a rank at a
// RECV, PyTorch's runtime does not), and then it names the op it holds, which `weft verify`
// reports.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/simulate.hpp>
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
  const weft::unit_timeline t =
      weft::simulate(p, weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 1}));
  if (t.deadlocked()) __builtin_trap();  // legal means it runs to the end
  const weft::unit_step_result u = weft::unit_steps(p);
  if (u.stuck && u.waiting == weft::npos) __builtin_trap();  // stuck: named
  return 0;
}
