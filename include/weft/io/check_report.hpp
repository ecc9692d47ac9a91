// A checker's report as data: every violation with its rule, fault, place and ops, the ops a
// deadlock leaves stuck, and whether PyTorch's own simulator would stall on a legal program —
// one form for `weft check`, `weft verify` and the Python module.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include <weft/core/op.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/schedule/violation.hpp>
#include <weft/sim/unit_steps.hpp>

namespace weft {

/// How many violations a report shows before "and N more".
inline constexpr std::size_t violations_shown = 20;

/// The checker collects this many violations at most; a report shows `violations_shown` and
/// counts the rest.
inline constexpr check_options report_check_options{.max_violations = 100'000};

/// The fault's name as the enumerator spells it (violation.hpp).
constexpr std::string_view name_of(fault f) noexcept {
  constexpr std::array<std::string_view, 16> names{"none",
                                                   "outside_model",
                                                   "wrong_rank",
                                                   "duplicate",
                                                   "missing",
                                                   "mixed_backward",
                                                   "runs_before_producer",
                                                   "producer_missing",
                                                   "same_stream",
                                                   "dependent_in_slot",
                                                   "cycle",
                                                   "unmatched_send",
                                                   "unmatched_recv",
                                                   "mismatched_transfer",
                                                   "over_bound",
                                                   "bad_model"};
  static_assert(static_cast<std::size_t>(fault::bad_model) + 1 == names.size(),
                "a name for every fault");
  const auto i = static_cast<std::size_t>(f);
  return i < names.size() ? names[i] : "unknown";
}

/// Why PyTorch's simulator would refuse legal program `p` (lowered from a PyTorch CSV), or
/// nothing. PyTorch's runtime (`_PipelineScheduleRuntime`) posts a RECV without blocking and
/// waits for it at the compute that needs the data, as weft does, and loading a compute_comms
/// CSV simulates nothing; but `_simulate_comms_compute` (PyTorch's tests, `_simulate()`) holds a
/// rank at a RECV until the peer's SEND was issued (`weft::unit_steps`), and raises there.
inline std::optional<std::string> pytorch_simulator_refusal(const program& p) {
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

/// One violation: its rule (number and name), fault, where (rank, slot: -1 where none), the op
/// it concerns and the other op it names (what it needs, duplicates or waits for), and the
/// message the tool prints.
inline nlohmann::ordered_json violation_json(const violation& v) {
  nlohmann::ordered_json j{{"rule", static_cast<int>(v.code)},
                           {"rule_name", std::string(name_of(v.code))},
                           {"fault", std::string(name_of(v.what))},
                           {"rank", v.rank},
                           {"slot", v.slot},
                           {"op", to_string(v.subject)}};
  if (v.other_rank >= 0 || v.what == fault::producer_missing || v.what == fault::missing) {
    j["other"] = to_string(v.other);
    j["other_rank"] = v.other_rank;
    j["other_slot"] = v.other_slot;
  }
  j["message"] = to_string(v);
  return j;
}

/// The report: legal or not, the first `limit` violations, how many more, the ops each rank is
/// stuck at when it deadlocks, and `note` (what else a user should know of a legal schedule).
inline nlohmann::ordered_json check_json(const report& r, std::size_t limit = violations_shown,
                                         const std::optional<std::string>& note = {}) {
  nlohmann::ordered_json v = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.violations.size() && i < limit; ++i)
    v.push_back(violation_json(r.violations[i]));
  nlohmann::ordered_json blocked = nlohmann::ordered_json::array();
  for (const violation& b : r.blocked) blocked.push_back(to_string(b));
  const std::size_t more = r.violations.size() > limit ? r.violations.size() - limit : 0;
  nlohmann::ordered_json j{
      {"legal", r.ok()}, {"violations", v}, {"more_violations", more}, {"blocked", blocked}};
  if (note) j["note"] = *note;
  return j;
}

}  // namespace weft
