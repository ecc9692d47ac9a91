// AMPipe (MindSpeed's ampipe note), two ways.
//
//   ampipe table [SVG]   the note's table on the ampipe-16p scenario (simulated from public
//                        facts, docs/ampipe.md) beside the note's measured throughputs, and the
//                        degree sweep; SVG gets the baseline and AMPipe's timelines;
//   ampipe executed [RUNS [SVG]]
//                        a small MoE (pp 1, 2 expert-parallel ranks, 2 layers) trained one step
//                        on in-process ranks whose all-to-alls cross an emulated link, at AMPipe
//                        degree 1, 2, 4, 8: measured step and exposed communication beside the
//                        prediction from costs calibrated on the same run (medians of RUNS, 5 by
//                        default); SVG gets the measured timelines of degree 1 and 4, one above
//                        the other.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/ampipe_preset.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/prediction.hpp>
#include <weft/sim/simulate.hpp>
#include "scenario_presets.hpp"

using namespace weft;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int table(const char* svg) {
  const moe_mesh_facts f = testing::ampipe_16p();  // the preset, as `weft simulate` reads it
  const cost_model c = ampipe_cost_model(f);
  struct row {
    const char* name;
    ampipe_config s;
    double note_tflops;
  };
  const row rows[] = {
      {"baseline", {}, 120.56},
      {"pipe-experts (multi-stream, N=2)",
       {.pipe_experts = true, .multi_data = 2, .multi_stream = true},
       124.85},
      {"ampipe (D=2, tp-sp overlap)", {.degree = 2, .tp_sp_overlap = true}, 127.29},
      {"ampipe & pipe-experts (N=4)",
       {.degree = 2,
        .tp_sp_overlap = true,
        .pipe_experts = true,
        .multi_data = 4,
        .multi_stream = true},
       126.87},
  };
  std::printf("%-34s %9s %9s %8s %9s %12s\n", "ampipe-16p", "step ms", "TFLOP/s", "gain",
              "MindSpeed", "exposed ms");
  double base = 0;
  std::vector<std::pair<program, timeline>> drawn;
  for (const row& r : rows) {
    const program p = lower(ampipe_schedule(f, r.s));
    const timeline t = simulate(p, c);
    const step_metrics m = measure(p, t);
    if (base == 0) base = t.makespan.count();
    if (drawn.size() < 3) drawn.emplace_back(p, t);
    std::printf("%-34s %9.1f %9.2f %+7.2f%% %+8.2f%% %12.1f\n", r.name, 1e3 * t.makespan.count(),
                step_flops(f) / t.makespan.count() / 1e12, 100 * (base / t.makespan.count() - 1),
                100 * (r.note_tflops / rows[0].note_tflops - 1), 1e3 * m.exposed_comm.count());
  }
  // What overlap costs (docs/metrics.md): each row's gain over the baseline under the same facts.
  const contention_facts published = contention_facts::published();
  const std::pair<const char*, contention_facts> facts[] = {
      {"free", {}},
      {"links", {.shared_links = true}},
      {"interference", {.compute_slowdown = published.compute_slowdown}},
      {"both", published}};
  std::printf("\ncontention ablation: gain over the baseline\n%-34s", "");
  for (const auto& [name, x] : facts) std::printf(" %12s", name);
  std::printf(" %9s\n", "MindSpeed");
  std::vector<double> bases;
  for (const row& r : rows) {
    std::printf("%-34s", r.name);
    const program p = lower(ampipe_schedule(f, r.s));
    for (std::size_t i = 0; i < std::size(facts); ++i) {
      cost_model priced = c;
      priced.contention = facts[i].second;
      const double step = simulate(p, priced).makespan.count();
      if (bases.size() <= i) bases.push_back(step);
      std::printf(" %+11.2f%%", 100 * (bases[i] / step - 1));
    }
    std::printf(" %+8.2f%%\n", 100 * (r.note_tflops / rows[0].note_tflops - 1));
  }
  std::printf("\ndegree sweep (tp-sp overlap on)\n%6s %9s %8s %12s\n", "degree", "step ms", "gain",
              "exposed ms");
  for (int d = 1; d <= 16; d *= 2) {
    const program p = lower(ampipe_schedule(f, {.degree = d, .tp_sp_overlap = true}));
    const timeline t = simulate(p, c);
    std::printf("%6d %9.1f %+7.2f%% %12.1f\n", d, 1e3 * t.makespan.count(),
                100 * (base / t.makespan.count() - 1), 1e3 * measure(p, t).exposed_comm.count());
  }
  if (svg) {
    std::ofstream out(svg);
    write_svg_compare(out, drawn[0].first, drawn[0].second, "baseline: degree 1", drawn[2].first,
                      drawn[2].second, "AMPipe degree 2 with tp-sp overlap (2 pieces per chunk)",
                      {.title = "ampipe-16p, one device, simulated"});
  }
  return 0;
}

// A link slow enough that the model's all-to-alls are worth hiding behind a CPU's compute.
constexpr link_model ep_link = link_model::with_bandwidth(seconds(20e-6), 0.1e9);
constexpr int replicas = 2, layers = 2, micro = 4;

int executed(int runs, const char* svg) {
  exec::moe_config cfg = exec::demo_config();
  cfg.tokens = 128;
  cfg.width = 64;
  cfg.ffn = 128;
  cfg.stages = 1;
  cfg.layers = layers;
  cfg.micro = micro;
  cfg.replicas = replicas;
  cfg.shared_expert = false;
  cfg.seed = 3;
  const exec::moe_model<float> model(cfg);
  std::printf(
      "small MoE: pp 1 x %d expert-parallel, %d layers, %d micro-batches of %d tokens, "
      "width %d, link %.0f us + %.2f GB/s; %d runs each, medians\n",
      replicas, layers, micro, cfg.tokens, cfg.width, ep_link.alpha.count() * 1e6,
      1e-9 / ep_link.beta.count(), runs);
  std::printf("%6s %22s %26s %12s\n", "degree", "step ms (meas / pred)", "exposed comm ms (m / p)",
              "grad error");
  struct kept {
    program prog;
    timeline time;
  };
  std::vector<kept> pictures;
  for (const int d : {1, 2, 4, 8}) {
    const schedule s = one_f_one_b({.ranks = 1,
                                    .micro = micro,
                                    .layers = layers,
                                    .stages = stage_set::moe(),
                                    .overlap = {.pipeline_splits = true},
                                    .splits = d});
    exec::run_options opt;
    opt.delay = rt::delay_model{ep_link};
    exec::moe_executor<float> ex(model, opt);
    std::vector<double> step, pred, exposed, exposed_pred;
    double worst = 0;
    for (int r = 0; r < runs; ++r) {
      exec::run_result<float> run = ex.run(s);
      const timeline sim = predicted_run(run.prog, run.time, run, opt.workers, replicas);
      const step_metrics got = measure(run.prog, run.time), want = measure(run.prog, sim);
      step.push_back(got.makespan.count());
      pred.push_back(want.makespan.count());
      exposed.push_back(got.exposed_comm.count());
      exposed_pred.push_back(want.exposed_comm.count());
      exec::moe_model<float> reference(cfg);
      reference.serial_step();
      worst = std::max(worst, exec::max_grad_rel_err(run, reference));
      if (r == 0 && (d == 1 || d == 4)) pictures.push_back({run.prog, run.time});
    }
    std::printf("%6d %10.2f / %8.2f %12.2f / %10.2f %12.1e\n", d, 1e3 * median(step),
                1e3 * median(pred), 1e3 * median(exposed), 1e3 * median(exposed_pred), worst);
  }
  if (svg && pictures.size() == 2) {
    std::ofstream out(svg);
    write_svg_compare(out, pictures[0].prog, pictures[0].time,
                      "AMPipe degree 1: every all-to-all waits for its compute", pictures[1].prog,
                      pictures[1].time,
                      "degree 4: dispatch(s) beside attention(s+1), combine(s) beside experts(s+1)",
                      {.title = "small MoE, 1 pipeline rank x 2 expert-parallel, measured"});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "table";
  if (mode == "table") return table(argc > 2 ? argv[2] : nullptr);
  if (mode == "executed")
    return executed(argc > 2 ? std::max(1, std::atoi(argv[2])) : 5, argc > 3 ? argv[3] : nullptr);
  std::fprintf(stderr, "usage: ampipe table [SVG] | ampipe executed [RUNS [SVG]]\n");
  return 2;
}
