// Predicted against measured: a tiny MoE trained on 4 in-process ranks (2 pipeline x 2
// expert-parallel) with all-to-alls and transfers over an emulated link. Each schedule runs
// several times; the cost model is calibrated from each run — compute ops' CPU time (their work)
// and the comm ops' spans (`calibrated`), the runtime's reaction to an event
// (`measured_event_latency`), its cost per unit and wake-up, the CPU its other threads take —
// with communication from the link model, and the shared-worker simulator, replicas, the
// machine's cores and all, predicts the step.
// Prints measured and predicted step time, the median of the runs' own errors (and of three
// ablations': every unit of compute at its (kind, phase)'s mean work rather than its own, the
// runtime's other threads on the cores evenly rather than per communication in flight, and no
// cores — compute at its measured span, a core per worker) and exposed communication per phase,
// medians.
//
//   calibrate [RUNS [COMPUTE_WORKERS]]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/prediction.hpp>
#include <weft/sim/shared_workers.hpp>

#include "moe_example.hpp"

using namespace weft;

namespace {

using bench::median;
using bench::micro;
using bench::pipeline_ranks;
using bench::replicas;
// By default one compute worker and one comm worker: with the timer that keeps 2 cores busy but
// not oversubscribed (on an oversubscribed core every wake-up waits for a scheduler quantum).
unsigned workers = 1;
void compare(const char* name, const schedule& s, const exec::moe_config& c, int runs) {
  const exec::moe_model<float> model(c);
  exec::run_options opt;
  opt.workers = workers;
  opt.delay = rt::delay_model{bench::ep_link};
  exec::moe_executor<float> ex(model, opt);
  std::vector<double> step, predicted, exposed[3], exposed_pred[3];
  // Per run, the error of the model and of three ablations: every unit of a (kind, phase) at
  // its mean work, the runtime's other threads taking an
  // even share of the cores all the time (not per communication in flight), and no cores at all
  // (compute at its measured span, a core per worker).
  std::vector<double> error, means, even, coreless;
  for (int r = 0; r < runs; ++r) {
    const exec::run_result<float> run = ex.run(s);
    const step_metrics got = measure(run.prog, run.time);
    const cost_model links = bench::link_costs(c);
    const timeline sim = predicted_run(run.prog, run.time, run, workers, replicas, links);
    const step_metrics want = measure(run.prog, sim);
    const auto off = [&](const timeline& t) { return (t.makespan - got.makespan) / got.makespan; };
    sim_options o = sim_options_from(run.prog, run.time, run);
    // Every unit of a (kind, phase) at its mean work, not each op copy at its own.
    sim_options mean_work = o;
    mean_work.work.clear();
    means.push_back(off(simulate_on_workers(
        run.prog, calibrated_from(run.prog, run.time, run, links), workers, mean_work, replicas)));
    o.comm_load = 0;
    o.background_load = run.background_cores;
    even.push_back(off(simulate_on_workers(
        run.prog, calibrated_from(run.prog, run.time, run, links), workers, o, replicas)));
    o.cores = 0;
    o.co_run_slowdown = 0;
    o.work.clear();
    coreless.push_back(off(simulate_on_workers(
        run.prog, calibrated(run.prog, run.time, links, run.comm_span), workers, o, replicas)));
    error.push_back(off(sim));
    step.push_back(got.makespan.count());
    predicted.push_back(want.makespan.count());
    for (int ph = 0; ph < 3; ++ph) {
      exposed[ph].push_back(got.exposed_by_phase[ph].count());
      exposed_pred[ph].push_back(want.exposed_by_phase[ph].count());
    }
  }
  std::printf("%-24s %9.2f ms %9.2f ms %+7.1f %% %+7.1f %% %+7.1f %% %+7.1f %%", name,
              1e3 * median(step), 1e3 * median(predicted), 100 * median(error), 100 * median(means),
              100 * median(even), 100 * median(coreless));
  for (int ph = 0; ph < 3; ++ph)
    std::printf("   %6.2f / %6.2f", 1e3 * median(exposed[ph]), 1e3 * median(exposed_pred[ph]));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  if (argc > 2) workers = static_cast<unsigned>(std::max(1, std::atoi(argv[2])));
  const stage_set moe = stage_set::moe_with_shared();
  std::printf(
      "%d ranks (%d pipeline x %d expert-parallel), %u compute + 1 comm workers, link %.0f us + "
      "%.1f GB/s, "
      "%d runs each, medians\n",
      pipeline_ranks * replicas, pipeline_ranks, replicas, workers,
      bench::ep_link.alpha.count() * 1e6, 1e-9 / bench::ep_link.beta.count(), runs);
  std::printf("%-24s %12s %12s %9s %9s %9s %9s   exposed comm, ms, measured / predicted\n",
              "schedule", "measured", "predicted", "error", "means", "even bg", "no cores");
  std::printf("%-24s %12s %12s %9s %9s %9s %9s   %15s   %15s   %15s\n", "", "", "", "", "", "", "",
              "warm-up", "steady", "cool-down");
  compare("1F1B",
          one_f_one_b({.ranks = pipeline_ranks, .micro = micro, .layers = 4, .stages = moe}),
          bench::example_config(pipeline_ranks, 4), runs);
  compare("1F1B + self-overlap",
          one_f_one_b({.ranks = pipeline_ranks,
                       .micro = micro,
                       .layers = 4,
                       .stages = moe,
                       .overlap = {false, false, true}}),
          bench::example_config(pipeline_ranks, 4), runs);
  compare("DualPipeV",
          dualpipev({.ranks = pipeline_ranks, .micro = micro, .layers = 2, .stages = moe}),
          bench::example_config(2 * pipeline_ranks, 2), runs);
  compare("DualPipeV + fb-overlap",
          dualpipev({.ranks = pipeline_ranks,
                     .micro = micro,
                     .layers = 2,
                     .stages = moe,
                     .overlap = overlap_options::all()}),
          bench::example_config(2 * pipeline_ranks, 2), runs);
}
