// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality,
// simulate, run on in-process ranks, plan context parallelism. `weft --help` and
// `weft SUBCOMMAND --help` list the options; the command line is parsed in cli.cpp.
//
// Exit codes: 0 done (legal, generated, simulated), 1 illegal, 2 bad input (arguments, files,
// impossible configurations, limits; docs/limits.md). Every error is one line on stderr.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/picture.hpp>
#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/exec/prediction.hpp>
#include <weft/generators/ampipe.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/timeline.hpp>
#include <weft/plan/presets.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/ampipe_preset.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/unit_steps.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "cli.hpp"
#include "commands.hpp"
#include "pipeline_request.hpp"
#include "process_world.hpp"

std::ofstream weft::cli::open_for_writing(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw stop(weft::cli::exit_bad_input, "weft: cannot write '" + path + "'");
  return out;
}

weft::xdc_facts weft::cli::xdc_facts_of(const request& q) {
  const weft::plan::preset p = weft::plan::read_preset(preset_dir("llama2-70b-xdc"));
  for (const std::string& w : p.warnings) std::cerr << "weft: " << w << "\n";
  weft::xdc_facts f = weft::plan::xdc_facts_of(p.model.model, p.job.spec, p.cluster.spec);
  if (f.layers % (f.pp * q.chunks) != 0) {
    std::string counts;  // what divides a rank's layers
    for (int d = 1; d <= f.layers / f.pp; ++d)
      if ((f.layers / f.pp) % d == 0) counts += (counts.empty() ? "" : ", ") + std::to_string(d);
    throw weft::config_error("weft: llama2-70b-xdc: --chunks must divide the " +
                             std::to_string(f.layers / f.pp) + " layers of a pipeline rank (" +
                             counts + ")");
  }
  f.chunks = q.chunks;
  f.nanopipe = q.nanopipe;
  if (q.micro != 0) f.micro = q.micro;
  if (q.delay == "inter-node") f.sites = 1;
  if (q.delay_km_given) f.km = q.delay_km;
  if (q.delay_ratio_given) f.ratio = q.delay_ratio;
  return f;
}

weft::unit_cost_model weft::cli::unit_costs(const request& q) {
  const weft::cli::costs& c = q.cost;
  weft::unit_cost_model m =
      q.preset == "deepseek-v3"
          ? weft::unit_cost_model::deepseek_v3_like()
          : weft::unit_cost_model::pipeline(
                {.F = c.F, .B = c.B, .W = c.W, .FB = c.FB, .P2P = c.P2P, .A2A = c.A2A});
  m.contention = q.contention;
  return m;
}

namespace {

using weft::cli::open_for_writing;
using weft::cli::request;
using weft::cli::stop;
using json = nlohmann::ordered_json;

/// The schedule `name` as the request asks for it, the seed's warning printed when pipe-experts
/// does not apply.
weft::schedule generate(const request& q, const std::string& name) {
  return weft::cli::schedule_of(q, name, &std::cerr);
}

/// --cost and the presets are unit-free (the DualPipe paper's F, B, W): so is the simulation.
struct simulated {
  weft::program prog;
  weft::unit_timeline time;
  weft::unit_step_metrics metrics;
};

/// Does the command draw the step (a trace or an SVG)? Then the simulator records where ops ran
/// slowed.
bool pictures(const request& q) { return !q.trace.empty() || !q.svg.empty(); }
/// A picture's title says when overlap was priced (its veils show where).
std::string priced(const request& q) {
  return q.contention.active() ? ", overlap priced (veiled where slowed)" : "";
}

/// Lowers, simulates and measures; says what it does on big schedules, which take a while.
simulated simulate(const request& q, const weft::schedule& s) {
  const bool big = s.ops.size() > 1'000'000;
  const auto progress = [&](const char* what) {
    if (big) std::cerr << "weft: " << what << " (" << s.ops.size() << " ops)\n";
  };
  simulated out;
  progress("lowering");
  try {
    out.prog = weft::lower(s);
  } catch (const weft::config_error& e) {
    throw stop(weft::cli::exit_illegal, e.what());
  }
  progress("simulating");
  // --cost describes a rank's share of the model; a chunk of a rank with V of them is 1/V of it,
  // except DualPipe's, which are whole stages (it holds the model twice). A preset is per chunk.
  const weft::model_desc& m = s.model;
  const double share = !q.preset.empty() || m.bidirectional ? 1.0 : 1.0 / m.chunks_per_rank;
  out.time = weft::simulate(out.prog, weft::cli::unit_costs(q).scaled_compute(share),
                            {.slot_barrier = q.barrier, .record_slowed = pictures(q)});
  if (out.time.deadlocked()) {
    std::string why = "weft: simulate: deadlock; each rank is stuck at:";
    for (int r = 0; r < out.prog.ranks(); ++r) {
      const std::uint32_t i = out.time.blocked[static_cast<std::size_t>(r)];
      if (i != weft::npos)
        why += "\n  rank " + std::to_string(r) + ": " + weft::to_string(out.prog.at(i)) +
               " (slot " + std::to_string(out.prog.slot[i]) + ")";
    }
    throw stop(weft::cli::exit_illegal, why);
  }
  progress("measuring");
  out.metrics = weft::measure(out.prog, out.time);
  return out;
}

/// The metrics as JSON: times are counts of `time_unit` (seconds, or unit-free schedule units),
/// at full precision.
template <weft::time_type T>
json metrics_json(const std::string& name, const weft::basic_step_metrics<T>& m) {
  json j;
  j["schedule"] = name;
  j["time_unit"] = weft::unit_name<T>();
  j["makespan"] = m.makespan.count();
  j["bubble_ratio"] = m.bubble_ratio;
  j["exposed_comm"] = m.exposed_comm.count();
  j["exposed_comm_by_phase"] = {{"warmup", m.exposed_by_phase[0].count()},
                                {"steady", m.exposed_by_phase[1].count()},
                                {"cooldown", m.exposed_by_phase[2].count()}};
  json ranks = json::array();
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const auto& x = m.ranks[r];
    json use = json::array();
    for (int st = 0; st < weft::streams_per_rank; ++st)
      use.push_back(m.makespan > T{0} ? x.stream_busy[st] / m.makespan : 0.0);
    ranks.push_back({{"rank", r},
                     {"busy", x.busy.count()},
                     {"idle", x.idle.count()},
                     {"exposed_comm", x.exposed_comm.count()},
                     {"peak_activations", x.peak_activations},
                     {"stream_utilisation", use}});
  }
  j["ranks"] = ranks;
  return j;
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
void write_pictures(const std::string& trace, const std::string& svg, const weft::program& prog,
                    const weft::basic_timeline<T>& time, const std::string& title) {
  if (!trace.empty()) {
    std::ofstream out = open_for_writing(trace);
    if constexpr (std::same_as<T, weft::seconds>)
      weft::write_chrome_trace(out, prog, time);
    else
      weft::write_chrome_trace(out, prog, time, trace_unit);
  }
  if (!svg.empty()) {
    std::ofstream out = open_for_writing(svg);
    weft::write_svg(out, prog, time, {.title = title});
  }
}

/// The report of a check, the first `violations_shown` violations, then how many more.
/// Prints the checker's report (and `note`, what else the user should know of a legal schedule).
int report_check(const request& q, const weft::report& r,
                 const std::optional<std::string>& note = std::nullopt) {
  const std::size_t limit = weft::cli::violations_shown;
  if (!q.json) {
    weft::print_report(std::cout, r, limit);
    if (note) std::cout << "weft: note: " << *note << "\n";
  } else {
    json v = json::array();
    for (std::size_t i = 0; i < r.violations.size() && i < limit; ++i)
      v.push_back({{"rule", static_cast<int>(r.violations[i].code)},
                   {"message", weft::to_string(r.violations[i])}});
    json blocked = json::array();
    for (const weft::violation& b : r.blocked) blocked.push_back(weft::to_string(b));
    const std::size_t more = r.violations.size() > limit ? r.violations.size() - limit : 0;
    json j{{"legal", r.ok()}, {"violations", v}, {"more_violations", more}, {"blocked", blocked}};
    if (note) j["note"] = *note;
    std::cout << j.dump() << "\n";
  }
  return r.ok() ? weft::cli::exit_ok : weft::cli::exit_illegal;
}

/// The checker collects this many violations at most; the tool prints 20 and counts the rest.
constexpr weft::check_options tool_check{.max_violations = 100'000};

int generate_command(const request& q) {
  const weft::schedule s = generate(q, q.schedule);
  if (q.format == "csv")
    weft::write_pytorch_csv(std::cout, s);
  else
    weft::print_slots(std::cout, s);
  return weft::cli::exit_ok;
}

int check_command(const request& q) {
  weft::schedule s = generate(q, q.schedule);
  s.model.max_live = q.max_live;
  return report_check(q, weft::check(s, tool_check));
}

/// A PyTorch schedule CSV, or `stop` (exit 2) naming the file and what is wrong with it.
weft::schedule read_csv_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw stop(weft::cli::exit_bad_input, "weft: cannot open '" + file + "'");
  try {
    return weft::read_pytorch_csv(in);
  } catch (const weft::csv_error& e) {
    throw stop(weft::cli::exit_bad_input, file + ": " + e.what());
  }
}

/// Why PyTorch's simulator would refuse legal program `p` (lowered from a PyTorch CSV), or
/// nothing. PyTorch's runtime (`_PipelineScheduleRuntime`) posts a RECV without blocking and
/// waits for it at the compute that needs the data, as weft does, and loading a compute_comms
/// CSV simulates nothing; but `_simulate_comms_compute` (PyTorch's tests, `_simulate()`) holds a
/// rank at a RECV until the peer's SEND was issued (`weft::unit_steps`), and raises there.
std::optional<std::string> pytorch_simulator_refusal(const weft::program& p) {
  const weft::unit_step_result r = weft::unit_steps(p);
  if (!r.stuck) return std::nullopt;
  std::string at = "a step where no rank can go";
  if (r.waiting != weft::npos)
    at = "rank " + std::to_string(p.rank[r.waiting]) + "'s " +
         weft::csv_detail::action_text(p.at(r.waiting));
  return "PyTorch's runtime runs this schedule (it posts receives without blocking and waits for "
         "them at the compute that needs the data), but PyTorch's simulator "
         "(_simulate_comms_compute) holds a rank at a RECV until the peer's SEND was issued and "
         "raises \"Schedule is not progressing\" at " +
         at;
}

/// A PyTorch CSV checked, and, when legal, what PyTorch's own simulator would say of it.
int verify_command(const request& q) {
  const weft::schedule s = read_csv_file(q.file);
  const weft::report r = weft::check(s, tool_check);
  return report_check(q, r, r.ok() ? pytorch_simulator_refusal(weft::lower(s)) : std::nullopt);
}

/// simulate --preset ampipe-16p: the seed's scenario with the switches asked for, beside its
/// baseline (degree 1, no pipe-experts); with --ampipe-degree auto, every degree the seed's rules
/// take, and the fastest.
int ampipe_command(const request& q) {
  const weft::plan::preset p = weft::plan::read_preset(weft::cli::preset_dir("ampipe-16p"));
  for (const std::string& w : p.warnings) std::cerr << "weft: " << w << "\n";
  const weft::moe_mesh_facts f =
      weft::plan::moe_mesh_facts_of(p.model.model, p.job.spec, p.cluster.spec);
  weft::cost_model cost = weft::ampipe_cost_model(f);
  cost.contention = q.contention;
  struct result {
    weft::ampipe_layout layout;
    weft::program prog;
    weft::timeline time;
  };
  const auto simulate_with = [&](int degree) {
    result r;
    const weft::schedule s = weft::ampipe_schedule(f,
                                                   {.degree = degree,
                                                    .tp_sp_overlap = q.tp_sp_overlap,
                                                    .pipe_experts = q.pipe_experts(),
                                                    .multi_data = q.multi_data,
                                                    .multi_stream = q.multi_stream},
                                                   &r.layout);
    r.prog = weft::lower(s);
    r.time = weft::simulate(r.prog, cost, {.record_slowed = pictures(q)});
    return r;
  };
  const weft::seconds baseline =
      weft::simulate(weft::lower(weft::ampipe_schedule(f, {})), cost).makespan;
  json sweep = json::array();
  std::optional<result> best;
  if (q.degree() == 0) {
    for (int d = 1; d <= 16; ++d) {
      try {
        result r = simulate_with(d);
        sweep.push_back({{"degree", d}, {"makespan", r.time.makespan.count()}});
        if (!best || r.time.makespan < best->time.makespan) best = std::move(r);
      } catch (const weft::config_error&) {  // a degree the rules refuse: not a candidate
      }
    }
  } else {
    best = simulate_with(q.degree());
  }
  const result& r = *best;
  if (!r.layout.warning.empty()) std::cerr << r.layout.warning << "\n";
  const weft::step_metrics metrics = weft::measure(r.prog, r.time);
  const double tflops = weft::step_flops(f) / r.time.makespan.count() / 1e12;
  const double gain = baseline / r.time.makespan - 1;
  const std::string what =
      "ampipe-16p, degree " + std::to_string(r.layout.splits) + ", " +
      std::to_string(r.layout.pieces) + " piece(s) per chunk" +
      (r.layout.overlap.multi_stream_all_to_all ? ", two all-to-all streams" : "");
  write_pictures(q.trace, q.svg, r.prog, r.time, what + priced(q));
  if (q.json) {
    json j = metrics_json("ampipe-16p", metrics);
    j["degree"] = r.layout.splits;
    j["pieces_per_chunk"] = r.layout.pieces;
    j["pipe_experts"] = r.layout.pipe_experts;
    j["multi_stream"] = r.layout.overlap.multi_stream_all_to_all;
    j["tp_sp_overlap"] = q.tp_sp_overlap;
    j["tflops_per_device"] = tflops;
    j["baseline_makespan"] = baseline.count();
    j["gain"] = gain;
    if (!sweep.empty()) j["sweep"] = sweep;
    std::cout << j.dump() << "\n";
    return weft::cli::exit_ok;
  }
  std::cout << what << ": " << std::fixed << std::setprecision(2) << tflops
            << " TFLOP/s per device, " << 100 * gain << "% over the baseline ("
            << baseline.count() * 1e3 << " ms)" << std::defaultfloat << "\n";
  for (const json& d : sweep)
    std::cout << "  degree " << d["degree"].get<int>() << ": " << std::fixed << std::setprecision(1)
              << d["makespan"].get<double>() * 1e3 << " ms\n"
              << std::defaultfloat;
  print_text(std::cout, "ampipe-16p", metrics);
  return weft::cli::exit_ok;
}

/// simulate --preset llama2-70b-xdc: the seed's cross-DC scenario with the switches asked for,
/// beside Megatron's baseline on the same links.
int xdc_command(const request& q) {
  const weft::xdc_facts f = weft::cli::xdc_facts_of(q);
  weft::contention_facts contention = q.contention;
  if (q.contention_scenario) contention.uplink_ports = weft::xdc_contention(f).uplink_ports;
  const weft::cost_model cost = weft::xdc_cost_model(f, contention);
  weft::p2p_options switches = weft::cli::p2p_of(q);
  const weft::program prog = weft::lower(weft::xdc_schedule(f, switches));
  const weft::timeline time = weft::simulate(prog, cost, {.record_slowed = pictures(q)});
  const weft::seconds baseline =
      weft::simulate(weft::lower(weft::xdc_schedule(f, {})), cost).makespan;
  const weft::step_metrics metrics = weft::measure(prog, time);
  const double reduction = 1 - time.makespan / baseline;
  std::string what = "llama2-70b-xdc, VP " + std::to_string(f.chunks) + ", " +
                     std::to_string(f.micro) + " micro-batches";
  if (f.nanopipe) what += ", NanoPipe";
  if (f.sites > 1) what += ", data centres " + std::to_string(static_cast<int>(f.km)) + " km apart";
  write_pictures(q.trace, q.svg, prog, time, what + priced(q));
  if (q.json) {
    json j = metrics_json("llama2-70b-xdc", metrics);
    j["chunks"] = f.chunks;
    j["micro"] = f.micro;
    j["km"] = f.sites > 1 ? f.km : 0.0;
    j["ratio"] = f.ratio;
    j["overlap_p2p"] = switches.overlap_p2p;
    j["multi_stream"] = switches.multi_stream;
    j["async_log_allreduce"] = switches.async_log_allreduce;
    j["nanopipe"] = f.nanopipe;
    j["baseline_makespan"] = baseline.count();
    j["reduction"] = reduction;
    j["tflops_per_device"] = weft::xdc_step_flops(f) / time.makespan.count() / 1e12;
    std::cout << j.dump() << "\n";
    return weft::cli::exit_ok;
  }
  std::cout << what << ": " << std::fixed << std::setprecision(1) << time.makespan.count() * 1e3
            << " ms per step, " << (f.nanopipe ? "MindSpeed's NanoPipe" : "Megatron's")
            << " baseline " << baseline.count() * 1e3 << " ms (" << 100 * reduction << "% less)"
            << std::defaultfloat << "\n";
  print_text(std::cout, "llama2-70b-xdc", metrics);
  return weft::cli::exit_ok;
}

int simulate_command(const request& q) {
  if (q.preset == "ampipe-16p") return ampipe_command(q);
  if (q.preset == "llama2-70b-xdc") return xdc_command(q);
  const weft::schedule s = generate(q, q.schedule);
  const simulated sim = simulate(q, s);
  write_pictures(q.trace, q.svg, sim.prog, sim.time,
                 q.schedule + ", " + std::to_string(q.pp) + " ranks, " + std::to_string(q.micro) +
                     " micro-batches" + priced(q));
  if (q.json)
    std::cout << metrics_json(q.schedule, sim.metrics).dump() << "\n";
  else
    print_text(std::cout, q.schedule, sim.metrics);
  return weft::cli::exit_ok;
}

int compare_command(const request& q) {
  std::vector<simulated> sims;
  for (const std::string& name : q.schedules) sims.push_back(simulate(q, generate(q, name)));
  const auto peak_of = [](const simulated& sim) {
    int peak = 0;
    for (const auto& r : sim.metrics.ranks) peak = std::max(peak, r.peak_activations);
    return peak;
  };
  if (q.json) {
    json all = json::array();
    for (std::size_t i = 0; i < sims.size(); ++i) {
      json j = metrics_json(q.schedules[i], sims[i].metrics);
      j["peak_activations"] = peak_of(sims[i]);
      all.push_back(j);
    }
    std::cout << all.dump() << "\n";
    return weft::cli::exit_ok;
  }
  std::cout << "times in schedule units (--cost)\n"
            << std::left << std::setw(14) << "schedule" << std::right << std::setw(12) << "makespan"
            << std::setw(10) << "bubble" << std::setw(14) << "exposed comm" << std::setw(12)
            << "peak act."
            << "\n";
  for (std::size_t i = 0; i < sims.size(); ++i) {
    const weft::unit_step_metrics& m = sims[i].metrics;
    std::cout << std::left << std::setw(14) << q.schedules[i] << std::right << std::setw(12)
              << m.makespan.count() << std::setw(9) << std::fixed << std::setprecision(1)
              << 100 * m.bubble_ratio << "%" << std::setw(14) << std::setprecision(3)
              << m.exposed_comm.count() << std::setw(12) << peak_of(sims[i]) << std::defaultfloat
              << "\n";
  }
  return weft::cli::exit_ok;
}

/// The emulated links of `run`: one class, or with cross-dc two data centres, each holding half
/// the pipeline ranks (and their expert-parallel replicas), linked inside by the inter-node link.
weft::rt::delay_model delay_preset(const request& q, int replicas) {
  const std::string& name = q.delay;
  if (name == "intra-node") return {weft::link_model::intra_node()};
  if (name == "inter-node") return {weft::link_model::inter_node()};
  if (name == "cross-dc")
    return {.on = weft::link_model::inter_node(),
            .site_ranks = q.pp >= 2 ? q.pp / 2 * replicas : 0,
            .far = weft::link_model::cross_dc(q.delay_km, q.delay_ratio)};
  return {};
}

/// What the emulated links make a pipeline transfer of `bytes` cost, for the prediction:
/// calibration keeps these with two link classes (weft::calibrated).
weft::cost_model link_costs(const weft::rt::delay_model& d, int replicas, double bytes) {
  weft::cost_model c;
  if (!d.on) return c;
  const weft::seconds near = weft::collective::p2p(*d.on, bytes);
  for (weft::kind k : {weft::kind::send, weft::kind::recv})
    c.set(k, weft::phase::F, near).set(k, weft::phase::B, near);
  c.p2p_latency = d.on->alpha;
  if (d.site_ranks > 0) {
    c.site_ranks = d.site_ranks / replicas;
    c.far_p2p = weft::collective::p2p(d.far, bytes);
    c.far_p2p_latency = d.far.alpha;
  }
  return c;
}

/// `--inject-fault KIND:RANK[:N]` as numbers (parsed and range-checked with the request): the
/// world rank, and before which of its ops.
std::pair<int, long> fault_target(const request& q) { return {q.fault_rank, q.fault_op}; }

/// A fault that could never fire is a mistake in the request, not a run that passes.
void check_fault(const request& q, const weft::schedule& s, int replicas) {
  if (q.fault.empty()) return;
  const auto [rank, index] = fault_target(q);
  const int world = s.ranks() * replicas;
  if (rank >= world)
    throw stop(weft::cli::exit_bad_input, "weft: --inject-fault " + q.fault + ": rank " +
                                              std::to_string(rank) + " is outside the world of " +
                                              std::to_string(world) + " ranks");
  const weft::program p = weft::lower(s);
  long ops = 0;  // a world rank runs the ops of its pipeline rank
  for (std::uint32_t i = 0; i < p.size(); ++i) ops += p.rank[i] == rank / replicas;
  if (index >= ops)
    throw stop(weft::cli::exit_bad_input,
               "weft: --inject-fault " + q.fault + ": rank " + std::to_string(rank) + " runs " +
                   std::to_string(ops) + " ops (0 to " + std::to_string(ops - 1) + ")");
}

/// What a run ran on: named for the report, and how many compute workers ran at once (all
/// in-process ranks share one pool; over MPI, each machine's processes share its cores).
struct backend_info {
  std::string name;
  unsigned workers = 1;
};

/// Runs `s` with `Executor` on `model`, then the serial reference, and reports both. Over MPI,
/// only rank 0 reports: it has gathered the whole run.
template <class Executor, class Model>
int run_and_report(const request& q, const weft::schedule& s, Model& model,
                   const weft::exec::run_options& opt, const std::string& what, int replicas,
                   double transfer_bytes, const backend_info& backend) {
  check_fault(q, s, replicas);
  Executor ex(model, opt);
  weft::exec::run_result<float> run;
  try {
    run = ex.run(s);
  } catch (const weft::config_error&) {
    throw;
  } catch (const std::exception& e) {  // a timeout, a failed op: the run is what failed
    throw stop(weft::cli::exit_illegal, e.what());
  }
  if (opt.comm && opt.comm->rank() != 0) return weft::cli::exit_ok;
  const float loss = model.serial_step();
  const double worst = weft::exec::max_grad_rel_err(run, model);
  const weft::step_metrics metrics = weft::measure(run.prog, run.time);
  // The prediction of this very run: costs calibrated from it, the CPU runtime's workers and
  // replicas, the same stream program through the same semantics. In-process, the machine too:
  // compute costs its CPU time, and the cores it shares with the runtime's other threads slow
  // it (over MPI, where no CPU time is gathered, its measured span and a core per worker).
  const weft::timeline predicted =
      weft::exec::predicted_run(run.prog, run.time, run, backend.workers, replicas,
                                link_costs(opt.delay, replicas, transfer_bytes));
  if (!q.svg.empty()) {  // measured above predicted, on one time scale
    std::ofstream out = open_for_writing(q.svg);
    weft::write_svg_compare(out, run.prog, run.time, "measured", predicted,
                            "predicted from the calibrated cost model",
                            {.title = q.schedule + ", " + what});
  }
  write_pictures(q.trace, "", run.prog, run.time, q.schedule + ", " + what + ", measured");
  if (q.json) {
    json j = metrics_json(q.schedule, metrics);
    j["loss"] = run.loss;
    j["serial_loss"] = loss;
    j["max_grad_rel_err"] = worst;
    j["predicted_makespan"] = predicted.makespan.count();
    j["backend"] = backend.name;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << what << " (" << backend.name << ")\n";
    print_text(std::cout, q.schedule, metrics);
    std::cout << "predicted makespan " << show(predicted.makespan)
              << " (costs calibrated from this run)\n";
    std::cout << "loss " << run.loss << " (serial " << loss << "), max gradient relative error "
              << worst << "\n";
  }
  return weft::cli::exit_ok;
}

/// `--inject-fault KIND:RANK[:N]`: what world rank RANK does before its N-th op.
std::function<void(int, const weft::op&)> fault_injection(const request& q) {
  if (q.fault.empty()) return {};
  const std::string kind = q.fault.substr(0, q.fault.find(':'));
  const std::pair<int, long> target = fault_target(q);
  const int rank = target.first;
  const long index = target.second;
  const auto stall = std::chrono::duration<double>(2 * q.timeout_s);
  auto seen = std::make_shared<std::atomic<long>>(0);
  return [=](int r, const weft::op& o) {
    if (r != rank || seen->fetch_add(1) != index) return;
    if (kind == "throw")
      throw std::runtime_error("injected fault (--inject-fault " + q.fault + ") before " +
                               weft::to_string(o));
    if (kind == "exit") std::_Exit(3);
    if (kind == "kill") std::raise(SIGKILL);
    // stall: the op (a send, say) does not happen for twice the run's timeout, so the peers'
    // watchdogs go first; bounded, so this rank's own run still ends.
    std::this_thread::sleep_for(stall);
  };
}

/// How long a failed rank of a world of processes waits before ending the job: the others have
/// been told and print what they waited at meanwhile.
constexpr auto report_linger = std::chrono::milliseconds(500);

int run_on(const request& q, weft::exec::run_options opt, const backend_info& backend);

int run_command(const request& q) {
  weft::exec::run_options opt;
  opt.timeout = weft::seconds(q.timeout_s);
  opt.before_op = fault_injection(q);
  opt.workers = static_cast<unsigned>(q.workers ? q.workers : q.backend == "mpi" ? 1 : 2);
  if (q.backend != "mpi") return run_on(q, opt, {"in-process", opt.workers});
  const std::unique_ptr<weft::cli::process_world> world = weft::cli::start_mpi(q);
  opt.comm = &world->comm();
  const bool root = opt.comm->rank() == 0;
  // A failure ends the whole job: each rank says its own, then the job ends with the code.
  try {
    return run_on(q, opt, {world->describe(), world->concurrent_workers(opt.workers)});
  } catch (const stop& e) {
    std::cerr << e.what() << "\n";
    std::this_thread::sleep_for(report_linger);
    world->abort(e.code);
  } catch (const weft::config_error& e) {  // the same on every rank: said once, by rank 0
    if (root)
      std::cerr << e.what() << "\nrun 'weft run --help' for the options\n";
    else  // rank 0 ends the job once it has said it; a peer ending it first could cut it off
      std::this_thread::sleep_for(report_linger);
    world->abort(weft::cli::exit_bad_input);
  } catch (const std::exception& e) {
    std::cerr << "weft: rank " << opt.comm->rank() << ": " << e.what() << "\n";
    std::this_thread::sleep_for(report_linger);
    world->abort(weft::cli::exit_bad_input);
  }
}

int run_on(const request& q, weft::exec::run_options opt, const backend_info& backend) {
  if (!q.schedule_file.empty()) {  // a PyTorch CSV: whole chunks, on the tiny dense model
    const weft::schedule s = read_csv_file(q.schedule_file);
    if (const weft::report r = weft::check(s); !r.ok())
      throw stop(weft::cli::exit_illegal,
                 q.schedule_file + ": " + weft::to_string(r.violations[0]) +
                     (r.violations.size() > 1
                          ? " (and " + std::to_string(r.violations.size() - 1) + " more)"
                          : ""));
    request named = q;
    named.schedule = q.schedule_file;
    opt.delay = delay_preset(q, 1);
    weft::exec::dense_model<float> model({.stages = s.model.chunks(), .micro = s.model.micro});
    const double bytes = 4.0 * model.cfg.tokens * model.cfg.width;
    return run_and_report<weft::exec::dense_executor<float>>(
        named, s, model, opt, "tiny dense model, " + std::to_string(s.ranks()) + " ranks", 1, bytes,
        backend);
  }
  const weft::schedule s = generate(q, q.schedule);
  const weft::model_desc& m = s.model;
  const int stages = m.bidirectional ? m.chunks() / 2 : m.chunks();
  if (m.stages == weft::stage_set::whole_block()) {
    opt.delay = delay_preset(q, 1);
    weft::exec::dense_model<float> model({.stages = stages, .micro = q.micro});
    const double bytes = 4.0 * model.cfg.tokens * model.cfg.width;
    return run_and_report<weft::exec::dense_executor<float>>(
        q, s, model, opt, "tiny dense model, " + std::to_string(q.pp) + " ranks", 1, bytes,
        backend);
  }
  const int ep = q.ep == 0 ? 2 : q.ep;
  opt.delay = delay_preset(q, ep);
  weft::exec::moe_config cfg = weft::exec::demo_config();
  cfg.stages = stages;
  cfg.layers = q.layers;
  cfg.micro = q.micro;
  cfg.replicas = ep;
  cfg.shared_expert = m.stages.has(weft::kind::shared);
  weft::exec::moe_model<float> model(cfg);
  return run_and_report<weft::exec::moe_executor<float>>(
      q, s, model, opt,
      "tiny MoE model, " + std::to_string(q.pp) + " pipeline ranks x " + std::to_string(ep) +
          " expert-parallel = " + std::to_string(q.pp * ep) + " ranks",
      ep, 4.0 * cfg.tokens * cfg.width, backend);
}

int plan_cp_command(const request& q) {
  weft::cp::adaptive_options o;
  o.coarse = q.coarse;
  o.remap = q.remap;
  o.planning.cap = q.cap;
  o.planning.budget = weft::seconds{q.budget_s};
  weft::cp::range_mask mask;
  if (!q.mask_file.empty()) {
    std::ifstream in(q.mask_file);
    if (!in) throw stop(weft::cli::exit_bad_input, "weft: cannot open '" + q.mask_file + "'");
    try {
      mask = weft::cp::read_mask_file(in);
    } catch (const weft::cp::mask_file_error& e) {
      throw stop(weft::cli::exit_bad_input, q.mask_file + ": " + e.what());
    }
    if (q.seq != 0 && q.seq != mask.size)
      throw stop(weft::cli::exit_bad_input, "weft: --seq " + std::to_string(q.seq) +
                                                " but the file's mask has " +
                                                std::to_string(mask.size) + " tokens");
  } else {
    mask = weft::cp::masks::by_name(q.mask, q.seq);
  }
  const weft::cp::adaptive_plan pl = weft::cp::plan_adaptive(mask, q.cp, o);
  const weft::cp::cp_plan& p = pl.plan;
  if (!q.svg.empty()) {
    std::ofstream out = open_for_writing(q.svg);
    weft::cp::write_remap_svg(
        out, pl.coarse, pl.remapped.order, q.cp,
        (q.mask_file.empty() ? q.mask : q.mask_file) + ", cp " + std::to_string(q.cp));
  }
  const auto at = [](const auto& v, int i) { return v[static_cast<std::size_t>(i)]; };
  if (!q.json) {
    std::cout << "tasks " << pl.remapped.before.tasks << " -> " << p.tasks.size() << " (re-mapping "
              << (pl.remapped.clusters
                      ? "with " + std::to_string(pl.remapped.clusters) + " clusters"
                      : std::string("kept the original order"))
              << "), rounds " << p.rounds << " (lower bound " << p.lower_bound
              << "), max comm units " << p.max_comm_units() << " (cap " << p.cap << "), planned in "
              << pl.planning_time.count() * 1e3 << " ms"
              << (p.budget_exhausted ? " (budget spent: the best plan found by then)" : "") << "\n";
    for (int r = 0; r < p.rounds; ++r) {
      std::cout << "  round " << r << ":";
      for (int rank = 0; rank < q.cp; ++rank) {
        const int x = at(at(p.run, r), rank);
        if (x < 0)
          std::cout << "  -";
        else
          std::cout << "  (" << at(p.tasks, x).q << "," << at(p.tasks, x).kv << ")";
      }
      std::cout << "\n";
    }
    return weft::cli::exit_ok;
  }
  json rounds = json::array();
  for (int r = 0; r <= p.rounds; ++r) {
    json ranks = json::array();
    for (int rank = 0; rank < q.cp; ++rank) {
      const int x = r < p.rounds ? at(at(p.run, r), rank) : -1;
      const weft::cp::transfers& t = at(at(p.moves, r), rank);
      ranks.push_back({{"rank", rank},
                       {"task", x < 0 ? json(nullptr) : json{at(p.tasks, x).q, at(p.tasks, x).kv}},
                       {"recv_q_src", t.recv_q_src},
                       {"recv_kv_src", t.recv_kv_src},
                       {"recv_o_src", t.recv_o_src},
                       {"send_q_dst", t.send_q_dst},
                       {"send_kv_dst", t.send_kv_dst},
                       {"send_o_dst", t.send_o_dst},
                       {"units", t.units()}});
    }
    rounds.push_back({{"round", r}, {"ranks", ranks}});
  }
  json j;
  j["tasks"] = p.tasks.size();
  j["tasks_before_remap"] = pl.remapped.before.tasks;
  j["clusters"] = pl.remapped.clusters;
  j["rounds"] = p.rounds;
  j["lower_bound"] = p.lower_bound;
  j["max_comm_units"] = p.max_comm_units();
  j["cap"] = p.cap;
  j["planning_ms"] = pl.planning_time.count() * 1e3;
  j["budget_exhausted"] = p.budget_exhausted;
  j["tokens_per_cell"] = pl.tokens_per_cell;
  j["opt_seq"] = pl.token_order();
  j["plan"] = rounds;
  std::cout << j.dump() << "\n";
  return weft::cli::exit_ok;
}

int dispatch(const request& q) {
  if (q.command == "generate") return generate_command(q);
  if (q.command == "check") return check_command(q);
  if (q.command == "verify") return verify_command(q);
  if (q.command == "simulate") return simulate_command(q);
  if (q.command == "compare") return compare_command(q);
  if (q.command == "run") return run_command(q);
  if (q.command == "tp2d") return weft::cli::tp2d_command(q);
  if (q.command == "search") return weft::cli::search_command(q);
  if (q.command == "plan") return weft::cli::plan_command(q);
  return plan_cp_command(q);
}

}  // namespace

int main(int argc, char** argv) {
  const weft::cli::parsed p = weft::cli::parse(argc, argv);
  if (!p.run) {
    std::cout << p.out;
    std::cerr << p.err;
    return p.exit_code;
  }
  const std::string hint = "run 'weft " + p.q.command + " --help' for the options";
  // Every failure is one message and an exit code; nothing aborts.
  try {
    return dispatch(p.q);
  } catch (const stop& e) {
    std::cerr << e.what() << "\n";
    return e.code;
  } catch (const weft::config_error& e) {  // an impossible configuration or a limit
    std::cerr << e.what() << "\n" << hint << "\n";
    return weft::cli::exit_bad_input;
  } catch (const std::bad_alloc&) {
    std::cerr << "weft: out of memory; the request is too large for this machine "
                 "(docs/limits.md)\n";
    return weft::cli::exit_bad_input;
  } catch (const std::exception& e) {
    std::cerr << "weft: " << e.what() << "\n";
    return weft::cli::exit_bad_input;
  }
}
