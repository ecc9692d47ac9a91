// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality.
//
//   weft generate --schedule NAME --pp P --micro M [--chunks V] [options] [--format csv|text]
//   weft check    --schedule NAME --pp P --micro M [--chunks V] [options] [--max-live N]
//   weft verify   FILE.csv
//   weft simulate --schedule NAME --pp P --micro M [...] [--cost K=V,...] [--preset NAME]
//                 [--barrier] [--json] [--trace FILE] [--svg FILE]
//   weft compare  --schedules A,B,... --pp P --micro M [...]
//   weft run      --schedule NAME --pp P --micro M [...] [--fb-overlap] [--ep E]
//                 [--delay-model PRESET] [--json] [--trace FILE] [--svg FILE]
//
// Exit codes: 0 legal (or generated, simulated), 1 illegal, 2 bad arguments or unreadable input.
#include <charconv>
#include <concepts>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/picture.hpp>
#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/timeline.hpp>
#include <weft/schedules/dualpipe.hpp>
#include <weft/schedules/interleaved.hpp>
#include <weft/schedules/one_f_one_b.hpp>
#include <weft/schedules/zero_bubble_v.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/shared_workers.hpp>

namespace {

constexpr std::string_view usage =
    "usage: weft generate --schedule NAME --pp P --micro M [--chunks V] [--layers L] [--moe]\n"
    "                     [--fb-overlap] [--transfers] [--format csv|text]\n"
    "       weft check    --schedule NAME --pp P --micro M [...] [--max-live N]\n"
    "       weft verify   FILE.csv\n"
    "       weft simulate --schedule NAME --pp P --micro M [...] [--cost K=V,...]\n"
    "                     [--preset deepseek-v3] [--barrier] [--json] [--trace F] [--svg F]\n"
    "       weft compare  --schedules A,B,... --pp P --micro M [...] [--cost K=V,...]\n"
    "       weft plan-cp  --mask FAMILY[:K=V,...] | --mask-file FILE --seq S --cp N [--cap U]\n"
    "                     [--coarse C] [--no-remap] [--json] [--svg F]\n"
    "       weft run      --schedule NAME --pp P --micro M [--chunks V] [--moe] [--fb-overlap]\n"
    "                     [--ep E] [--delay-model PRESET] [--json] [--trace F] [--svg F]\n"
    "  NAME: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe, dualpipev\n"
    "  --pp P        pipeline ranks (devices); zb-v, dualpipe(v) put 2 chunks on each\n"
    "  --chunks V    model chunks per rank, for interleaved (default 2)\n"
    "  --layers L    layers per model chunk (default 1)\n"
    "  --moe         layers of MoE sub-stages: attn, dispatch, mlp, combine\n"
    "  --shared-expert  MoE layers with a shared expert beside the routed ones\n"
    "  --fb-overlap  MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek);\n"
    "                with --format csv, the pipeline-level view (OVERLAP_F_B cells)\n"
    "  --transfers   explicit send/recv ops, placed as PyTorch places them\n"
    "  --format      csv: PyTorch's schedule CSV (whole chunks only); text: slots (default)\n"
    "  generate  print the schedule\n"
    "  check     print the legality report; exit 0 if legal, 1 if not\n"
    "  verify    read a PyTorch schedule CSV and check it; exit 0 legal, 1 illegal, 2 unreadable\n"
    "  simulate  run the schedule over simulated time and report makespan, bubble, exposed comm\n"
    "  compare   simulate several schedules and print them side by side\n"
    "  run       train a tiny model one step on in-process ranks (dense for whole blocks, MoE\n"
    "            for sub-stages); prints the simulate metrics, measured, plus the loss and the\n"
    "            gradients' largest relative error against a serial run\n"
    "  plan-cp   plan adaptive context parallelism for a mask: re-map the sequence, schedule\n"
    "            its (query, key/value) blocks in rounds under a cap of U units per rank and\n"
    "            round (default 6); --coarse C plans on a C x C coarse mask (default 1024, 0:\n"
    "            none). FAMILY: full, causal, window, bidir-window, global-window, documents,\n"
    "            causal-documents, interleaved-documents, shared-question, causal-blockwise,\n"
    "            prefix-lm, random (docs/adaptive-cp.md)\n"
    "  --ep E    run: expert-parallel replicas of each pipeline rank (default 2 with MoE\n"
    "            layers): dispatch and combine are all-to-alls over them\n"
    "  --delay-model  none, intra-node, inter-node or cross-dc (1000 km): emulated link for\n"
    "            transfers and all-to-alls\n"
    "  --cost    a rank's share of the model: F forward, B full backward, W its dW part, FB an\n"
    "            overlapped F and B; A2A one all-to-all, P2P one pipeline transfer (default\n"
    "            F=1,B=2,W=1). With V chunks per rank each costs 1/V (DualPipe's: a whole stage)\n"
    "  --preset  deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its\n"
    "            compute partner\n"
    "  --barrier each rank waits for a slot before the next (the host syncs every step)\n"
    "  --json    print the metrics as JSON\n"
    "  --trace   write a Chrome trace (Perfetto) of the step; --svg an SVG timeline\n";

[[noreturn]] void bad_usage(const std::string& why) {
  std::cerr << "weft: " << why << "\n" << usage;
  std::exit(2);
}

int parse_int(std::string_view flag, std::string_view text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    bad_usage(std::string(flag) + " needs an integer, got '" + std::string(text) + "'");
  return v;
}

struct request {
  std::string name;
  int pp = 0, micro = 0, chunks = 2, layers = 1, max_live = 0;
  int ep = 0;  ///< run: expert-parallel replicas; 0: 2 for MoE layers, 1 otherwise
  bool moe = false, fb_overlap = false, transfers = false, shared_expert = false;
  std::string format = "text";
  // simulate, compare
  std::vector<std::string> schedules;
  weft::unit_cost_model cost = weft::unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
  bool barrier = false, json = false;
  bool cost_is_rank_share = true;  ///< --cost: a rank's share; a preset: per chunk
  std::string trace, svg;
  std::string delay = "none";
};

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::size_t b = 0;;) {
    const std::size_t e = text.find(sep, b);
    out.emplace_back(text.substr(b, e == std::string_view::npos ? e : e - b));
    if (e == std::string_view::npos) return out;
    b = e + 1;
  }
}

double parse_double(std::string_view what, std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || v < 0)
    bad_usage(std::string(what) + " needs a non-negative number, got '" + t + "'");
  return v;
}

/// --cost F=1,B=2,W=1,FB=2.5,A2A=0.5,P2P=0.1
weft::unit_cost_model parse_cost(std::string_view text) {
  double F = 1, B = 2, W = 1, FB = -1, A2A = 0, P2P = 0;
  for (const std::string& item : split(text, ',')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) bad_usage("--cost takes KEY=VALUE pairs, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    const double v = parse_double("--cost " + key, std::string_view(item).substr(eq + 1));
    if (key == "F")
      F = v;
    else if (key == "B")
      B = v;
    else if (key == "W")
      W = v;
    else if (key == "FB")
      FB = v;
    else if (key == "A2A")
      A2A = v;
    else if (key == "P2P")
      P2P = v;
    else
      bad_usage("--cost: unknown key '" + key + "' (F, B, W, FB, A2A, P2P)");
  }
  if (W > B) bad_usage("--cost: W (the dW part of B) cannot exceed B");
  return weft::unit_cost_model::pipeline(
      {.F = F, .B = B, .W = W, .FB = FB, .P2P = P2P, .A2A = A2A});
}

request parse_request(const std::vector<std::string_view>& args) {
  request q;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const auto text = [&]() -> std::string_view {
      if (i + 1 >= args.size()) bad_usage(std::string(a) + " needs a value");
      return args[++i];
    };
    const auto number = [&] {
      const std::string_view t = text();
      return parse_int(a, t);
    };
    if (a == "--schedule")
      q.name = text();
    else if (a == "--pp")
      q.pp = number();
    else if (a == "--micro")
      q.micro = number();
    else if (a == "--chunks")
      q.chunks = number();
    else if (a == "--layers")
      q.layers = number();
    else if (a == "--max-live")
      q.max_live = number();
    else if (a == "--format")
      q.format = text();
    else if (a == "--moe")
      q.moe = true;
    else if (a == "--fb-overlap")
      q.fb_overlap = true;
    else if (a == "--shared-expert")
      q.shared_expert = true;
    else if (a == "--ep") {
      q.ep = number();
      if (q.ep < 1) bad_usage("--ep needs a positive number of replicas");
    } else if (a == "--transfers")
      q.transfers = true;
    else if (a == "--schedules")
      q.schedules = split(text(), ',');
    else if (a == "--cost") {
      q.cost = parse_cost(text());
      q.cost_is_rank_share = true;
    } else if (a == "--preset") {
      const std::string_view name = text();
      if (name != "deepseek-v3") bad_usage("unknown preset '" + std::string(name) + "'");
      q.cost = weft::unit_cost_model::deepseek_v3_like();
      q.cost_is_rank_share = false;
    } else if (a == "--barrier")
      q.barrier = true;
    else if (a == "--json")
      q.json = true;
    else if (a == "--trace")
      q.trace = text();
    else if (a == "--svg")
      q.svg = text();
    else if (a == "--delay-model")
      q.delay = text();
    else
      bad_usage("unknown option '" + std::string(a) + "'");
  }
  if (args[0] == "compare") {
    if (q.schedules.empty()) bad_usage("--schedules A,B,... is required");
  } else if (q.name.empty()) {
    bad_usage("--schedule NAME is required");
  }
  if (q.pp == 0) bad_usage("--pp P is required");
  if (q.micro == 0) bad_usage("--micro M is required");
  if (q.format != "csv" && q.format != "text")
    bad_usage("--format is csv or text, not '" + q.format + "'");
  return q;
}

weft::schedule generate(const request& q, const std::string& name) {
  // PyTorch's CSV is the pipeline-level view: there fb-overlap shows as OVERLAP_F_B cells, each
  // expanded per layer when the schedule runs with MoE sub-stages.
  const bool sub_stages = q.moe || q.shared_expert || (q.fb_overlap && q.format != "csv");
  const weft::stage_set stages = !sub_stages       ? weft::stage_set::whole_block()
                                 : q.shared_expert ? weft::stage_set::moe_with_shared()
                                                   : weft::stage_set::moe();
  const weft::overlap_options overlap =
      q.fb_overlap ? weft::overlap_options::all() : weft::overlap_options::none();
  const weft::pipeline_params p{.ranks = q.pp,
                                .micro = q.micro,
                                .layers = q.layers,
                                .stages = stages,
                                .transfers = q.transfers,
                                .overlap = overlap};
  if (name == "gpipe") return weft::gpipe(p);
  if (name == "1f1b") return weft::one_f_one_b(p);
  if (name == "zb-h1") return weft::zb_h1(p);
  if (name == "zb-v") return weft::zb_v(p);
  if (name == "dualpipe") return weft::dualpipe(p);
  if (name == "dualpipev") return weft::dualpipev(p);
  if (name == "interleaved")
    return weft::interleaved({.ranks = q.pp,
                              .micro = q.micro,
                              .chunks = q.chunks,
                              .layers = q.layers,
                              .stages = stages,
                              .transfers = q.transfers,
                              .overlap = overlap,
                              .extra_warmup = q.fb_overlap});
  bad_usage("unknown schedule '" + name + "'");
}

weft::schedule generate_or_exit(const request& q, const std::string& name) {
  try {
    return generate(q, name);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  }
}

/// --cost and the presets are unit-free (the DualPipe paper's F, B, W): so is the simulation.
struct simulated {
  weft::program prog;
  weft::unit_timeline time;
  weft::unit_step_metrics metrics;
};

/// Lowers, simulates and measures; says what it does on big schedules, which take a while.
simulated simulate_or_exit(const request& q, const weft::schedule& s) {
  const bool big = s.ops.size() > 1'000'000;
  const auto progress = [&](const char* what) {
    if (big) std::cerr << "weft: " << what << " (" << s.ops.size() << " ops)\n";
  };
  simulated out;
  progress("lowering");
  try {
    out.prog = weft::lower(s);
  } catch (const weft::config_error& e) {
    std::cerr << e.what() << "\n";
    std::exit(1);
  }
  progress("simulating");
  // --cost describes a rank's share of the model; a chunk of a rank with V of them is 1/V of it,
  // except DualPipe's, which are whole stages (it holds the model twice).
  const weft::model_desc& m = s.model;
  const double share = !q.cost_is_rank_share || m.bidirectional ? 1.0 : 1.0 / m.chunks_per_rank;
  out.time = weft::simulate(out.prog, q.cost.scaled_compute(share), {.slot_barrier = q.barrier});
  if (out.time.deadlocked()) {
    std::cerr << "weft: simulate: deadlock; each rank is stuck at:\n";
    for (int r = 0; r < out.prog.ranks(); ++r) {
      const std::uint32_t i = out.time.blocked[static_cast<std::size_t>(r)];
      if (i != weft::program::none)
        std::cerr << "  rank " << r << ": " << weft::to_string(out.prog.at(i)) << " (slot "
                  << out.prog.slot[i] << ")\n";
    }
    std::exit(1);
  }
  progress("measuring");
  out.metrics = weft::measure(out.prog, out.time);
  return out;
}

/// `extra`: more `"key":value` members for the top-level object, comma-separated. Times are
/// counts of `time_unit`: seconds, or unit-free schedule units.
template <weft::time_type T>
void print_json(std::ostream& os, const std::string& name, const weft::basic_step_metrics<T>& m,
                const std::string& extra = "") {
  os << std::setprecision(10) << "{\"schedule\":\"" << name << "\",\"time_unit\":\""
     << weft::unit_name<T>() << "\",\"makespan\":" << m.makespan.count()
     << ",\"bubble_ratio\":" << m.bubble_ratio << ",\"exposed_comm\":" << m.exposed_comm.count()
     << ",\"exposed_comm_by_phase\":{\"warmup\":" << m.exposed_by_phase[0].count()
     << ",\"steady\":" << m.exposed_by_phase[1].count()
     << ",\"cooldown\":" << m.exposed_by_phase[2].count() << "},\"ranks\":[";
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const auto& x = m.ranks[r];
    os << (r ? "," : "") << "{\"rank\":" << r << ",\"busy\":" << x.busy.count()
       << ",\"idle\":" << x.idle.count() << ",\"exposed_comm\":" << x.exposed_comm.count()
       << ",\"peak_activations\":" << x.peak_activations << ",\"stream_utilisation\":[";
    for (int st = 0; st < weft::streams_per_rank; ++st)
      os << (st ? "," : "") << (m.makespan > T{0} ? x.stream_busy[st] / m.makespan : 0.0);
    os << "]}";
  }
  os << "]" << (extra.empty() ? "" : ",") << extra << "}\n";
}

/// A time with its unit: "12.5 units", "3.21 ms".
template <weft::time_type T>
std::string show(T t) {
  std::ostringstream os;
  if constexpr (std::same_as<T, weft::seconds>)
    os << t.count() * 1e3 << " ms";
  else
    os << t.count() << " units";
  return os.str();
}

template <weft::time_type T>
void print_text(std::ostream& os, const std::string& name, const weft::basic_step_metrics<T>& m) {
  os << name << ": makespan " << show(m.makespan) << ", bubble " << 100 * m.bubble_ratio
     << "%, exposed comm " << show(m.exposed_comm) << " (warm-up " << show(m.exposed_by_phase[0])
     << ", steady " << show(m.exposed_by_phase[1]) << ", cool-down " << show(m.exposed_by_phase[2])
     << ")\n";
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const auto& x = m.ranks[r];
    os << "  rank " << r << ": busy " << show(x.busy) << ", idle " << show(x.idle)
       << ", exposed comm " << show(x.exposed_comm) << ", peak activations " << x.peak_activations
       << "\n";
  }
}

/// The length a unit of schedule time is drawn with in a Chrome trace.
constexpr weft::seconds trace_unit{1e-3};

/// --trace and --svg.
template <weft::time_type T>
void write_pictures(const request& q, const weft::program& prog,
                    const weft::basic_timeline<T>& time, const std::string& title) {
  const auto write = [&](const std::string& path, auto&& fn) {
    std::ofstream out(path);
    if (!out) {
      std::cerr << "weft: cannot write '" << path << "'\n";
      std::exit(2);
    }
    fn(out);
  };
  if (!q.trace.empty())
    write(q.trace, [&](std::ostream& o) {
      if constexpr (std::same_as<T, weft::seconds>)
        weft::write_chrome_trace(o, prog, time);
      else
        weft::write_chrome_trace(o, prog, time, trace_unit);
    });
  if (!q.svg.empty())
    write(q.svg, [&](std::ostream& o) { weft::write_svg(o, prog, time, {.title = title}); });
}

int simulate_command(const request& q) {
  const weft::schedule s = generate_or_exit(q, q.name);
  const simulated sim = simulate_or_exit(q, s);
  write_pictures(q, sim.prog, sim.time,
                 q.name + ", " + std::to_string(q.pp) + " ranks, " + std::to_string(q.micro) +
                     " micro-batches");
  if (q.json)
    print_json(std::cout, q.name, sim.metrics);
  else
    print_text(std::cout, q.name, sim.metrics);
  return 0;
}

weft::rt::delay_model delay_preset(const std::string& name) {
  if (name == "none") return {};
  if (name == "intra-node") return {weft::link_model::intra_node()};
  if (name == "inter-node") return {weft::link_model::inter_node()};
  if (name == "cross-dc") return {weft::link_model::cross_dc(1000)};
  bad_usage("unknown delay model '" + name + "' (none, intra-node, inter-node, cross-dc)");
}

/// Runs `s` with `Executor` on `model`, then the serial reference, and reports both.
template <class Executor, class Model>
int run_and_report(const request& q, const weft::schedule& s, Model& model,
                   const weft::exec::run_options& opt, const std::string& what, int replicas) {
  Executor ex(model, opt);
  weft::exec::run_result<float> run;
  try {
    run = ex.run(s);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const float loss = model.serial_step();
  const double worst = weft::exec::max_grad_rel_err(run, model);
  const weft::step_metrics metrics = weft::measure(run.prog, run.time);
  // The prediction of this very run: costs calibrated from it, the CPU runtime's workers and
  // replicas, the same stream program through the same semantics.
  const weft::cost_model cost = weft::calibrated(run.prog, run.time, {}, run.comm_span);
  const weft::sim_options so{
      .event_latency = weft::measured_event_latency(run.prog, run.time, run.posted),
      .dispatch_overhead = run.dispatch_gap,
      .wake_latency = run.wake_gap};
  const weft::timeline predicted =
      weft::simulate_on_workers(run.prog, cost, opt.workers, so, replicas);
  if (!q.svg.empty()) {  // measured above predicted, on one time scale
    std::ofstream out(q.svg);
    if (!out) {
      std::cerr << "weft: cannot write '" << q.svg << "'\n";
      return 2;
    }
    weft::write_svg_compare(out, run.prog, run.time, "measured", predicted,
                            "predicted from the calibrated cost model",
                            {.title = q.name + ", " + what});
  }
  if (!q.trace.empty()) {
    request trace_only = q;
    trace_only.svg.clear();
    write_pictures(trace_only, run.prog, run.time, q.name + ", " + what + ", measured");
  }
  std::ostringstream extra;
  extra << std::setprecision(9) << "\"loss\":" << run.loss << ",\"serial_loss\":" << loss
        << ",\"max_grad_rel_err\":" << worst
        << ",\"predicted_makespan\":" << predicted.makespan.count();
  if (q.json) {
    print_json(std::cout, q.name, metrics, extra.str());
  } else {
    std::cout << what << "\n";
    print_text(std::cout, q.name, metrics);
    std::cout << "predicted makespan " << show(predicted.makespan)
              << " (costs calibrated from this run)\n";
    std::cout << "loss " << run.loss << " (serial " << loss << "), max gradient relative error "
              << worst << "\n";
  }
  return 0;
}

int run_command(const request& q) {
  const weft::schedule s = generate_or_exit(q, q.name);
  weft::exec::run_options opt;
  opt.delay = delay_preset(q.delay);
  const weft::model_desc& m = s.model;
  const int stages = m.bidirectional ? m.chunks() / 2 : m.chunks();
  if (m.stages == weft::stage_set::whole_block()) {
    if (q.ep > 1) bad_usage("--ep needs MoE layers (--moe or --fb-overlap)");
    weft::exec::dense_model<float> model({.stages = stages, .micro = q.micro});
    return run_and_report<weft::exec::dense_executor<float>>(
        q, s, model, opt, "tiny dense model, " + std::to_string(q.pp) + " ranks", 1);
  }
  const int ep = q.ep == 0 ? 2 : q.ep;
  weft::exec::moe_config cfg = weft::exec::demo_config();
  cfg.stages = stages;
  cfg.layers = q.layers;
  cfg.micro = q.micro;
  cfg.replicas = ep;
  cfg.shared_expert = m.stages.has(weft::kind::shared);
  std::optional<weft::exec::moe_model<float>> model;
  try {
    model.emplace(cfg);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  }
  return run_and_report<weft::exec::moe_executor<float>>(
      q, s, *model, opt,
      "tiny MoE model, " + std::to_string(q.pp) + " pipeline ranks x " + std::to_string(ep) +
          " expert-parallel = " + std::to_string(q.pp * ep) + " ranks",
      ep);
}

int compare_command(const request& q) {
  std::cout << "times in schedule units (--cost)\n"
            << std::left << std::setw(14) << "schedule" << std::right << std::setw(12) << "makespan"
            << std::setw(10) << "bubble" << std::setw(14) << "exposed comm" << std::setw(12)
            << "peak act."
            << "\n";
  for (const std::string& name : q.schedules) {
    const simulated sim = simulate_or_exit(q, generate_or_exit(q, name));
    int peak = 0;
    for (const auto& r : sim.metrics.ranks) peak = std::max(peak, r.peak_activations);
    std::cout << std::left << std::setw(14) << name << std::right << std::setw(12)
              << sim.metrics.makespan.count() << std::setw(9) << std::fixed << std::setprecision(1)
              << 100 * sim.metrics.bubble_ratio << "%" << std::setw(14) << std::setprecision(3)
              << sim.metrics.exposed_comm.count() << std::setw(12) << peak << std::defaultfloat
              << "\n";
  }
  return 0;
}

int plan_cp_command(const std::vector<std::string_view>& args) {
  std::string mask_spec, mask_file, svg;
  int seq = 0, cp = 0;
  bool json = false;
  weft::cp::adaptive_options o;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const auto text = [&]() -> std::string_view {
      if (i + 1 >= args.size()) bad_usage(std::string(a) + " needs a value");
      return args[++i];
    };
    if (a == "--mask")
      mask_spec = text();
    else if (a == "--mask-file")
      mask_file = text();
    else if (a == "--seq")
      seq = parse_int(a, text());
    else if (a == "--cp")
      cp = parse_int(a, text());
    else if (a == "--cap")
      o.planning.cap = parse_int(a, text());
    else if (a == "--coarse")
      o.coarse = parse_int(a, text());
    else if (a == "--no-remap")
      o.remap = false;
    else if (a == "--json")
      json = true;
    else if (a == "--svg")
      svg = text();
    else
      bad_usage("unknown option '" + std::string(a) + "'");
  }
  if (mask_spec.empty() == mask_file.empty()) bad_usage("give one of --mask and --mask-file");
  if (cp < 1) bad_usage("--cp N is required (N >= 1)");
  if (o.coarse < 0) bad_usage("--coarse needs a size >= 0");
  weft::cp::range_mask mask;
  if (!mask_file.empty()) {
    std::ifstream in(mask_file);
    if (!in) {
      std::cerr << "weft: cannot open '" << mask_file << "'\n";
      return 2;
    }
    try {
      mask = weft::cp::read_mask_file(in);
    } catch (const weft::cp::mask_file_error& e) {
      std::cerr << mask_file << ": " << e.what() << "\n";
      return 2;
    }
    if (seq != 0 && seq != mask.size)
      bad_usage("--seq " + std::to_string(seq) + " but the file's mask has " +
                std::to_string(mask.size) + " tokens");
  } else {
    if (seq < 1) bad_usage("--seq S is required with --mask");
  }
  weft::cp::adaptive_plan pl;
  try {
    if (mask_file.empty()) mask = weft::cp::masks::by_name(mask_spec, seq);
    pl = weft::cp::plan_adaptive(mask, cp, o);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  }
  const weft::cp::cp_plan& p = pl.plan;
  if (!svg.empty()) {
    std::ofstream out(svg);
    if (!out) {
      std::cerr << "weft: cannot write '" << svg << "'\n";
      return 2;
    }
    weft::cp::write_remap_svg(
        out, pl.coarse, pl.remapped.order, cp,
        (mask_file.empty() ? mask_spec : mask_file) + ", cp " + std::to_string(cp));
  }
  if (!json) {
    std::cout << "tasks " << pl.remapped.before.tasks << " -> " << p.tasks.size() << " (re-mapping "
              << (pl.remapped.clusters
                      ? "with " + std::to_string(pl.remapped.clusters) + " clusters"
                      : std::string("kept the original order"))
              << "), rounds " << p.rounds << " (lower bound " << p.lower_bound
              << "), max comm units " << p.max_comm_units() << " (cap " << p.cap << "), planned in "
              << pl.planning_time.count() * 1e3 << " ms\n";
    for (int r = 0; r < p.rounds; ++r) {
      std::cout << "  round " << r << ":";
      for (int rank = 0; rank < cp; ++rank) {
        const int x = p.run[static_cast<std::size_t>(r)][static_cast<std::size_t>(rank)];
        if (x < 0)
          std::cout << "  -";
        else
          std::cout << "  (" << p.tasks[static_cast<std::size_t>(x)].q << ","
                    << p.tasks[static_cast<std::size_t>(x)].kv << ")";
      }
      std::cout << "\n";
    }
    return 0;
  }
  const auto list = [](const std::vector<int>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(v[i]);
    }
    return s + "]";
  };
  std::cout << "{\"tasks\":" << p.tasks.size()
            << ",\"tasks_before_remap\":" << pl.remapped.before.tasks
            << ",\"clusters\":" << pl.remapped.clusters << ",\"rounds\":" << p.rounds
            << ",\"lower_bound\":" << p.lower_bound << ",\"max_comm_units\":" << p.max_comm_units()
            << ",\"cap\":" << p.cap << ",\"planning_ms\":" << pl.planning_time.count() * 1e3
            << ",\"tokens_per_cell\":" << pl.tokens_per_cell
            << ",\"opt_seq\":" << list(pl.token_order()) << ",\"plan\":[";
  for (int r = 0; r <= p.rounds; ++r) {
    std::cout << (r ? "," : "") << "{\"round\":" << r << ",\"ranks\":[";
    for (int rank = 0; rank < cp; ++rank) {
      const int x =
          r < p.rounds ? p.run[static_cast<std::size_t>(r)][static_cast<std::size_t>(rank)] : -1;
      const weft::cp::transfers& t =
          p.moves[static_cast<std::size_t>(r)][static_cast<std::size_t>(rank)];
      std::cout << (rank ? "," : "") << "{\"rank\":" << rank << ",\"task\":"
                << (x < 0 ? std::string("null")
                          : "[" + std::to_string(p.tasks[static_cast<std::size_t>(x)].q) + "," +
                                std::to_string(p.tasks[static_cast<std::size_t>(x)].kv) + "]")
                << ",\"recv_q_src\":" << list(t.recv_q_src)
                << ",\"recv_kv_src\":" << list(t.recv_kv_src)
                << ",\"recv_o_src\":" << list(t.recv_o_src)
                << ",\"send_q_dst\":" << list(t.send_q_dst)
                << ",\"send_kv_dst\":" << list(t.send_kv_dst)
                << ",\"send_o_dst\":" << list(t.send_o_dst) << ",\"units\":" << t.units() << "}";
    }
    std::cout << "]}";
  }
  std::cout << "]}\n";
  return 0;
}

int verify_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "weft: cannot open '" << path << "'\n";
    return 2;
  }
  weft::schedule s;
  try {
    s = weft::read_pytorch_csv(in);
  } catch (const weft::csv_error& e) {
    std::cerr << path << ": " << e.what() << "\n";
    return 2;
  }
  const weft::report r = weft::check(s);
  std::cout << r;
  return r.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  if (command == "plan-cp") return plan_cp_command(args);
  if (command == "verify") {
    if (args.size() != 2) bad_usage("verify takes one file");
    return verify_file(std::string(args[1]));
  }
  if (command != "generate" && command != "check" && command != "simulate" &&
      command != "compare" && command != "run")
    bad_usage("unknown command '" + std::string(command) + "'");
  if (args.size() > 1 && (args[1] == "--help" || args[1] == "-h")) {
    std::cout << usage;
    return 0;
  }

  const request q = parse_request(args);
  if (command == "simulate") return simulate_command(q);
  if (command == "compare") return compare_command(q);
  if (command == "run") return run_command(q);
  weft::schedule s = generate_or_exit(q, q.name);
  if (command == "generate") {
    if (q.format == "csv") {
      try {
        weft::write_pytorch_csv(std::cout, s);
      } catch (const weft::config_error& e) {
        bad_usage(std::string(e.what()) + " (use --format text)");
      }
    } else {
      weft::print_slots(std::cout, s);
    }
    return 0;
  }
  s.model.max_live = q.max_live;
  const weft::report r = weft::check(s);
  std::cout << r;
  return r.ok() ? 0 : 1;
}
