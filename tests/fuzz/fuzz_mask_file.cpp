// libFuzzer harness: the mask file reader, then coarsening and the cp grid of what it read.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <weft/cp/mask.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/rounds.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  weft::cp::range_mask m;
  try {
    m = weft::cp::read_mask_file(in);
  } catch (const weft::cp::mask_file_error&) {
    return 0;
  }
  // Plan on a coarse grid when the size allows one; errors are fine, crashes are not.
  try {
    const int coarse = m.size % 16 == 0 ? 16 : m.size <= 16 ? m.size : 0;
    if (coarse == 0) return 0;
    const weft::cp::dense_mask c = weft::cp::coarsen(m, coarse);
    const int cp = c.size() % 4 == 0 ? 4 : 1;
    const weft::cp::dense_mask g = weft::cp::grid(c, weft::cp::identity_order(c.size()), cp);
    const weft::cp::round_assignment pl =
        weft::cp::assign_rounds(g, {.budget = weft::seconds(0.05)});
    if (!weft::cp::validate(pl, g).empty()) __builtin_trap();  // the planner's plans are valid
  } catch (const weft::config_error&) {
  }
  return 0;
}
