// The search on the CPU runtime: the MoE example (2 pipeline x 2 expert-parallel in-process
// ranks, 8 micro-batches, 4 MoE layers per rank, every all-to-all and transfer over the emulated
// link of calibrate.cpp). Every generator that applies runs RUNS times; the cost model is
// calibrated from the best one's median run (compute means, comm spans, the runtime's latencies);
// the search, judging plans with the shared-worker simulator as this runtime runs them, looks for
// a faster plan under the memory cap; the plan found runs RUNS times too, with its loss and
// gradients against the serial run. Medians.
//
//   search_executed [RUNS [BUDGET_S [CAP [WORKERS]]]]
//   (CAP: live units per rank, default twice 1F1B's; WORKERS: compute workers, default 1)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/search/search.hpp>
#include <weft/sim/calibrate.hpp>

#include "moe_example.hpp"

using namespace weft;

namespace {

using bench::median;
using bench::micro;
using bench::pipeline_ranks;
using bench::replicas;
unsigned workers = 1;

struct measured_runs {
  std::vector<exec::run_result<float>> runs;
  double median_step = 0;
  double grad_err = 0;
  float loss = 0, serial = 0;
};

measured_runs run_many(exec::moe_model<float>& model, const schedule& s, int runs) {
  exec::run_options opt;
  opt.workers = workers;
  opt.delay = rt::delay_model{bench::ep_link};
  exec::moe_executor<float> ex(model, opt);
  measured_runs out;
  std::vector<double> steps;
  for (int r = 0; r < runs; ++r) {
    out.runs.push_back(ex.run(s));
    steps.push_back(out.runs.back().time.makespan.count());
  }
  out.median_step = median(steps);
  out.serial = model.serial_step();
  out.grad_err = exec::max_grad_rel_err(out.runs.back(), model);
  out.loss = out.runs.back().loss;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double budget = argc > 2 ? std::atof(argv[2]) : 10.0;
  const int cap = argc > 3 ? std::atoi(argv[3]) : 2 * pipeline_ranks;
  if (argc > 4) workers = static_cast<unsigned>(std::max(1, std::atoi(argv[4])));
  const exec::moe_config cfg = bench::example_config(pipeline_ranks, 4);
  exec::moe_model<float> model(cfg);

  search::problem q;
  q.model = {.ranks = pipeline_ranks,
             .micro = micro,
             .layers = cfg.layers,
             .stages = stage_set::moe_with_shared(),
             .max_live = cap};
  q.overlap = overlap_options::none();
  q.workers = workers;
  q.replicas = replicas;

  std::printf(
      "%d ranks (%d pipeline x %d expert-parallel), %u compute + 1 comm workers, link %.0f us + "
      "%.1f GB/s, memory cap %d units per rank; %d runs each, medians\n",
      pipeline_ranks * replicas, pipeline_ranks, replicas, workers,
      bench::ep_link.alpha.count() * 1e6, 1e-9 / bench::ep_link.beta.count(), cap, runs);
  std::printf("%-28s %12s %12s %14s %10s\n", "schedule", "measured", "predicted", "grad rel err",
              "peak live");

  // Every generator that applies to the model, measured.
  const auto gens = search::generator_plans(q.model, q.overlap);
  std::string best_name;
  measured_runs best;
  search::plan best_plan;
  std::vector<measured_runs> all;  // every generator's runs: together they cost every step kind
  for (const auto& [name, p, why] : gens) {
    if (!p) continue;
    const search::plan& full = *p;
    const schedule s = search::to_schedule(full);
    if (!check(s).ok()) {
      std::printf("%-28s over the memory cap\n", name.c_str());
      continue;
    }
    measured_runs m = run_many(model, s, runs);
    int peak = 0;
    for (const int x : peak_live_activations(s)) peak = std::max(peak, x);
    std::printf("%-28s %9.2f ms %12s %14.2g %10d\n", name.c_str(), 1e3 * m.median_step, "",
                m.grad_err, peak);
    if (best_name.empty() || m.median_step < best.median_step) {
      best_name = name;
      best = m;
      best_plan = full;
    }
    all.push_back(std::move(m));
  }
  if (best_name.empty()) {
    std::printf("no generator fits the cap\n");
    return 1;
  }
  // The costs of each generator's median run — the best one's last, so that it has the say on
  // what they share (another generator brings what it alone runs: split backwards, say).
  const auto middle = [](const measured_runs& m) -> const exec::run_result<float>& {
    std::vector<std::size_t> order(m.runs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return m.runs[a].time.makespan < m.runs[b].time.makespan;
    });
    return m.runs[order[order.size() / 2]];
  };
  q.cost = bench::link_costs(cfg);
  for (const measured_runs& m : all) {
    const exec::run_result<float>& run = middle(m);
    q.cost = calibrated(run.prog, run.time, q.cost, run.comm_span);
  }
  const exec::run_result<float>& mid = middle(best);
  q.cost = calibrated(mid.prog, mid.time, q.cost, mid.comm_span);
  q.sim = {.event_latency = measured_event_latency(mid.prog, mid.time, mid.posted),
           .dispatch_overhead = mid.dispatch_gap,
           .wake_latency = mid.wake_gap};

  const search::search_result<seconds> r = search::find_schedule(q, {.budget_s = budget});
  if (!r.best) {
    std::printf("the search found no legal plan\n");
    return 1;
  }
  const auto predicted_of = [&](const search::plan& p) {
    const auto s = search::evaluate(q, p);
    return s ? 1e3 * s->makespan.count() : 0.0;
  };
  // The plan found and the best generator again, run by run in turn, so that the machine's drift
  // from one minute to the next falls on both alike.
  const schedule found = search::to_schedule(r.best->p);
  const schedule generator = search::to_schedule(best_plan);
  exec::run_options opt;
  opt.workers = workers;
  opt.delay = rt::delay_model{bench::ep_link};
  exec::moe_executor<float> ex(model, opt);
  measured_runs f, g;
  std::vector<double> f_steps, g_steps;
  const auto one = [&](const schedule& s, measured_runs& into, std::vector<double>& steps) {
    into.runs.push_back(ex.run(s));
    steps.push_back(into.runs.back().time.makespan.count());
  };
  for (int k = 0; k < 2 * runs; ++k) {  // and which goes first alternates
    if (k % 2 == (k / 2) % 2)
      one(found, f, f_steps);
    else
      one(generator, g, g_steps);
  }
  if (std::getenv("WEFT_BENCH_SAMPLES")) {  // every run, not only the medians
    for (double x : f_steps) std::printf(" f %.1f", 1e3 * x);
    for (double x : g_steps) std::printf(" g %.1f", 1e3 * x);
    std::printf("\n");
  }
  f.median_step = median(f_steps);
  g.median_step = median(g_steps);
  f.serial = model.serial_step();
  f.grad_err = exec::max_grad_rel_err(f.runs.back(), model);
  f.loss = f.runs.back().loss;
  std::printf("%-28s %9.2f ms %9.2f ms %14.2g %10d\n", ("search (" + r.found_by + ")").c_str(),
              1e3 * f.median_step, 1e3 * r.best->makespan.count(), f.grad_err, r.best->peak_live);
  std::printf("%-28s %9.2f ms %9.2f ms   (again, in turn with the plan found)\n", best_name.c_str(),
              1e3 * g.median_step, predicted_of(best_plan));
  // Every schedule sums a step's gradients in the same order: the plan found trains exactly as
  // the generator's does.
  const bool same = exec::same_bits(f.runs.back(), g.runs.back());
  std::printf("loss and gradients equal to %s's bit for bit: %s\n", best_name.c_str(),
              same ? "yes" : "no");
  std::printf(
      "measured in turn: the plan found %.1f %% %s than %s (medians of %d); loss %.6g (serial "
      "%.6g); %llu plans judged in %.1f s\n",
      100 * std::abs(1 - f.median_step / g.median_step),
      f.median_step < g.median_step ? "faster" : "slower", best_name.c_str(), runs, f.loss,
      f.serial, static_cast<unsigned long long>(r.evaluations), r.seconds);
  return same ? 0 : 1;
}
