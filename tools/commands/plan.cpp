// `weft plan`: a real training job — a model's config.json, Megatron's flags, a cluster — its
// step time, throughput, MFU and memory per pipeline stage, beside every schedule that applies
// (docs/planning.md).
#include <algorithm>
#include <chrono>
#include <cstdlib>
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
#include <weft/plan/configurations.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/presets.hpp>
#include <weft/plan/report.hpp>
#include <weft/plan/search_report.hpp>
#include <weft/plan/torchtitan_file.hpp>
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

/// The model, the job and the cluster a plan is for: a preset's files, or the flags (the job
/// perhaps a file, the cluster a built-in or a file).
struct inputs {
  plan::hf_model hf;
  plan::job job;
  plan::cluster_file own;                  ///< a cluster read from a file or a preset
  const plan::cluster* builtin = nullptr;  ///< else a built-in one
  std::string cluster_name;
  bool devices_used = false;  ///< --devices already read (torchtitan's job takes it)
  const plan::cluster& cluster() const { return builtin ? *builtin : own.spec; }
};

void warn(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "weft: " << w << "\n";
}

/// --cluster: a built-in one, or one's own file.
void read_cluster(inputs& in, const plan_args& o) {
  in.builtin = plan::find_cluster(o.cluster);
  if (in.builtin) return;
  in.own = plan::read_cluster(read_text(o.cluster), o.cluster);
  warn(in.own.warnings);
  in.own.spec.name = in.cluster_name;
}

inputs read_inputs(const plan_args& o) {
  inputs in;
  in.job = o.job;
  in.cluster_name = o.cluster;
  if (!o.preset.empty()) {
    // One's own preset of a built-in's name (under $WEFT_PRESETS) is what it says.
    const char* own = std::getenv("WEFT_PRESETS");
    std::error_code ec;
    if (!own || !*own || !std::filesystem::is_directory(std::filesystem::path(own) / o.preset, ec))
      plan::refuse_scenario_preset(o.preset, (preset_dir(o.preset) / "config.json").string());
    plan::preset p = plan::read_preset(preset_dir(o.preset));
    warn(p.warnings);
    in.hf = std::move(p.model);
    in.job = p.job.spec;
    in.cluster_name = o.preset;
    in.own = std::move(p.cluster);
    in.own.spec.name = in.cluster_name;
  } else if (!o.megatron_given.empty()) {  // the model as a Megatron launch script states it
    if (o.job_file.ends_with(".toml"))
      throw config_error(
          "weft: plan: torchtitan's job needs its model as a config.json (--model), not "
          "Megatron's flags");
    if (!o.job_file.empty()) {
      const plan::job_file f = plan::read_job(read_text(o.job_file), o.job_file);
      warn(f.warnings);
      in.job = f.spec;
    }
    plan::megatron_model a = o.megatron;
    a.gpt2_vocab_files = o.vocab_file && o.merge_file;
    in.hf = plan::megatron_transformer(a, in.job.tp);
    // A launch script without the distributed optimizer runs without it (Megatron's default).
    const bool sharding_given = o.given.count("--use-distributed-optimizer") > 0 ||
                                o.given.count("--no-distributed-optimizer") > 0 ||
                                o.given.count("--data-parallel-sharding-strategy") > 0;
    if (o.job_file.empty() && !sharding_given) in.job.sharding = plan::dp_sharding::no_shard;
    if (o.job_file.empty())
      in.job = plan::as_megatron_runs(
          in.hf.model, in.job,
          {.runtime = o.given.count("--pipeline-runtime") == 0,
           .schedule = o.given.count("--schedule") == 0,
           .p2p_overlap = o.given.count("--no-overlap-p2p-communication") == 0});
    read_cluster(in, o);
  } else {
    // A model snapshot's folder (as Hugging Face's hub downloads it) holds its config.json.
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(o.model_file, ec);
    const std::string model_file =
        folder ? (std::filesystem::path(o.model_file) / "config.json").string() : o.model_file;
    if (folder && !std::filesystem::exists(model_file, ec))
      throw config_error("weft: plan: " + o.model_file +
                         " is a folder without a config.json (a model's snapshot holds one)");
    in.hf = plan::read_hf_config(read_text(model_file), model_file);
    warn(in.hf.warnings);
    if (o.job_file.ends_with(".toml")) {  // torchtitan's, resolved with the model
      const plan::torchtitan_job t = plan::read_torchtitan(read_text(o.job_file), o.job_file);
      warn(t.warnings);
      in.job = plan::torchtitan_as_job(t, in.hf.model, o.devices);
      in.devices_used = true;
    } else if (!o.job_file.empty()) {
      const plan::job_file f = plan::read_job(read_text(o.job_file), o.job_file);
      warn(f.warnings);
      in.job = f.spec;
    }
    read_cluster(in, o);
  }
  return in;
}

/// The fastest judged plan whose schedule PyTorch's CSV can hold (one direction), as fast as it
/// fits: the plans that fit before those that do not.
const plan::plan_choice* fastest_one_way(const plan::plan_report& x) {
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
/// is faster and needs no more memory than a job may allocate (or than the best plan, when even
/// that does not fit). DualPipe's two directions have no CSV form: when the fastest is one, the
/// fastest plan with a form is written instead, and said so.
void write_order(const std::string& path, const plan::plan_report& x, const plan::cluster& c) {
  const plan::plan_choice& best = x.best();
  const bool searched_faster =
      x.better && x.better->step < best.step &&
      x.better->peak_memory_bytes <= std::max(x.allocatable(), best.peak_memory_bytes);
  schedule order = searched_faster ? search::to_schedule(x.better->result.best->p)
                                   : x.found.best_estimate->sched;
  std::string what = searched_faster ? "the search's" : best.tried.schedule;
  if (order.model.bidirectional) {
    const plan::plan_choice* one_way = fastest_one_way(x);
    if (!one_way)
      throw config_error("weft: plan: --out: the fastest order (" + what +
                         ") has two directions, which PyTorch's CSV cannot hold, and no plan of "
                         "one direction ran");
    order = plan::estimate_job(x.model, one_way->tried, c).sched;
    std::cerr << "weft: plan: --out: the fastest order (" << what
              << ") has two directions, which PyTorch's CSV cannot hold; writing the fastest "
                 "of one direction: "
              << plan::run_flags(one_way->tried, x.asked) << "\n";
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
  std::cerr << "weft: plan: wrote the fastest order (" << what << ") to " << path
            << " as PyTorch's schedule CSV\n";
}

/// --svg and --trace: the job's step, simulated.
void draw(const output_args& o, const plan::plan_report& x) {
  const timeline t = simulate(x.e.prog, x.e.cost, {.record_slowed = true});
  if (!o.svg.empty()) {
    std::ofstream out = open_for_writing(o.svg);
    write_svg(out, x.e.prog, t,
              {.title = x.model.model_type + " on " + std::to_string(x.asked.devices()) + " " +
                        x.cluster + ", " + x.asked.schedule + ", one step's pipeline"});
  }
  if (!o.trace.empty()) {
    std::ofstream out = open_for_writing(o.trace);
    write_chrome_trace(out, x.e.prog, t);
  }
}

/// The job, its step and its memory per stage.
void print_job(const plan::plan_report& x) {
  const plan::transformer& m = x.model;
  const plan::estimate& e = x.e;
  const plan::job& jb = x.asked;
  std::cout << std::fixed << std::setprecision(2) << m.model_type << ": "
            << plan::total_parameters(m) / 1e9 << "B parameters ("
            << plan::activated_parameters(m) / 1e9 << "B activated) on " << jb.devices() << " "
            << x.cluster << (jb.devices() == 1 ? " device: tp " : " devices: tp ") << jb.tp
            << ", pp " << jb.pp << ", dp " << jb.dp << ", cp " << jb.cp << ", ep " << jb.ep << "; "
            << jb.schedule
            << (jb.runtime == plan::pipeline_runtime::megatron ? " (Megatron's runtime)" : "")
            << ", " << jb.micro() << (jb.micro() == 1 ? " micro-batch of " : " micro-batches of ")
            << jb.micro_batch_size << " x " << static_cast<long long>(jb.seq) << " tokens\n";
  std::cout << "step " << std::setprecision(3) << e.step.count() << " s (pipeline "
            << e.pipeline.count() << " s, gradient sync " << e.grad_sync.count() << " s, optimizer "
            << e.optimizer.count() << " s); " << std::setprecision(0) << e.tokens_per_s
            << " tokens/s (" << e.tokens_per_s / static_cast<double>(jb.devices())
            << " per device); " << std::setprecision(1) << e.tflops_per_device
            << " TFLOP/s per device, MFU " << 100 * e.mfu << "%; bubble "
            << 100 * e.metrics.bubble_ratio << "%\n";
  std::cout << "memory per stage (of the " << plan::allocatable_text(x.hbm) << "):";
  for (std::size_t r = 0; r < e.memory_per_rank.size(); ++r)
    std::cout << (r ? ", " : " ") << "rank " << r << " " << plan::gibibytes(e.memory_per_rank[r]);
  const double most = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
  std::cout << "; nvidia-smi would show up to " << plan::gibibytes(plan::as_nvidia_smi(most))
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

/// Every schedule's step, MFU and peak memory for the same job.
void print_table(const plan::plan_report& x) {
  std::cout << std::left << std::setw(12) << "schedule" << std::right << std::setw(10) << "step s"
            << std::setw(8) << "MFU" << std::setw(12) << "peak mem"
            << "\n";
  for (const plan::schedule_row& r : x.table) {
    std::cout << std::left << std::setw(12) << r.name << std::right;
    if (!r.result) {
      std::cout << "  " << r.why << "\n";
      continue;
    }
    const double most = r.peak_memory();
    std::cout << std::setw(10) << std::setprecision(3) << r.result->step.count() << std::setw(7)
              << std::setprecision(1) << 100 * r.result->mfu << "%" << std::setw(12)
              << plan::gibibytes(most) << (most <= x.allocatable() ? "" : " (over)") << "\n";
  }
}

/// The best plan, and what the schedule search found beyond it.
void print_best(const plan::plan_report& x) {
  const plan::plan_choice& best = x.best();
  std::cout << "\nbest of " << x.found.judged.size()
            << " plans judged (schedules, chunks, layouts): "
            << plan::run_flags(best.tried, x.asked) << "\n  step " << std::setprecision(3)
            << best.step.count() << " s, MFU " << std::setprecision(1) << 100 * best.mfu
            << "%, peak memory " << plan::gibibytes(best.peak_memory_bytes)
            << (best.fits ? "" : " — no plan fits; this one needs the least") << "\n  runs on "
            << plan::runtime_for(best.tried)
            << "\n  weft's flags: " << plan::joined(plan::weft_flags(best.tried)) << "\n";
  if (const auto a = plan::megatron_arguments(best.tried))
    std::cout << "  Megatron-LM on " << best.tried.devices() << " devices: " << plan::joined(*a)
              << "\n";
  const double gain = 1 - best.step / x.e.step;
  if (gain > 0 && !plan::clearly_shorter(best.step, x.e.step))
    std::cout << "  a tie with the job as given: " << std::setprecision(1) << 100 * gain
              << "% shorter, within the estimate's uncertainty ("
              << 100 * plan::prediction_uncertainty << "%, its median error on published runs)\n";
  if (x.better) {
    const plan::order_search& s = *x.better;
    const double gain = 100 * (1 - s.step / best.step);
    std::cout << "schedule search (" << s.result.evaluations << " orders judged";
    if (s.result.estimated > 0) std::cout << ", " << s.result.estimated << " estimated";
    std::cout << " in " << std::setprecision(1) << s.result.seconds << " s, found by "
              << s.result.found_by << "): step " << std::setprecision(3) << s.step.count()
              << " s, peak memory " << plan::gibibytes(s.peak_memory_bytes) << " — ";
    if (gain >= 0.05)
      std::cout << std::setprecision(1) << gain << "% shorter than the best plan";
    else
      std::cout << "none 0.1% shorter than the best plan's";
    std::cout << (s.peak_memory_bytes <= x.allocatable() ? "" : " (over what a job may allocate)")
              << "\n";
  } else if (!x.search_note.empty()) {
    std::cout << x.search_note << "\n";
  }
  std::cout << std::defaultfloat;
}

/// Progress on stderr for a plan that takes long: a line once two seconds have passed, then
/// every two seconds.
class progress_line {
 public:
  void operator()(const std::string& what) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (t < next_) return;
    next_ = t + 2;
    std::cerr << "weft: plan: " << what << " (" << std::fixed << std::setprecision(1) << t << " s)"
              << std::defaultfloat << std::endl;
  }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double next_ = 2;
};

/// What --search may change: all but the sizes given as flags.
plan::configuration_space space_of(const plan_args& o, const plan::job& j) {
  return plan::kept_sizes(
      j, [&](std::string_view key) { return o.given.count("--" + std::string(key)) > 0; },
      o.devices, o.runtime);
}

constexpr double gib = 1024.0 * 1024 * 1024;

/// A search's report, with the model and the cluster its text names.
struct searched {
  plan::configuration_report report;
  plan::transformer model;
  std::string cluster;
};

void print_search(const searched& s, const plan::job& asked) {
  const plan::configuration_search_result& r = s.report.result;
  const plan::configuration_counts& n = r.counts;
  std::cout << std::fixed << std::setprecision(2) << s.model.model_type << " ("
            << plan::total_parameters(s.model) / 1e9 << "B parameters) on " << r.devices << " "
            << s.cluster << " devices, " << asked.batch() << " sequence"
            << (asked.batch() == 1 ? "" : "s") << " of " << static_cast<long long>(asked.seq)
            << " tokens a step\n"
            << std::setprecision(1) << n.considered << " configurations considered (" << n.sizings
            << " sizes, recomputations and shardings, each with its schedules) in "
            << r.seconds_taken << " s: " << n.pruned_sizes << " do not split, " << n.pruned_memory
            << " overflow what a job may allocate in model states alone, " << n.pruned_bound
            << " cannot beat the ones below, " << n.unexplored << " left unexplored; " << n.screened
            << " configurations screened with their most frugal plan, " << n.plans << " plans of "
            << n.simulated << " estimated\n";
  if (r.complete)
    std::cout << "every configuration that could beat these was estimated\n";
  else if (!r.top.empty() && r.least_unexplored >= r.top.front().best.step)
    std::cout << "the budget ran out: none left beats the first (the lowest bound left, "
              << std::setprecision(3) << r.least_unexplored.count()
              << " s, is above it); the others are the best found\n";
  else if (!r.top.empty())
    std::cout << "the budget ran out: none left is faster than " << std::setprecision(3)
              << r.least_unexplored.count() << " s, " << std::setprecision(1)
              << 100 * (1 - r.least_unexplored / r.top.front().best.step)
              << "% below the best found (--search SECONDS for longer)\n";
  if (r.top.empty()) {
    std::cout << "no configuration estimated within the budget fits; --search SECONDS for "
                 "longer\n"
              << std::defaultfloat;
    return;
  }
  std::cout << "\n  #    tp    pp     dp    cp    ep  etp  mbs  recompute  sharding            "
               "schedule             step s    MFU  tokens/s/GPU  peak GiB\n";
  int rank = 0;
  for (const plan::configuration_choice& x : r.top) {
    const plan::job& j = x.best.tried;
    std::ostringstream schedule;
    schedule << j.schedule << (j.chunks > 1 ? " x" + std::to_string(j.chunks) : "");
    std::cout << std::setw(3) << ++rank << std::setw(6) << j.tp << std::setw(6) << j.pp
              << std::setw(7) << j.dp << std::setw(6) << j.cp << std::setw(6) << j.ep
              << std::setw(5) << j.etp() << std::setw(5) << j.micro_batch_size << "  " << std::left
              << std::setw(11) << plan::recompute_text(j) << std::setw(20)
              << plan::name_of(j.sharding) << std::setw(18) << schedule.str() << std::right
              << std::setprecision(3) << std::setw(9) << x.best.step.count() << std::setprecision(1)
              << std::setw(6) << 100 * x.best.mfu << "%" << std::setw(14) << s.report.per_device(x)
              << std::setw(10) << x.best.peak_memory_bytes / gib << "\n";
  }
  int tied = 0;
  for (const plan::configuration_choice& x : r.top)
    tied += plan::clearly_shorter(r.top.front().best.step, x.best.step) ? 0 : 1;
  if (tied > 1)
    std::cout << "the first " << tied << " are a tie: within the estimate's uncertainty ("
              << std::setprecision(1) << 100 * plan::prediction_uncertainty
              << "%, its median error on published runs) of the first\n";
  std::cout << "\nto run them:\n";
  rank = 0;
  for (const plan::configuration_choice& x : r.top) {
    const plan::job& j = x.best.tried;
    std::cout << std::setw(3) << ++rank << "  " << plan::runtime_for(j) << "\n"
              << "     weft's flags: " << plan::joined(plan::weft_flags(j)) << "\n";
    if (const auto a = plan::megatron_arguments(j))
      std::cout << "     Megatron-LM on " << r.devices << " devices: " << plan::joined(*a) << "\n";
  }
  std::cout << std::defaultfloat;
}

int search_configurations(const plan_args& o, const inputs& in) {
  searched s;
  s.model = in.hf.model;
  s.cluster = in.cluster_name;
  progress_line show;
  plan::configuration_search_result& r = s.report.result;
  r = plan::search_configurations(in.hf.model, in.job, in.cluster(),
                                  {.budget_s = o.configuration_budget,
                                   .top = o.top,
                                   .space = space_of(o, in.job),
                                   .progress = [&show](long long n) {
                                     show(std::to_string(n) +
                                          (n == 1 ? " configuration" : " configurations") +
                                          " estimated with every plan");
                                   }});
  s.report.tokens_per_step = static_cast<double>(in.job.batch()) * in.job.seq;
  if (o.output.json)
    std::cout << plan::to_json(s.report).dump() << "\n";
  else
    print_search(s, in.job);
  // Nothing that fits found in the budget: as a plan that does not fit, exit 1.
  return r.top.empty() ? exit_illegal : exit_ok;
}

}  // namespace

int run_command(const plan_args& o) {
  inputs in = read_inputs(o);
  if (const auto w = plan::sequence_warning(in.hf, in.job.seq)) warn({*w});
  if (const auto w = plan::window_warning(in.hf, in.job.seq)) warn({*w});
  // Megatron's code runs the job: its transfers priced as Megatron issues them, unless said.
  if (o.runtime == plan::runs_on::megatron && o.given.count("--pipeline-runtime") == 0)
    in.job.runtime = plan::pipeline_runtime::megatron;
  if (o.fp16) {          // Megatron's --fp16: its gradients in 16 bits unless accumulated in fp32
    in.job.fp16 = true;  // (--grad-reduce-in-bf16 is bf16's: Megatron reads it under bf16 only)
    in.job.grad_reduce_in_bf16 = !o.accumulate_fp32;
  }
  if (o.configuration_budget > 0) return search_configurations(o, in);
  if (o.devices > 0 && !in.devices_used) in.job = plan::with_world_size(in.job, o.devices);
  const plan::transformer& m = in.hf.model;
  const plan::cluster& c = in.cluster();
  progress_line show;
  const plan::plan_report x = plan::make_report(
      m, in.job, c, in.cluster_name,
      {.search_budget_s = o.search_budget.count(),
       .evaluations = static_cast<std::uint64_t>(o.evaluations),
       .seed = static_cast<std::uint64_t>(o.seed),
       .runtime = o.runtime,
       .progress = [&show](std::size_t done, std::size_t total) {
         show(std::to_string(done) + " of " + std::to_string(total) + " plans judged");
       }});
  if (!o.out.empty()) write_order(o.out, x, c);
  if (o.output.pictures()) draw(o.output, x);
  // --check: the job is illegal when it does not fit (exit 1), as rule 5 is for the checker.
  const int code = x.over && o.check_memory ? exit_illegal : exit_ok;
  if (o.output.json) {
    std::cout << plan::to_json(x).dump() << "\n";
    return code;
  }
  print_job(x);
  print_breakdown(x.e);
  print_table(x);
  print_best(x);
  return code;
}

}  // namespace weft::cli
