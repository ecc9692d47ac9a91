// `weft plan`: a real training job — a model's config.json, Megatron's flags, a cluster — its
// step time, throughput, MFU and memory per pipeline stage, beside every schedule that applies
// (docs/planning.md).
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <weft/io/chrome_trace.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/timeline.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/cluster_file.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/presets.hpp>
#include <weft/schedule/memory.hpp>
#include <weft/search/search.hpp>
#include "commands/common.hpp"
#include "commands/plan.hpp"

namespace weft::cli {

namespace {

using json = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw stop(exit_bad_input, "weft: plan: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The flags that run plan `j`'s schedule, chunks and layout.
std::string flags(const plan::job& j) {
  std::string f = "--schedule " + j.schedule;
  if (j.chunks != 1) f += " --chunks " + std::to_string(j.chunks);
  if (!j.layout.empty()) f += " --pipeline-layout \"" + j.layout + "\"";
  return f;
}

}  // namespace

int run_command(const plan_options& in) {
  // The model, the job and the cluster: a preset's files, or the flags (the job perhaps a file).
  plan_options q = in;
  plan::hf_model hf;
  plan::cluster_file own;
  const plan::cluster* c = nullptr;
  if (!q.preset.empty()) {
    plan::preset p = plan::read_preset(preset_dir(q.preset));
    for (const std::string& w : p.warnings) std::cerr << "weft: " << w << "\n";
    hf = std::move(p.model);
    q.job = p.job.spec;
    q.cluster = q.preset;
    own = std::move(p.cluster);
    own.spec.name = q.cluster;
    c = &own.spec;
  } else {
    hf = plan::read_hf_config(read_text(q.model_file));
    for (const std::string& w : hf.warnings) std::cerr << "weft: " << w << "\n";
    if (!q.job_file.empty()) {
      const plan::job_file f = plan::read_job(read_text(q.job_file), q.job_file);
      for (const std::string& w : f.warnings) std::cerr << "weft: " << w << "\n";
      q.job = f.spec;
    }
    // A built-in cluster, or one's own from a JSON file.
    c = plan::find_cluster(q.cluster);
    if (!c) {
      own = plan::read_cluster(read_text(q.cluster), q.cluster);
      for (const std::string& w : own.warnings) std::cerr << "weft: " << w << "\n";
      own.spec.name = q.cluster;
      c = &own.spec;
    }
  }
  const plan::transformer& m = hf.model;
  const plan::estimate e = [&] {
    try {
      return plan::estimate_job(m, q.job, *c);
    } catch (const config_error& x) {
      // A job that does not run as asked (its layers do not split, its layout does not fit the
      // schedule): name the search's plan with the same schedule, else its best.
      std::string hint;
      try {
        const plan::plan_search_result r = plan::best_plan(m, q.job, *c);
        const plan::plan_choice* pick = &r.judged[*r.best];
        for (const plan::plan_choice& choice : r.judged)
          if (choice.ran && choice.tried.schedule == q.job.schedule &&
              (pick->tried.schedule != q.job.schedule || (choice.fits && !pick->fits) ||
               (choice.fits == pick->fits && choice.step < pick->step)))
            pick = &choice;
        hint = "\nweft plan: " + flags(pick->tried) + " runs this job" +
               (pick->fits ? "" : " (though it does not fit in memory)");
      } catch (const config_error&) {
      }
      throw config_error(x.what() + hint);
    }
  }();

  // Every other schedule that applies to the same job, for the table.
  struct row {
    std::string name;
    std::optional<plan::estimate> result;
    std::string why;
  };
  std::vector<row> table;
  for (const generator_info& g : generators) {
    plan::job other = q.job;
    other.schedule = g.name;
    other.chunks = g.chunks_per_rank > 0 ? 1 : q.job.chunks;
    row r{std::string(g.name), std::nullopt, ""};
    try {
      r.result = g.name == q.job.schedule ? e : plan::estimate_job(m, other, *c);
    } catch (const config_error& x) {
      r.why = x.what();
    }
    table.push_back(std::move(r));
  }

  // The best plan: every schedule, chunk count and placement of the layers for the same sizes.
  const plan::plan_search_result found = plan::best_plan(m, q.job, *c);
  const plan::plan_choice& best = found.judged[*found.best];
  // The schedule search (as `weft search`) on the best plan's costs: orders of its ops beyond
  // the generators', no rank holding more live (micro-batch, chunk) units than that plan's
  // busiest rank does, each order's memory checked in bytes afterwards.
  struct searched {
    search::search_result<seconds> result;
    seconds step{0};
    double peak_memory_bytes = 0;
  };
  std::optional<searched> better;
  std::string search_note;
  if (q.search_budget.count() > 0) {
    const plan::estimate& b = *found.best_estimate;
    search::problem prob;
    prob.model = b.sched.model;
    for (const int x : peak_live_activations(b.sched))
      prob.model.max_live = std::max(prob.model.max_live, x);
    prob.cost = b.cost;
    searched s{
        search::find_schedule(prob, {.budget_s = q.search_budget.count(),
                                     .max_evaluations = static_cast<std::uint64_t>(q.evaluations),
                                     .seed = static_cast<std::uint64_t>(q.seed)})};
    if (!s.result.best) {
      search_note = "the schedule search found no legal order for this model";
    } else {
      const schedule order = search::to_schedule(s.result.best->p);
      const buffer<double> live = peak_live_weight(
          order, [&](int ch) { return b.chunk_activation_bytes[static_cast<std::size_t>(ch)]; });
      for (std::size_t r = 0; r < live.size(); ++r)
        s.peak_memory_bytes = std::max(s.peak_memory_bytes, b.states_per_rank[r] + live[r]);
      s.step = s.result.best->makespan + b.grad_sync + b.optimizer;
      better = std::move(s);
    }
  }
  if (!q.out.empty()) {  // the fastest order found, as PyTorch's schedule CSV
    // The search's order only when it is faster and needs no more memory than the devices
    // have (or than the best plan, when even that does not fit).
    const bool searched_faster =
        better && better->step < best.step &&
        better->peak_memory_bytes <= std::max(c->hbm_bytes, best.peak_memory_bytes);
    const schedule order =
        searched_faster ? search::to_schedule(better->result.best->p) : found.best_estimate->sched;
    std::ostringstream csv;
    try {
      write_pytorch_csv(csv, order);
    } catch (const config_error& x) {
      throw config_error("weft plan: --out: the fastest order (" +
                         (searched_faster ? "the search's" : best.tried.schedule) + ") " +
                         x.what());
    }
    std::ofstream out = open_for_writing(q.out);
    out << csv.str();
  }

  if (!q.output.svg.empty() || !q.output.trace.empty()) {
    const timeline t = simulate(e.prog, e.cost, {.record_slowed = true});
    if (!q.output.svg.empty()) {
      std::ofstream out = open_for_writing(q.output.svg);
      write_svg(out, e.prog, t,
                {.title = m.model_type + " on " + std::to_string(q.job.devices()) + " " +
                          q.cluster + ", " + q.job.schedule + ", one step's pipeline"});
    }
    if (!q.output.trace.empty()) {
      std::ofstream out = open_for_writing(q.output.trace);
      write_chrome_trace(out, e.prog, t);
    }
  }

  const double hbm = c->hbm_bytes;
  const std::optional<plan::memory_overrun> over = plan::first_overrun(e, hbm);
  const std::string over_text = over ? plan::to_string(*over, e.sched) : "";
  // --check: the job is illegal when it does not fit (exit 1), as rule 5 is for the checker.
  const int code = over && q.check_memory ? exit_illegal : exit_ok;
  if (q.output.json) {
    json j;
    j["model_type"] = m.model_type;
    j["parameters"] = plan::total_parameters(m);
    j["activated_parameters"] = plan::activated_parameters(m);
    j["cluster"] = q.cluster;
    j["devices"] = q.job.devices();
    j["schedule"] = q.job.schedule;
    j["micro_batches"] = q.job.micro();
    j["data_parallel_sharding"] = std::string(plan::name_of(q.job.sharding));
    j["step_s"] = e.step.count();
    j["pipeline_s"] = e.pipeline.count();
    j["grad_sync_s"] = e.grad_sync.count();
    j["optimizer_s"] = e.optimizer.count();
    j["tokens_per_s"] = e.tokens_per_s;
    j["tflops_per_device"] = e.tflops_per_device;
    j["mfu"] = e.mfu;
    j["bubble_ratio"] = e.metrics.bubble_ratio;
    j["memory_per_stage_bytes"] = e.memory_per_rank;
    j["hbm_bytes"] = hbm;
    j["fits"] = !over;
    if (over) j["memory_overrun"] = over_text;
    json rows = json::array();
    for (const row& r : table) {
      json x{{"schedule", r.name}};
      if (r.result) {
        x["step_s"] = r.result->step.count();
        x["mfu"] = r.result->mfu;
        x["peak_memory_bytes"] =
            *std::max_element(r.result->memory_per_rank.begin(), r.result->memory_per_rank.end());
      } else {
        x["refused"] = r.why;
      }
      rows.push_back(x);
    }
    j["schedules"] = rows;
    j["best"] = {{"schedule", best.tried.schedule},
                 {"chunks", best.tried.chunks},
                 {"pipeline_layout", best.tried.layout},
                 {"step_s", best.step.count()},
                 {"mfu", best.mfu},
                 {"peak_memory_bytes", best.peak_memory_bytes},
                 {"fits", best.fits}};
    j["plans_judged"] = found.judged.size();
    if (better)
      j["search"] = {{"step_s", better->step.count()},
                     {"pipeline_s", better->result.best->makespan.count()},
                     {"peak_memory_bytes", better->peak_memory_bytes},
                     {"found_by", better->result.found_by},
                     {"plans_judged", better->result.evaluations}};
    else if (!search_note.empty())
      j["search"] = {{"refused", search_note}};
    std::cout << j.dump() << "\n";
    return code;
  }
  const plan::job& jb = q.job;
  std::cout << std::fixed << std::setprecision(2) << m.model_type << ": "
            << plan::total_parameters(m) / 1e9 << "B parameters ("
            << plan::activated_parameters(m) / 1e9 << "B activated) on " << jb.devices() << " "
            << q.cluster << " devices: tp " << jb.tp << ", pp " << jb.pp << ", dp " << jb.dp
            << ", cp " << jb.cp << ", ep " << jb.ep << "; " << jb.schedule << ", " << jb.micro()
            << " micro-batches of " << jb.micro_batch_size << " x "
            << static_cast<long long>(jb.seq) << " tokens\n";
  std::cout << "step " << std::setprecision(3) << e.step.count() << " s (pipeline "
            << e.pipeline.count() << " s, gradient sync " << e.grad_sync.count() << " s, optimizer "
            << e.optimizer.count() << " s); " << std::setprecision(0) << e.tokens_per_s
            << " tokens/s; " << std::setprecision(1) << e.tflops_per_device
            << " TFLOP/s per device, MFU " << 100 * e.mfu << "%; bubble "
            << 100 * e.metrics.bubble_ratio << "%\n";
  std::cout << "memory per stage (of " << plan::gigabytes(hbm) << "):";
  for (std::size_t r = 0; r < e.memory_per_rank.size(); ++r)
    std::cout << (r ? ", " : " ") << "rank " << r << " " << plan::gigabytes(e.memory_per_rank[r]);
  std::cout << (over ? " — does not fit" : "") << "\n";
  if (over) std::cout << over_text << "\n";
  std::cout << "\n";
  std::cout << std::left << std::setw(12) << "schedule" << std::right << std::setw(10) << "step s"
            << std::setw(8) << "MFU" << std::setw(12) << "peak mem"
            << "\n";
  for (const row& r : table) {
    std::cout << std::left << std::setw(12) << r.name << std::right;
    if (!r.result) {
      std::cout << "  " << r.why << "\n";
      continue;
    }
    const double most =
        *std::max_element(r.result->memory_per_rank.begin(), r.result->memory_per_rank.end());
    std::cout << std::setw(10) << std::setprecision(3) << r.result->step.count() << std::setw(7)
              << std::setprecision(1) << 100 * r.result->mfu << "%" << std::setw(12)
              << plan::gigabytes(most) << (most <= hbm ? "" : " (over)") << "\n";
  }
  std::cout << "\nbest of " << found.judged.size()
            << " plans judged (schedules, chunks, layouts): " << flags(best.tried) << "\n  step "
            << std::setprecision(3) << best.step.count() << " s, MFU " << std::setprecision(1)
            << 100 * best.mfu << "%, peak memory " << plan::gigabytes(best.peak_memory_bytes)
            << (best.fits ? "" : " — no plan fits; this one needs the least") << "\n";
  if (better) {
    const double gain = 100 * (1 - better->step / best.step);
    std::cout << "schedule search (" << better->result.evaluations << " orders in "
              << std::setprecision(1) << better->result.seconds << " s, found by "
              << better->result.found_by << "): step " << std::setprecision(3)
              << better->step.count() << " s, peak memory "
              << plan::gigabytes(better->peak_memory_bytes) << " — ";
    if (gain >= 0.05)
      std::cout << std::setprecision(1) << gain << "% shorter than the best plan";
    else
      std::cout << "none 0.1% shorter than the best plan's";
    std::cout << (better->peak_memory_bytes <= hbm ? "" : " (over the device's memory)") << "\n";
  } else if (!search_note.empty()) {
    std::cout << search_note << "\n";
  }
  std::cout << std::defaultfloat;
  return code;
}

}  // namespace weft::cli
