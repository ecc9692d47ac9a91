// Trains a tiny MoE transformer for a few steps on 4 in-process ranks — 2 pipeline ranks, each
// with 2 expert-parallel replicas — with DualPipeV and MoE fb-overlap, next to the 1F1B baseline
// training the same model. All-to-alls cross an emulated link about as slow as the experts'
// compute (DeepSeek-V3's situation, which fb-overlap exists for). Prints the loss of every step
// with its step time, then bubble and exposed communication side by side, and writes the trace
// and SVG timeline of DualPipeV's last step.
//
//   train_moe_dualpipev [OUTPUT_DIR]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/exec/optimizer.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/svg.hpp>
#include <weft/sim/metrics.hpp>

using namespace weft;

namespace {

constexpr int pipeline_ranks = 2, replicas = 2, micro = 8, layers_per_chunk = 2, steps = 6;
constexpr float learning_rate = 0.01f;

exec::moe_config tiny_moe() {
  exec::moe_config c = exec::demo_config();
  c.stages = 2 * pipeline_ranks;  // DualPipeV: two chunks per rank, one stage each
  c.layers = layers_per_chunk;
  c.micro = micro;
  c.replicas = replicas;
  c.seed = 2026;
  return c;
}

/// The same model cut into fewer, deeper stages: 1F1B gives each rank one chunk.
exec::moe_model<float> regroup(const exec::moe_model<float>& m, int stages) {
  exec::moe_model<float> out = m;
  const int per = m.cfg.stages / stages;
  out.cfg.stages = stages;
  out.cfg.layers = m.cfg.layers * per;
  out.stages.assign(static_cast<std::size_t>(stages), {});
  for (int s = 0; s < m.cfg.stages; ++s)
    for (const auto& layer : m.stages[static_cast<std::size_t>(s)])
      out.stages[static_cast<std::size_t>(s / per)].push_back(layer);
  return out;
}

struct trainer {
  std::string name;
  schedule sched;
  exec::moe_model<float> model;
  std::vector<step_metrics> metrics;
  exec::run_result<float> last;

  void step(const exec::run_options& opt) {
    exec::moe_executor<float> ex(model, opt);
    last = ex.run(sched);
    metrics.push_back(measure(last.prog, last.time));
    exec::sgd_step(model, last, learning_rate);
  }
  /// The median over the steps of one metric.
  template <class Fn>
  double median(Fn&& fn) const {
    std::vector<double> v;
    for (const step_metrics& m : metrics) v.push_back(fn(m));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? std::string(argv[1]) + "/" : "";
  const stage_set moe = stage_set::moe_with_shared();
  const exec::moe_model<float> model(tiny_moe());

  trainer dual{"DualPipeV + fb-overlap",
               dualpipev({.ranks = pipeline_ranks,
                          .micro = micro,
                          .layers = layers_per_chunk,
                          .stages = moe,
                          .overlap = overlap_options::all()}),
               model,
               {},
               {}};
  trainer base{
      "1F1B",
      one_f_one_b(
          {.ranks = pipeline_ranks, .micro = micro, .layers = layers_per_chunk * 2, .stages = moe}),
      regroup(model, pipeline_ranks),
      {},
      {}};

  exec::run_options opt;
  opt.workers = 2;
  // 150 us and 2 GB/s per all-to-all or transfer: about an expert's compute here.
  opt.delay = rt::delay_model{link_model::with_bandwidth(seconds(150e-6), 2e9)};

  std::printf("tiny MoE: %d stages x %d layers, %d experts (top-%d) + shared, %d micro-batches\n",
              tiny_moe().stages, layers_per_chunk, tiny_moe().experts, tiny_moe().top_k, micro);
  std::printf("%d ranks: %d pipeline x %d expert-parallel, %u worker threads\n\n",
              pipeline_ranks * replicas, pipeline_ranks, replicas, opt.workers);
  std::printf("%4s  %-24s %10s  %-24s %10s\n", "step", dual.name.c_str(), "step time",
              base.name.c_str(), "step time");
  for (int s = 0; s < steps; ++s) {
    exec::moe_model<float> reference = dual.model;  // the serial run of the same step
    dual.step(opt);
    base.step(opt);
    const float serial = reference.serial_step();
    const double err = exec::max_grad_rel_err(dual.last, reference);
    std::printf(
        "%4d  loss %-19.6f %8.2f ms  loss %-19.6f %8.2f ms   (serial %.6f, grad err %.1e)\n", s + 1,
        static_cast<double>(dual.last.loss), 1e3 * dual.metrics.back().makespan.count(),
        static_cast<double>(base.last.loss), 1e3 * base.metrics.back().makespan.count(),
        static_cast<double>(serial), err);
  }

  std::printf("\nmedians over %d steps       %-24s %-24s\n", steps, dual.name.c_str(),
              base.name.c_str());
  const auto row = [&](const char* what, auto fn, double scale, const char* unit) {
    std::printf("  %-24s %10.2f %-13s %10.2f %s\n", what, scale * dual.median(fn), unit,
                scale * base.median(fn), unit);
  };
  row(
      "step time", [](const step_metrics& m) { return m.makespan.count(); }, 1e3, "ms");
  row(
      "bubble", [](const step_metrics& m) { return m.bubble_ratio; }, 100, "%");
  row(
      "exposed comm (all ranks)", [](const step_metrics& m) { return m.exposed_comm.count(); }, 1e3,
      "ms");
  row(
      "  warm-up", [](const step_metrics& m) { return m.exposed_by_phase[0].count(); }, 1e3, "ms");
  row(
      "  steady", [](const step_metrics& m) { return m.exposed_by_phase[1].count(); }, 1e3, "ms");
  row(
      "  cool-down", [](const step_metrics& m) { return m.exposed_by_phase[2].count(); }, 1e3,
      "ms");

  const std::string trace = dir + "train_moe_dualpipev.trace.json";
  const std::string svg = dir + "train_moe_dualpipev.svg";
  std::ofstream t(trace), v(svg);
  if (!t || !v) {
    std::cerr << "cannot write " << trace << " or " << svg << "\n";
    return 1;
  }
  write_chrome_trace(t, dual.last.prog, dual.last.time);
  write_svg(v, dual.last.prog, dual.last.time, {.title = "DualPipeV + fb-overlap, measured"});
  std::printf("\nwrote %s (chrome://tracing, Perfetto) and %s\n", trace.c_str(), svg.c_str());
}
