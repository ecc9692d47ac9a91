// `weft simulate` (simulate.hpp): a generator's schedule in schedule units, or a MindSpeed note's
// scenario in seconds beside its baseline.
#include "commands/simulate.hpp"

#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/plan/presets.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/ampipe_preset.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "commands/report.hpp"
#include "commands/simulated.hpp"
#include "pipeline_request.hpp"

namespace weft::cli {

simulated simulate_pipeline(const schedule& s, const cost_args& cost, bool record_slowed) {
  const bool big = s.ops.size() > 1'000'000;
  const auto progress = [&](const char* what) {
    if (big) std::cerr << "weft: " << what << " (" << s.ops.size() << " ops)\n";
  };
  simulated out;
  progress("lowering");
  out.prog = lower(s);  // an illegal schedule: `illegal_schedule`, exit 1
  progress("simulating");
  // --cost describes a rank's share of the model (`per_chunk_of`); a preset is per chunk.
  const unit_cost_model given = unit_costs(cost);
  out.time =
      simulate(out.prog, cost.preset != preset_name::none ? given : given.per_chunk_of(s.model),
               {.slot_barrier = cost.barrier, .record_slowed = record_slowed});
  if (out.time.deadlocked()) {
    std::string why = "weft: simulate: deadlock; each rank is stuck at:";
    for (int r = 0; r < out.prog.ranks(); ++r) {
      const std::uint32_t i = out.time.blocked[static_cast<std::size_t>(r)];
      if (i != npos)
        why += "\n  rank " + std::to_string(r) + ": " + to_string(out.prog.at(i)) + " (slot " +
               std::to_string(out.prog.slot[i]) + ")";
    }
    throw illegal_schedule(why);
  }
  progress("measuring");
  out.metrics = measure(out.prog, out.time);
  return out;
}

namespace {

/// The AMPipe degrees `--ampipe-degree auto` tries.
constexpr int most_ampipe_degree = 16;

/// simulate --preset ampipe-16p: the AMPipe note's scenario with the switches asked for, beside its
/// baseline (degree 1, no pipe-experts); with --ampipe-degree auto, every degree the note's rules
/// take, and the fastest.
int ampipe_scenario(const simulate_args& o) {
  const pipeline_args& p = o.pipeline;
  const plan::preset pre = plan::read_preset(preset_dir("ampipe-16p"));
  for (const std::string& w : pre.warnings) std::cerr << "weft: " << w << "\n";
  const moe_mesh_facts f = plan::moe_mesh_facts_of(pre);
  cost_model cost = ampipe_cost_model(f);
  cost.contention = o.cost.contention;
  struct result {
    ampipe_layout layout;
    program prog;
    timeline time;
  };
  const auto simulate_with = [&](int degree) {
    result r;
    const schedule s = ampipe_schedule(f,
                                       {.degree = degree,
                                        .tp_sp_overlap = p.tp_sp_overlap,
                                        .pipe_experts = p.pipe_experts(),
                                        .multi_data = p.multi_data,
                                        .multi_stream = p.multi_stream},
                                       &r.layout);
    r.prog = lower(s);
    r.time = simulate(r.prog, cost, {.record_slowed = o.output.pictures()});
    return r;
  };
  const seconds baseline = simulate(lower(ampipe_schedule(f, {})), cost).makespan;
  json sweep = json::array();
  std::optional<result> best;
  if (p.ampipe_degree == 0) {
    for (int d = 1; d <= most_ampipe_degree; ++d) {
      try {
        result r = simulate_with(d);
        sweep.push_back({{"degree", d}, {"makespan", r.time.makespan.count()}});
        if (!best || r.time.makespan < best->time.makespan) best = std::move(r);
      } catch (const config_error&) {  // a degree the rules refuse: not a candidate
      }
    }
  } else {
    best = simulate_with(p.ampipe_degree);
  }
  const result& r = *best;
  if (!r.layout.warning.empty()) std::cerr << r.layout.warning << "\n";
  const step_metrics metrics = measure(r.prog, r.time);
  const double tflops = step_flops(f) / r.time.makespan.count() / 1e12;
  const double gain = baseline / r.time.makespan - 1;
  const std::string what =
      "ampipe-16p, degree " + std::to_string(r.layout.splits) + ", " +
      std::to_string(r.layout.pieces) + " piece(s) per chunk" +
      (r.layout.overlap.multi_stream_all_to_all ? ", two all-to-all streams" : "");
  write_pictures(o.output.trace, o.output.svg, r.prog, r.time, what + priced(o.cost.contention));
  if (o.output.json) {
    json j = metrics_json("ampipe-16p", metrics);
    j["degree"] = r.layout.splits;
    j["pieces_per_chunk"] = r.layout.pieces;
    j["pipe_experts"] = r.layout.pipe_experts;
    j["multi_stream"] = r.layout.overlap.multi_stream_all_to_all;
    j["tp_sp_overlap"] = p.tp_sp_overlap;
    j["tflops_per_device"] = tflops;
    j["baseline_makespan"] = baseline.count();
    j["gain"] = gain;
    if (!sweep.empty()) j["sweep"] = sweep;
    std::cout << j.dump() << "\n";
    return exit_ok;
  }
  std::cout << what << ": " << std::fixed << std::setprecision(2) << tflops
            << " TFLOP/s per device, " << 100 * gain << "% over the baseline ("
            << baseline.count() * 1e3 << " ms)" << std::defaultfloat << "\n";
  for (const json& d : sweep)
    std::cout << "  degree " << d["degree"].get<int>() << ": " << std::fixed << std::setprecision(1)
              << d["makespan"].get<double>() * 1e3 << " ms\n"
              << std::defaultfloat;
  print_text(std::cout, "ampipe-16p", metrics);
  return exit_ok;
}

/// simulate --preset llama2-70b-xdc: the cross-DC note's scenario with the switches asked for,
/// beside Megatron's baseline on the same links.
int xdc_scenario(const simulate_args& o) {
  const pipeline_args& p = o.pipeline;
  const xdc_facts f = xdc_facts_of(p.chunks, p.micro, p.nanopipe, o.delay);
  const cost_model cost = xdc_cost_model(f, xdc_contention_of(f, o.cost));
  const p2p_options switches = p2p_of(p);
  const program prog = lower(xdc_schedule(f, switches));
  const timeline time = simulate(prog, cost, {.record_slowed = o.output.pictures()});
  const seconds baseline = simulate(lower(xdc_schedule(f, {})), cost).makespan;
  const step_metrics metrics = measure(prog, time);
  const double reduction = 1 - time.makespan / baseline;
  std::string what = "llama2-70b-xdc, VP " + std::to_string(f.chunks) + ", " +
                     std::to_string(f.micro) + " micro-batches";
  if (f.nanopipe) what += ", NanoPipe";
  if (f.sites > 1) what += ", data centres " + std::to_string(static_cast<int>(f.km)) + " km apart";
  write_pictures(o.output.trace, o.output.svg, prog, time, what + priced(o.cost.contention));
  if (o.output.json) {
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
    j["tflops_per_device"] = xdc_step_flops(f) / time.makespan.count() / 1e12;
    std::cout << j.dump() << "\n";
    return exit_ok;
  }
  std::cout << what << ": " << std::fixed << std::setprecision(1) << time.makespan.count() * 1e3
            << " ms per step, " << (f.nanopipe ? "MindSpeed's NanoPipe" : "Megatron's")
            << " baseline " << baseline.count() * 1e3 << " ms (" << 100 * reduction << "% less)"
            << std::defaultfloat << "\n";
  print_text(std::cout, "llama2-70b-xdc", metrics);
  return exit_ok;
}

}  // namespace

int run_command(const simulate_args& o) {
  if (o.cost.preset == preset_name::ampipe_16p) return ampipe_scenario(o);
  if (o.cost.preset == preset_name::llama2_70b_xdc) return xdc_scenario(o);
  const pipeline_args& p = o.pipeline;
  const schedule s = schedule_of(p, p.schedule, {}, &std::cerr);
  const simulated sim = simulate_pipeline(s, o.cost, o.output.pictures());
  write_pictures(o.output.trace, o.output.svg, sim.prog, sim.time,
                 p.schedule + ", " + std::to_string(p.pp) + " ranks, " + std::to_string(p.micro) +
                     " micro-batches" + priced(o.cost.contention));
  if (o.output.json)
    std::cout << metrics_json(p.schedule, sim.metrics).dump() << "\n";
  else
    print_text(std::cout, p.schedule, sim.metrics);
  return exit_ok;
}

}  // namespace weft::cli
