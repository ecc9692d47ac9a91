// The search on the CPU runtime: the MoE example (2 pipeline x 2 expert-parallel in-process
// ranks, 8 micro-batches, 4 MoE layers per rank, every all-to-all and transfer over the emulated
// link of calibrate.cpp). Every generator that applies runs RUNS times; the cost model is
// calibrated from the best one's median run (compute means, comm spans, the runtime's latencies);
// the search, judging plans with the shared-worker simulator as this runtime runs them, looks for
// a faster plan under the memory cap; then the plan found and every generator run again, RUNS
// rounds in rotation, with their loss and gradients against the serial run. Medians.
//
//   search_executed [RUNS [BUDGET_S [CAP [WORKERS [FAR_MS]]]]]
//   (CAP: live units per rank, default twice 1F1B's; WORKERS: compute workers, default 2;
//   FAR_MS: the two pipeline stages in two sites, their transfers over a link of FAR_MS ms
//   latency and 2 GB/s — the all-to-alls stay inside a stage's site; default 0, one site)
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
unsigned workers = 2;  // as `weft run`: with one, every schedule fills the worker alike
rt::delay_model delay{bench::ep_link};

struct measured_runs {
  std::vector<exec::run_result<float>> runs;
  double median_step = 0;
  double grad_err = 0;
  float loss = 0, serial = 0;
};

measured_runs run_many(exec::moe_model<float>& model, const schedule& s, int runs) {
  exec::run_options opt;
  opt.workers = workers;
  opt.delay = delay;
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
  const double far_ms = argc > 5 ? std::atof(argv[5]) : 0.0;
  const exec::moe_config cfg = bench::example_config(pipeline_ranks, 4);
  // World rank = stage * replicas + replica: a site of `replicas` ranks per stage.
  const link_model far = link_model::with_bandwidth(seconds(far_ms * 1e-3), 2e9);
  if (far_ms > 0) delay = {.on = bench::ep_link, .site_ranks = replicas, .far = far};
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
  if (far_ms > 0)
    std::printf("the stages in two sites: transfers over %.1f ms + %.1f GB/s\n", far_ms,
                1e-9 / far.beta.count());
  std::printf("%-28s %12s %12s %14s %10s\n", "schedule", "measured", "predicted", "grad rel err",
              "peak live");

  // Every generator that applies to the model, measured.
  const auto gens = search::generator_orders(q.model, q.overlap);
  std::string best_name;
  measured_runs best;
  std::vector<measured_runs> all;  // every generator's runs: together they cost every step kind
  for (const auto& [name, p, why] : gens) {
    if (!p) continue;
    const search::step_order& full = *p;
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
  if (far_ms > 0) {  // transfers keep these costs through the calibration (one mean per link)
    q.cost.site_ranks = 1;  // the simulator's ranks are the pipeline's: each its own site
    q.cost.far_p2p = collective::p2p(far, bench::activation_bytes(cfg));
    q.cost.far_p2p_latency = far.alpha;
  }
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
  std::printf("\nthe plan found (%s):\n", r.found_by.c_str());
  for (std::size_t rank = 0; rank < r.best->p.ranks.size(); ++rank) {
    std::printf("  rank %zu:", rank);
    for (const search::step& st : r.best->p.ranks[rank])
      std::printf(" %s", search::to_string(st).c_str());
    std::printf("\n");
  }
  const auto predicted_of = [&](const search::step_order& p) {
    const auto s = search::evaluate(q, p);
    return s ? 1e3 * s->makespan.count() : 0.0;
  };
  // The plan found and every generator that fits again, in rotation (round k starts at the
  // k-th), so that the machine's drift from one minute to the next falls on all alike; the best
  // generator is the one fastest in this rotation.
  struct candidate {
    std::string name;
    schedule s;
    search::step_order p;
    std::vector<double> steps;
    std::optional<exec::run_result<float>> last;
  };
  std::vector<candidate> cands;
  cands.push_back(
      {"search (" + r.found_by + ")", search::to_schedule(r.best->p), r.best->p, {}, {}});
  for (const auto& [name, p, why] : gens)
    if (p && check(search::to_schedule(*p)).ok())
      cands.push_back({name, search::to_schedule(*p), *p, {}, {}});
  exec::run_options opt;
  opt.workers = workers;
  opt.delay = delay;
  exec::moe_executor<float> ex(model, opt);
  for (int k = 0; k < runs; ++k)
    for (std::size_t j = 0; j < cands.size(); ++j) {
      candidate& c = cands[(j + static_cast<std::size_t>(k)) % cands.size()];
      c.last = ex.run(c.s);
      c.steps.push_back(c.last->time.makespan.count());
    }
  const float serial = model.serial_step();
  std::size_t fastest = 1;
  for (std::size_t j = 1; j < cands.size(); ++j)
    if (median(cands[j].steps) < median(cands[fastest].steps)) fastest = j;
  std::printf("\nin rotation, %d rounds:\n", runs);
  bool same = true;
  for (const candidate& c : cands) {
    if (std::getenv("WEFT_BENCH_SAMPLES")) {  // every run, not only the medians
      for (const double x : c.steps) std::printf(" %.1f", 1e3 * x);
      std::printf("\n");
    }
    std::printf("%-28s %9.2f ms %9.2f ms %14.2g\n", c.name.c_str(), 1e3 * median(c.steps),
                predicted_of(c.p), exec::max_grad_rel_err(*c.last, model));
    // Every schedule sums a step's gradients in the same order: all train alike, bit for bit.
    same = same && exec::same_bits(*c.last, *cands[0].last);
  }
  const double found_ms = median(cands[0].steps), gen_ms = median(cands[fastest].steps);
  std::printf(
      "loss and gradients of every schedule equal bit for bit: %s (loss %.6g, serial "
      "%.6g)\n",
      same ? "yes" : "no", cands[0].last->loss, serial);
  std::printf(
      "measured in rotation: the plan found %.1f %% %s than the fastest generator, %s (medians "
      "of %d); %llu plans judged in %.1f s\n",
      100 * std::abs(1 - found_ms / gen_ms), found_ms < gen_ms ? "faster" : "slower",
      cands[fastest].name.c_str(), runs, static_cast<unsigned long long>(r.evaluations), r.seconds);
  return same ? 0 : 1;
}
