// A plan's whole report, as `weft plan` prints it and the Python module returns it: the job's
// estimate, every schedule's for the same job, the best plan of the sizes given, optionally the
// schedule search beyond it — and the one JSON form of all of it (`to_json`), so the tool and
// every binding say the same thing under the same names.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/memory.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/search/search.hpp>

namespace weft::plan {

/// The flags that run plan `j`'s schedule, chunks and layout in place of the job `asked`'s: its
/// stages per rank stated whenever they are not 1 or the job asked for others, so that the flags
/// replace the job's own (a schedule of a fixed count, zb-v's 2, in place of --chunks 5).
inline std::string run_flags(const job& j, const job& asked) {
  std::string f = "--schedule " + j.schedule;
  const generator_info* g = find_generator(j.schedule);
  // A schedule of a fixed count: its distinct stages a rank (DualPipe's two copies of one: 1).
  const int chunks =
      g && !g->takes_chunk_count() ? g->chunks_per_rank / (g->bidirectional ? 2 : 1) : j.chunks;
  if (chunks != 1 || asked.chunks != 1) f += " --chunks " + std::to_string(chunks);
  if (!j.layout.empty()) f += " --pipeline-layout \"" + j.layout + "\"";
  return f;
}

/// The job's estimate; a job that does not run as asked (its layers do not split, its layout
/// does not fit the schedule) is refused naming the search's plan with the same schedule, else
/// its best.
inline estimate estimate_or_hint(const transformer& m, const job& j, const cluster& c) {
  try {
    return estimate_job(m, j, c);
  } catch (const config_error& x) {
    std::string hint;
    try {
      const plan_search_result r = best_plan(m, j, c);
      const plan_choice* pick = &r.judged[*r.best];
      for (const plan_choice& choice : r.judged)
        if (choice.ran && choice.tried.schedule == j.schedule &&
            (pick->tried.schedule != j.schedule || (choice.fits && !pick->fits) ||
             (choice.fits == pick->fits && choice.step < pick->step)))
          pick = &choice;
      hint = "\nweft plan: " + run_flags(pick->tried, j) + " runs this job" +
             (pick->fits ? "" : " (though it does not fit in memory)");
    } catch (const config_error&) {
    }
    throw config_error(x.what() + hint);
  }
}

/// A schedule of the table: its estimate for the same job, or why it does not apply.
struct schedule_row {
  std::string name;
  std::optional<estimate> result;
  std::string why;
  double peak_memory() const {
    return *std::max_element(result->memory_per_rank.begin(), result->memory_per_rank.end());
  }
};

/// Every generator's schedule for the same job (`e` is the job's own).
inline std::vector<schedule_row> schedule_table(const transformer& m, const job& given,
                                                const cluster& c, const estimate& e) {
  const job j = with_megatron_forms(m, given);
  std::vector<schedule_row> table;
  for (const generator_info& g : generators) {
    job other = j;
    other.schedule = g.name;
    other.chunks = g.chunks_per_rank > 0 ? 1 : j.chunks;
    schedule_row r{std::string(g.name), std::nullopt, ""};
    try {
      r.result = g.name == j.schedule ? e : estimate_job(m, other, c);
    } catch (const config_error& x) {
      r.why = x.what();
    }
    table.push_back(std::move(r));
  }
  return table;
}

/// The estimate's stated uncertainty: the median |error| of its step against the published runs
/// docs/planning.md compares with ("Against published runs": the papers' 13 rows, 6.4 %). A
/// plan shorter than another by less is a tie: the estimate cannot tell them apart.
inline constexpr double prediction_uncertainty = 0.064;

/// Whether step `a` is shorter than step `b` by more than the estimate can tell.
inline bool clearly_shorter(seconds a, seconds b) {
  return a.count() < b.count() * (1 - prediction_uncertainty);
}

/// How far beyond the generators a report looks: the schedule search (as `weft search`) on the
/// best plan's costs, for a budget; 0 s, none.
struct report_options {
  double search_budget_s = 0;
  std::uint64_t evaluations = 0;  ///< 0: no limit but the budget
  std::uint64_t seed = 1;
  runs_on runtime = runs_on::any;  ///< the best plan only among what this runtime runs
  /// Called after each plan the best plan's search judges (`plan_search_options::progress`).
  std::function<void(std::size_t, std::size_t)> progress = {};
};

/// The schedule search's best order on the best plan's costs, as a step of the job.
struct order_search {
  search::search_result<seconds> result;
  seconds step{0};
  double peak_memory_bytes = 0;
};

/// The schedule search on the best plan `b`'s costs: orders of its ops beyond the generators',
/// no rank holding more live (micro-batch, chunk) units than that plan's busiest rank does,
/// each order's memory checked in bytes afterwards. Nothing when it found no legal order
/// (`note` says so).
inline std::optional<order_search> search_orders(const estimate& b, const report_options& o,
                                                 std::string& note) {
  search::problem prob;
  prob.model = b.sched.model;
  for (const int x : peak_live_activations(b.sched))
    prob.model.max_live = std::max(prob.model.max_live, x);
  prob.cost = b.cost;
  order_search s{search::find_schedule(
      prob, {.budget_s = o.search_budget_s, .max_evaluations = o.evaluations, .seed = o.seed})};
  if (!s.result.best) {
    note = "the schedule search found no legal order for this model";
    return std::nullopt;
  }
  const schedule order = search::to_schedule(s.result.best->p);
  const buffer<double> live = peak_live_weight(
      order, [&](int ch) { return b.chunk_activation_bytes[static_cast<std::size_t>(ch)]; });
  for (std::size_t r = 0; r < live.size(); ++r)
    s.peak_memory_bytes = std::max(s.peak_memory_bytes, b.states_per_rank[r] + live[r]);
  s.step = s.result.best->makespan + b.grad_sync + b.optimizer;
  return s;
}

/// Everything a plan reports.
struct plan_report {
  transformer model;
  job asked;
  std::string cluster;  ///< the cluster's name as the user gave it
  double hbm = 0;       ///< a device's memory, bytes
  estimate e;           ///< the job as asked
  std::optional<memory_overrun> over;
  std::string over_text;
  std::vector<schedule_row> table;
  plan_search_result found;  ///< the best plan of the job's sizes
  std::optional<order_search> better;
  std::string search_note;
  const plan_choice& best() const { return found.judged[*found.best]; }
  /// Of a device's memory, what a job may allocate (`allocatable_bytes`).
  double allocatable() const { return allocatable_bytes(hbm); }
};

/// Plans job `j` of model `m` on cluster `c` (called `cluster_name`): its estimate (or a
/// `config_error` naming a plan that runs it), every schedule's, the best plan, and with a
/// budget the schedule search.
inline plan_report make_report(const transformer& m, const job& given, const cluster& c,
                               std::string cluster_name, const report_options& o = {}) {
  const job j = with_megatron_forms(m, given);
  plan_report x;
  x.model = m;
  x.asked = j;
  x.cluster = std::move(cluster_name);
  x.hbm = c.hbm_bytes;
  x.e = estimate_or_hint(m, j, c);
  x.table = schedule_table(m, j, c, x.e);
  // The best plan: every schedule, chunk count and placement of the layers for the same sizes.
  x.found = best_plan(m, j, c, {.runtime = o.runtime, .progress = o.progress});
  if (o.search_budget_s > 0 && j.runtime == pipeline_runtime::megatron)
    x.search_note =
        "the schedule search finds orders for PyTorch's runtime, which runs any order from its "
        "CSV; Megatron's (--pipeline-runtime megatron) runs only its own 1F1B and interleaved "
        "schedules";
  else if (o.search_budget_s > 0)
    x.better = search_orders(*x.found.best_estimate, o, x.search_note);
  x.over = first_overrun(x.e, x.allocatable());
  if (x.over) x.over_text = to_string(*x.over, x.e.sched);
  return x;
}

namespace detail {
/// Bytes are whole numbers.
inline long long whole_bytes(double b) { return std::llround(b); }
}  // namespace detail

/// The breakdown per rank (breakdown.hpp) in seconds, one object a rank.
inline nlohmann::ordered_json breakdown_json(const estimate& e) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const rank_breakdown& b : e.breakdown)
    ranks.push_back({{"matmul_s", b.work.matmul.count()},
                     {"attention_s", b.work.attention.count()},
                     {"elementwise_s", b.work.elementwise.count()},
                     {"recompute_s", b.work.recompute.count()},
                     {"tp_comm_s", b.work.tp.count()},
                     {"cp_comm_s", b.work.cp.count()},
                     {"ep_comm_s", b.work.ep.count()},
                     {"launch_s", b.work.launch.count()},
                     {"hidden_by_overlap_s", b.hidden.count()},
                     {"slowed_by_contention_s", b.slowed.count()},
                     {"pp_wait_s", b.transfers.count()},
                     {"bubble_s", b.bubble.count()},
                     {"dp_sync_s", b.grad_sync.count()},
                     {"optimizer_s", b.optimizer.count()},
                     {"step_s", b.step.count()},
                     {"forward_per_chunk_s", b.F.count()},
                     {"backward_per_chunk_s", b.B.count()},
                     {"weight_grad_per_chunk_s", b.W.count()}});
  return ranks;
}

/// The report as `weft plan --json` prints it: seconds as numbers of seconds, bytes as whole
/// numbers, per-rank figures as arrays (docs/planning.md lists the keys).
inline nlohmann::ordered_json to_json(const plan_report& x) {
  using json = nlohmann::ordered_json;
  const estimate& e = x.e;
  const auto bytes = [](const std::vector<double>& v) {
    json a = json::array();
    for (const double b : v) a.push_back(detail::whole_bytes(b));
    return a;
  };
  json j;
  j["model_type"] = x.model.model_type;
  j["parameters"] = total_parameters(x.model);
  j["activated_parameters"] = activated_parameters(x.model);
  j["cluster"] = x.cluster;
  j["devices"] = x.asked.devices();
  j["schedule"] = x.asked.schedule;
  j["pipeline_runtime"] = pipeline_runtime_names[static_cast<std::size_t>(x.asked.runtime)];
  j["micro_batches"] = x.asked.micro();
  j["data_parallel_sharding"] = std::string(name_of(x.asked.sharding));
  j["step_s"] = e.step.count();
  j["pipeline_s"] = e.pipeline.count();
  j["grad_sync_s"] = e.grad_sync.count();
  j["optimizer_s"] = e.optimizer.count();
  j["tokens_per_s"] = e.tokens_per_s;
  j["tokens_per_s_per_device"] = e.tokens_per_s / static_cast<double>(x.asked.devices());
  j["tflops_per_device"] = e.tflops_per_device;
  j["mfu"] = e.mfu;
  j["bubble_ratio"] = e.metrics.bubble_ratio;
  j["memory_per_stage_bytes"] = bytes(e.memory_per_rank);
  std::vector<double> shown;
  for (const double b : e.memory_per_rank) shown.push_back(as_nvidia_smi(b));
  j["nvidia_smi_bytes_per_stage"] = bytes(shown);
  j["breakdown_per_rank"] = breakdown_json(e);
  j["hbm_bytes"] = detail::whole_bytes(x.hbm);
  j["allocatable_bytes"] = detail::whole_bytes(x.allocatable());
  j["fits"] = !x.over;
  if (x.over) j["memory_overrun"] = x.over_text;
  json rows = json::array();
  for (const schedule_row& r : x.table) {
    json y{{"schedule", r.name}};
    if (r.result) {
      y["step_s"] = r.result->step.count();
      y["mfu"] = r.result->mfu;
      y["peak_memory_bytes"] = detail::whole_bytes(r.peak_memory());
    } else {
      y["refused"] = r.why;
    }
    rows.push_back(y);
  }
  j["schedules"] = rows;
  const plan_choice& best = x.best();
  const auto megatron = megatron_arguments(best.tried);  // none where Megatron cannot run it
  j["best"] = {{"schedule", best.tried.schedule},
               {"chunks", best.tried.chunks},
               {"pipeline_layout", best.tried.layout},
               {"flags", run_flags(best.tried, x.asked)},
               {"weft_flags", joined(weft_flags(best.tried))},
               {"megatron_arguments", megatron ? json(joined(*megatron)) : json()},
               {"runtime", runtime_for(best.tried)},
               {"tie_with_asked", !clearly_shorter(best.step, x.e.step)},
               {"step_s", best.step.count()},
               {"mfu", best.mfu},
               {"peak_memory_bytes", detail::whole_bytes(best.peak_memory_bytes)},
               {"fits", best.fits}};
  j["plans_judged"] = x.found.judged.size();
  if (x.better)
    j["search"] = {{"step_s", x.better->step.count()},
                   {"pipeline_s", x.better->result.best->makespan.count()},
                   {"peak_memory_bytes", detail::whole_bytes(x.better->peak_memory_bytes)},
                   {"found_by", x.better->result.found_by},
                   {"plans_judged", x.better->result.evaluations}};
  else if (!x.search_note.empty())
    j["search"] = {{"refused", x.search_note}};
  return j;
}

}  // namespace weft::plan
