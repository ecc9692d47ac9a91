// The configuration search as a user asks for it and reads it: the sizes the user gave kept
// (`kept_sizes`), and its result as the JSON `weft plan --search --json` prints and Python's
// `weft.choose` returns (`to_json`) — the counts, and per configuration its sizes, figures and
// the flags that run it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <weft/plan/configurations.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/report.hpp>

namespace weft::plan {

/// What a search of job `j` may change: all but the settings `given` names — weft's job-file
/// keys in dashes (`tp`, `pp`, `cp`, `ep`, `expert-tensor-parallel-size`, `micro-batch-size`,
/// `recompute`, `recompute-method`, `recompute-num-layers`, `data-parallel-sharding-strategy`,
/// `use-distributed-optimizer`, `no-distributed-optimizer`), which it keeps as `j` has them.
/// Sizes from a job file or a preset are not given: they only count the devices.
inline configuration_space kept_sizes(const job& j,
                                      const std::function<bool(std::string_view)>& given,
                                      long long devices = 0, runs_on runtime = runs_on::any) {
  configuration_space s;
  s.devices = devices;
  s.runtime = runtime;
  if (given("tp")) s.tp = j.tp;
  if (given("pp")) s.pp = j.pp;
  if (given("cp")) s.cp = j.cp;
  if (given("ep")) s.ep = j.ep;
  if (given("expert-tensor-parallel-size")) s.etp = j.etp();
  if (given("micro-batch-size")) s.micro_batch_size = j.micro_batch_size;
  if (given("recompute")) s.policy = j.policy;
  if (given("recompute-method")) s.recompute_method = j.recompute_method;
  if (given("recompute-num-layers")) s.recompute_num_layers = j.recompute_num_layers;
  if (given("data-parallel-sharding-strategy") || given("no-distributed-optimizer") ||
      given("use-distributed-optimizer"))
    s.sharding = j.sharding;
  return s;
}

/// A search's result with what its report needs beside it.
struct configuration_report {
  configuration_search_result result;
  double tokens_per_step = 0;  ///< the job's batch x sequence, which the search keeps
  /// A configuration's tokens a second on each device.
  double per_device(const configuration_choice& x) const {
    return tokens_per_step / x.best.step.count() / static_cast<double>(result.devices);
  }
};

/// The report as JSON: the counts, whether the search completed (else the lowest bound left),
/// the estimate's uncertainty, and the configurations fastest first — each with its sizes, step,
/// MFU, tokens a second a device, peak memory, bound, whether it ties with the first, the
/// runtime that runs it, weft's flags and Megatron's arguments (null where Megatron does not).
inline nlohmann::ordered_json to_json(const configuration_report& s) {
  using json = nlohmann::ordered_json;
  const configuration_counts& n = s.result.counts;
  json top = json::array();
  for (const configuration_choice& x : s.result.top) {
    const job& j = x.best.tried;
    const auto megatron = megatron_arguments(j);
    top.push_back(
        {{"tp", j.tp},
         {"pp", j.pp},
         {"dp", j.dp},
         {"cp", j.cp},
         {"ep", j.ep},
         {"etp", j.etp()},
         {"micro_batch_size", j.micro_batch_size},
         {"recompute", recompute_names[static_cast<std::size_t>(j.policy)]},
         {"recompute_num_layers", block_recompute(j) ? json(j.recompute_num_layers) : json()},
         {"sharding", name_of(j.sharding)},
         {"sequence_parallel", j.sequence_parallel},
         {"schedule", j.schedule},
         {"chunks", j.chunks},
         {"pipeline_layout", j.layout},
         {"step_s", x.best.step.count()},
         {"mfu", x.best.mfu},
         {"tokens_per_s_per_device", s.per_device(x)},
         {"peak_memory_bytes", static_cast<long long>(x.best.peak_memory_bytes)},
         {"bound_s", x.bound.count()},
         {"tie_with_first", !clearly_shorter(s.result.top.front().best.step, x.best.step)},
         {"runtime", runtime_for(j)},
         {"weft_flags", joined(weft_flags(j))},
         {"megatron_arguments", megatron ? json(joined(*megatron)) : json()}});
  }
  const configuration_search_result& r = s.result;
  return {{"devices", r.devices},
          {"considered", n.considered},
          {"sizings", n.sizings},
          {"pruned",
           {{"sizes", n.pruned_sizes},
            {"memory", n.pruned_memory},
            {"bound", n.pruned_bound},
            {"budget", n.unexplored}}},
          {"screened", n.screened},
          {"simulated", n.simulated},
          {"plans", n.plans},
          {"complete", r.complete},
          {"uncertainty", prediction_uncertainty},
          {"least_unexplored_s", r.complete ? json() : json(r.least_unexplored.count())},
          {"seconds", r.seconds_taken},
          {"top", top}};
}

}  // namespace weft::plan
