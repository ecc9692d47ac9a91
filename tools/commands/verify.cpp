// `weft verify` (verify.hpp).
#include "commands/verify.hpp"

#include <optional>
#include <string>

#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/unit_steps.hpp>
#include "commands/report.hpp"

namespace weft::cli {
namespace {

/// Why PyTorch's simulator would refuse legal program `p` (lowered from a PyTorch CSV), or
/// nothing. PyTorch's runtime (`_PipelineScheduleRuntime`) posts a RECV without blocking and
/// waits for it at the compute that needs the data, as weft does, and loading a compute_comms
/// CSV simulates nothing; but `_simulate_comms_compute` (PyTorch's tests, `_simulate()`) holds a
/// rank at a RECV until the peer's SEND was issued (`weft::unit_steps`), and raises there.
std::optional<std::string> pytorch_simulator_refusal(const program& p) {
  const unit_step_result r = unit_steps(p);
  if (!r.stuck) return std::nullopt;
  std::string at = "a step where no rank can go";
  if (r.waiting != npos)
    at = "rank " + std::to_string(p.rank[r.waiting]) + "'s " +
         csv_detail::action_text(p.at(r.waiting));
  return "PyTorch's runtime runs this schedule (it posts receives without blocking and waits for "
         "them at the compute that needs the data), but PyTorch's simulator "
         "(_simulate_comms_compute) holds a rank at a RECV until the peer's SEND was issued and "
         "raises \"Schedule is not progressing\" at " +
         at;
}

}  // namespace

int run_command(const verify_args& o) {
  const schedule s = read_csv_file(o.file);
  const report r = weft::check(s, tool_check);
  return report_check(o.json, r, r.ok() ? pytorch_simulator_refusal(lower(s)) : std::nullopt);
}

}  // namespace weft::cli
