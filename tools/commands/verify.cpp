// `weft verify` (verify.hpp).
#include "commands/verify.hpp"

#include <optional>
#include <string>

#include <weft/io/check_report.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/lower.hpp>
#include "commands/report.hpp"

namespace weft::cli {

int run_command(const verify_args& o) {
  const schedule s = read_csv_file(o.file);
  const report r = weft::check(s, tool_check);
  return report_check(o.json, r, r.ok() ? pytorch_simulator_refusal(lower(s)) : std::nullopt);
}

}  // namespace weft::cli
