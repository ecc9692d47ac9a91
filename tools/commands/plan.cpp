// `weft plan`: a real training job — a model's config.json, Megatron's flags, a cluster — its
// step time, throughput, MFU and memory per pipeline stage, beside every schedule that applies
// (docs/planning.md).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <weft/generators/registry.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/svg.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/cluster_file.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/presets.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/search/search.hpp>
#include "commands/common.hpp"
#include "commands/plan.hpp"

namespace weft::cli {

namespace {

using json = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw config_error("weft: plan: " + path + " is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("weft: plan: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The flags that run plan `j`'s schedule, chunks and layout in place of the job `asked`'s: its
/// stages per rank stated whenever they are not 1 or the job asked for others, so that the flags
/// replace the job's own (a schedule of a fixed count, zb-v's 2, in place of --chunks 5).
std::string flags(const plan::job& j, const plan::job& asked) {
  std::string f = "--schedule " + j.schedule;
  const generator_info* g = find_generator(j.schedule);
  // A schedule of a fixed count: its distinct stages a rank (DualPipe's two copies of one: 1).
  const int chunks =
      g && !g->takes_chunk_count() ? g->chunks_per_rank / (g->bidirectional ? 2 : 1) : j.chunks;
  if (chunks != 1 || asked.chunks != 1) f += " --chunks " + std::to_string(chunks);
  if (!j.layout.empty()) f += " --pipeline-layout \"" + j.layout + "\"";
  return f;
}

/// The model, the job and the cluster a plan is for: a preset's files, or the flags (the job
/// perhaps a file, the cluster a built-in or a file).
struct inputs {
  plan::hf_model hf;
  plan::job job;
  plan::cluster_file own;                  ///< a cluster read from a file or a preset
  const plan::cluster* builtin = nullptr;  ///< else a built-in one
  std::string cluster_name;
  const plan::cluster& cluster() const { return builtin ? *builtin : own.spec; }
};

void warn(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "weft: " << w << "\n";
}

inputs read_inputs(const plan_args& o) {
  inputs in;
  in.job = o.job;
  in.cluster_name = o.cluster;
  if (!o.preset.empty()) {
    plan::preset p = plan::read_preset(preset_dir(o.preset));
    warn(p.warnings);
    in.hf = std::move(p.model);
    in.job = p.job.spec;
    in.cluster_name = o.preset;
    in.own = std::move(p.cluster);
  } else {
    in.hf = plan::read_hf_config(read_text(o.model_file));
    warn(in.hf.warnings);
    if (!o.job_file.empty()) {
      const plan::job_file f = plan::read_job(read_text(o.job_file), o.job_file);
      warn(f.warnings);
      in.job = f.spec;
    }
    in.builtin = plan::find_cluster(o.cluster);
    if (in.builtin) return in;
    in.own = plan::read_cluster(read_text(o.cluster), o.cluster);
    warn(in.own.warnings);
  }
  in.own.spec.name = in.cluster_name;
  return in;
}

/// The job's estimate; a job that does not run as asked (its layers do not split, its layout
/// does not fit the schedule) is refused naming the search's plan with the same schedule, else
/// its best.
plan::estimate estimate_or_hint(const plan::transformer& m, const plan::job& job,
                                const plan::cluster& c) {
  try {
    return plan::estimate_job(m, job, c);
  } catch (const config_error& x) {
    std::string hint;
    try {
      const plan::plan_search_result r = plan::best_plan(m, job, c);
      const plan::plan_choice* pick = &r.judged[*r.best];
      for (const plan::plan_choice& choice : r.judged)
        if (choice.ran && choice.tried.schedule == job.schedule &&
            (pick->tried.schedule != job.schedule || (choice.fits && !pick->fits) ||
             (choice.fits == pick->fits && choice.step < pick->step)))
          pick = &choice;
      hint = "\nweft plan: " + flags(pick->tried, job) + " runs this job" +
             (pick->fits ? "" : " (though it does not fit in memory)");
    } catch (const config_error&) {
    }
    throw config_error(x.what() + hint);
  }
}

/// A schedule of the table: its estimate for the same job, or why it does not apply.
struct row {
  std::string name;
  std::optional<plan::estimate> result;
  std::string why;
  double peak_memory() const {
    return *std::max_element(result->memory_per_rank.begin(), result->memory_per_rank.end());
  }
};

/// Every generator's schedule for the same job (`e` is the job's own).
std::vector<row> schedule_table(const plan::transformer& m, const plan::job& job,
                                const plan::cluster& c, const plan::estimate& e) {
  std::vector<row> table;
  for (const generator_info& g : generators) {
    plan::job other = job;
    other.schedule = g.name;
    other.chunks = g.chunks_per_rank > 0 ? 1 : job.chunks;
    row r{std::string(g.name), std::nullopt, ""};
    try {
      r.result = g.name == job.schedule ? e : plan::estimate_job(m, other, c);
    } catch (const config_error& x) {
      r.why = x.what();
    }
    table.push_back(std::move(r));
  }
  return table;
}

/// The schedule search's best order on the best plan's costs, as a step of the job.
struct searched {
  search::search_result<seconds> result;
  seconds step{0};
  double peak_memory_bytes = 0;
};

/// The schedule search (as `weft search`) on the best plan's costs: orders of its ops beyond
/// the generators', no rank holding more live (micro-batch, chunk) units than that plan's
/// busiest rank does, each order's memory checked in bytes afterwards. Nothing when it found no
/// legal order (`note` says so).
std::optional<searched> search_orders(const plan::estimate& b, const plan_args& o,
                                      std::string& note) {
  search::problem prob;
  prob.model = b.sched.model;
  for (const int x : peak_live_activations(b.sched))
    prob.model.max_live = std::max(prob.model.max_live, x);
  prob.cost = b.cost;
  searched s{
      search::find_schedule(prob, {.budget_s = o.search_budget.count(),
                                   .max_evaluations = static_cast<std::uint64_t>(o.evaluations),
                                   .seed = static_cast<std::uint64_t>(o.seed)})};
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

/// Everything `weft plan` reports.
struct outcome {
  const plan::transformer* model = nullptr;
  plan::job job;
  std::string cluster;
  double hbm = 0;
  plan::estimate e;
  std::optional<plan::memory_overrun> over;
  std::string over_text;
  std::vector<row> table;
  plan::plan_search_result found;
  std::optional<searched> better;
  std::string search_note;
  const plan::plan_choice& best() const { return found.judged[*found.best]; }
};

/// The fastest judged plan whose schedule PyTorch's CSV can hold (one direction), as fast as it
/// fits: the plans that fit before those that do not.
const plan::plan_choice* fastest_one_way(const outcome& x) {
  const plan::plan_choice* pick = nullptr;
  for (const plan::plan_choice& c : x.found.judged) {
    const generator_info* g = find_generator(c.tried.schedule);
    if (!c.ran || !g || g->bidirectional) continue;
    if (!pick || (c.fits && !pick->fits) || (c.fits == pick->fits && c.step < pick->step))
      pick = &c;
  }
  return pick;
}

/// --out: the fastest order found, as PyTorch's schedule CSV. The search's order only when it
/// is faster and needs no more memory than the devices have (or than the best plan, when even
/// that does not fit). DualPipe's two directions have no CSV form: when the fastest is one, the
/// fastest plan with a form is written instead, and said so.
void write_order(const std::string& path, const outcome& x, const plan::cluster& c) {
  const plan::plan_choice& best = x.best();
  const bool searched_faster =
      x.better && x.better->step < best.step &&
      x.better->peak_memory_bytes <= std::max(x.hbm, best.peak_memory_bytes);
  schedule order = searched_faster ? search::to_schedule(x.better->result.best->p)
                                   : x.found.best_estimate->sched;
  std::string what = searched_faster ? "the search's" : best.tried.schedule;
  if (order.model.bidirectional) {
    const plan::plan_choice* one_way = fastest_one_way(x);
    if (!one_way)
      throw config_error("weft: plan: --out: the fastest order (" + what +
                         ") has two directions, which PyTorch's CSV cannot hold, and no plan of "
                         "one direction ran");
    order = plan::estimate_job(*x.model, one_way->tried, c).sched;
    std::cerr << "weft: plan: --out: the fastest order (" << what
              << ") has two directions, which PyTorch's CSV cannot hold; writing the fastest "
                 "of one direction: "
              << flags(one_way->tried, x.job) << "\n";
    what = one_way->tried.schedule;
  }
  std::ostringstream csv;
  try {
    write_pytorch_csv(csv, order);
  } catch (const config_error& e) {
    throw config_error("weft: plan: --out: the fastest order (" + what +
                       "): " + std::string(without_prefix(e.what())));
  }
  std::ofstream out = open_for_writing(path);
  out << csv.str();
}

/// --svg and --trace: the job's step, simulated.
void draw(const output_args& o, const outcome& x) {
  const timeline t = simulate(x.e.prog, x.e.cost, {.record_slowed = true});
  if (!o.svg.empty()) {
    std::ofstream out = open_for_writing(o.svg);
    write_svg(out, x.e.prog, t,
              {.title = x.model->model_type + " on " + std::to_string(x.job.devices()) + " " +
                        x.cluster + ", " + x.job.schedule + ", one step's pipeline"});
  }
  if (!o.trace.empty()) {
    std::ofstream out = open_for_writing(o.trace);
    write_chrome_trace(out, x.e.prog, t);
  }
}

json breakdown_json(const plan::estimate& e);

json as_json(const outcome& x) {
  const plan::transformer& m = *x.model;
  const plan::estimate& e = x.e;
  json j;
  j["model_type"] = m.model_type;
  j["parameters"] = plan::total_parameters(m);
  j["activated_parameters"] = plan::activated_parameters(m);
  j["cluster"] = x.cluster;
  j["devices"] = x.job.devices();
  j["schedule"] = x.job.schedule;
  j["pipeline_runtime"] = plan::pipeline_runtime_names[static_cast<std::size_t>(x.job.runtime)];
  j["micro_batches"] = x.job.micro();
  j["data_parallel_sharding"] = std::string(plan::name_of(x.job.sharding));
  j["step_s"] = e.step.count();
  j["pipeline_s"] = e.pipeline.count();
  j["grad_sync_s"] = e.grad_sync.count();
  j["optimizer_s"] = e.optimizer.count();
  j["tokens_per_s"] = e.tokens_per_s;
  j["tflops_per_device"] = e.tflops_per_device;
  j["mfu"] = e.mfu;
  j["bubble_ratio"] = e.metrics.bubble_ratio;
  j["memory_per_stage_bytes"] = e.memory_per_rank;
  json shown = json::array();
  for (const double b : e.memory_per_rank) shown.push_back(plan::as_nvidia_smi(b));
  j["nvidia_smi_bytes_per_stage"] = shown;
  j["breakdown_per_rank"] = breakdown_json(e);
  j["hbm_bytes"] = x.hbm;
  j["fits"] = !x.over;
  if (x.over) j["memory_overrun"] = x.over_text;
  json rows = json::array();
  for (const row& r : x.table) {
    json y{{"schedule", r.name}};
    if (r.result) {
      y["step_s"] = r.result->step.count();
      y["mfu"] = r.result->mfu;
      y["peak_memory_bytes"] = r.peak_memory();
    } else {
      y["refused"] = r.why;
    }
    rows.push_back(y);
  }
  j["schedules"] = rows;
  const plan::plan_choice& best = x.best();
  j["best"] = {{"schedule", best.tried.schedule},
               {"chunks", best.tried.chunks},
               {"pipeline_layout", best.tried.layout},
               {"step_s", best.step.count()},
               {"mfu", best.mfu},
               {"peak_memory_bytes", best.peak_memory_bytes},
               {"fits", best.fits}};
  j["plans_judged"] = x.found.judged.size();
  if (x.better)
    j["search"] = {{"step_s", x.better->step.count()},
                   {"pipeline_s", x.better->result.best->makespan.count()},
                   {"peak_memory_bytes", x.better->peak_memory_bytes},
                   {"found_by", x.better->result.found_by},
                   {"plans_judged", x.better->result.evaluations}};
  else if (!x.search_note.empty())
    j["search"] = {{"refused", x.search_note}};
  return j;
}

/// The job, its step and its memory per stage.
void print_job(const outcome& x) {
  const plan::transformer& m = *x.model;
  const plan::estimate& e = x.e;
  const plan::job& jb = x.job;
  std::cout << std::fixed << std::setprecision(2) << m.model_type << ": "
            << plan::total_parameters(m) / 1e9 << "B parameters ("
            << plan::activated_parameters(m) / 1e9 << "B activated) on " << jb.devices() << " "
            << x.cluster << " devices: tp " << jb.tp << ", pp " << jb.pp << ", dp " << jb.dp
            << ", cp " << jb.cp << ", ep " << jb.ep << "; " << jb.schedule
            << (jb.runtime == plan::pipeline_runtime::megatron ? " (Megatron's runtime)" : "")
            << ", " << jb.micro() << " micro-batches of " << jb.micro_batch_size << " x "
            << static_cast<long long>(jb.seq) << " tokens\n";
  std::cout << "step " << std::setprecision(3) << e.step.count() << " s (pipeline "
            << e.pipeline.count() << " s, gradient sync " << e.grad_sync.count() << " s, optimizer "
            << e.optimizer.count() << " s); " << std::setprecision(0) << e.tokens_per_s
            << " tokens/s; " << std::setprecision(1) << e.tflops_per_device
            << " TFLOP/s per device, MFU " << 100 * e.mfu << "%; bubble "
            << 100 * e.metrics.bubble_ratio << "%\n";
  std::cout << "memory per stage (of " << plan::gigabytes(x.hbm) << "):";
  for (std::size_t r = 0; r < e.memory_per_rank.size(); ++r)
    std::cout << (r ? ", " : " ") << "rank " << r << " " << plan::gigabytes(e.memory_per_rank[r]);
  const double most = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
  std::cout << "; nvidia-smi would show up to " << plan::gigabytes(plan::as_nvidia_smi(most))
            << (x.over ? " — does not fit" : "") << "\n";
  if (x.over) std::cout << x.over_text << "\n";
  std::cout << "\n";
}

/// Where each rank's step goes (plan/breakdown.hpp), in seconds; the ranks between the first
/// two and the last when there are many (--json has them all).
void print_breakdown(const plan::estimate& e) {
  static constexpr const char* heads[] = {
      "matmul",  "attention", "elementwise", "recompute", "TP",      "CP",
      "EP",      "launch",    "hidden",      "slowed",    "PP wait", "bubble",
      "DP sync", "optimizer", "1F",          "1B",        "1W"};
  std::cout << "where the step goes, seconds per rank (the parts, less what overlap hid, plus what "
               "contention slowed; 1F, 1B, 1W: one micro-batch's chunk):\n"
            << std::setw(6) << "rank";
  const auto width = [](const char* h) { return std::max<int>(std::string_view(h).size() + 2, 8); };
  for (const char* h : heads) std::cout << std::setw(width(h)) << h;
  std::cout << "\n" << std::setprecision(3);
  const std::size_t n = e.breakdown.size();
  for (std::size_t r = 0; r < n; ++r) {
    if (n > 6 && r == 2)
      std::cout << std::setw(6) << "..."
                << "\n";
    if (n > 6 && r >= 2 && r + 1 < n) continue;
    const plan::rank_breakdown& b = e.breakdown[r];
    const seconds parts[] = {b.work.matmul,
                             b.work.attention,
                             b.work.elementwise,
                             b.work.recompute,
                             b.work.tp,
                             b.work.cp,
                             b.work.ep,
                             b.work.launch,
                             b.hidden,
                             b.slowed,
                             b.transfers,
                             b.bubble,
                             b.grad_sync,
                             b.optimizer,
                             b.F,
                             b.B,
                             b.W};
    std::cout << std::setw(6) << r;
    for (std::size_t i = 0; i < std::size(parts); ++i)
      std::cout << std::setw(width(heads[i])) << parts[i].count();
    std::cout << "\n";
  }
  std::cout << "\n";
}

/// The breakdown per rank as `--json` gives it.
json breakdown_json(const plan::estimate& e) {
  json ranks = json::array();
  for (const plan::rank_breakdown& b : e.breakdown)
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

/// Every schedule's step, MFU and peak memory for the same job.
void print_table(const outcome& x) {
  std::cout << std::left << std::setw(12) << "schedule" << std::right << std::setw(10) << "step s"
            << std::setw(8) << "MFU" << std::setw(12) << "peak mem"
            << "\n";
  for (const row& r : x.table) {
    std::cout << std::left << std::setw(12) << r.name << std::right;
    if (!r.result) {
      std::cout << "  " << r.why << "\n";
      continue;
    }
    const double most = r.peak_memory();
    std::cout << std::setw(10) << std::setprecision(3) << r.result->step.count() << std::setw(7)
              << std::setprecision(1) << 100 * r.result->mfu << "%" << std::setw(12)
              << plan::gigabytes(most) << (most <= x.hbm ? "" : " (over)") << "\n";
  }
}

/// The best plan, and what the schedule search found beyond it.
void print_best(const outcome& x) {
  const plan::plan_choice& best = x.best();
  std::cout << "\nbest of " << x.found.judged.size()
            << " plans judged (schedules, chunks, layouts): " << flags(best.tried, x.job)
            << "\n  step " << std::setprecision(3) << best.step.count() << " s, MFU "
            << std::setprecision(1) << 100 * best.mfu << "%, peak memory "
            << plan::gigabytes(best.peak_memory_bytes)
            << (best.fits ? "" : " — no plan fits; this one needs the least") << "\n";
  if (x.better) {
    const searched& s = *x.better;
    const double gain = 100 * (1 - s.step / best.step);
    std::cout << "schedule search (" << s.result.evaluations << " orders in "
              << std::setprecision(1) << s.result.seconds << " s, found by " << s.result.found_by
              << "): step " << std::setprecision(3) << s.step.count() << " s, peak memory "
              << plan::gigabytes(s.peak_memory_bytes) << " — ";
    if (gain >= 0.05)
      std::cout << std::setprecision(1) << gain << "% shorter than the best plan";
    else
      std::cout << "none 0.1% shorter than the best plan's";
    std::cout << (s.peak_memory_bytes <= x.hbm ? "" : " (over the device's memory)") << "\n";
  } else if (!x.search_note.empty()) {
    std::cout << x.search_note << "\n";
  }
  std::cout << std::defaultfloat;
}

}  // namespace

int run_command(const plan_args& o) {
  const inputs in = read_inputs(o);
  const plan::transformer& m = in.hf.model;
  const plan::cluster& c = in.cluster();
  outcome x;
  x.model = &m;
  x.job = in.job;
  x.cluster = in.cluster_name;
  x.hbm = c.hbm_bytes;
  x.e = estimate_or_hint(m, in.job, c);
  x.table = schedule_table(m, x.job, c, x.e);
  // The best plan: every schedule, chunk count and placement of the layers for the same sizes.
  x.found = plan::best_plan(m, x.job, c);
  if (o.search_budget.count() > 0)
    x.better = search_orders(*x.found.best_estimate, o, x.search_note);
  if (!o.out.empty()) write_order(o.out, x, c);
  if (o.output.pictures()) draw(o.output, x);
  x.over = plan::first_overrun(x.e, x.hbm);
  if (x.over) x.over_text = plan::to_string(*x.over, x.e.sched);
  // --check: the job is illegal when it does not fit (exit 1), as rule 5 is for the checker.
  const int code = x.over && o.check_memory ? exit_illegal : exit_ok;
  if (o.output.json) {
    std::cout << as_json(x).dump() << "\n";
    return code;
  }
  print_job(x);
  print_breakdown(x.e);
  print_table(x);
  print_best(x);
  return code;
}

}  // namespace weft::cli
