// Pipeline transfers across data centres (MindSpeed's pp-cross-dc-comm-overlap note), two ways.
//
//   cross_dc table [SVG]   the note's table on the llama2-70b-xdc scenario (simulated from
//                          public facts, docs/cross-dc.md) beside the note's step times, and what
//                          each modelled mechanism adds; SVG gets the warm-up of VP 2 (8
//                          micro-batches) before and after MindSpeed's switches;
//   cross_dc executed [RUNS [SVG]]
//                          a small dense model (pp 4 over two emulated data centres, 2 chunks per
//                          rank) trained one step on in-process ranks, Megatron's lowering against
//                          MindSpeed's: measured step and exposed pipeline communication per phase
//                          beside the prediction from costs calibrated on the same run (medians of
//                          RUNS, 5 by default), gradients against the serial run; SVG gets both
//                          measured timelines.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <weft/exec/executor.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/prediction.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "scenario_presets.hpp"

using namespace weft;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double step_ms(const xdc_facts& f, const cost_model& c, p2p_options o) {
  const timeline t = simulate(lower(xdc_schedule(f, o)), c);
  return 1e3 * t.makespan.count();
}

int table(const char* svg) {
  struct row {
    int vp;
    double base, opt;  // the note's step times, ms
  };
  const row rows[] = {{5, 15923.4, 12343.7}, {2, 12723.5, 12345.4}, {1, 15286.0, 12814.6}};
  const p2p_options mindspeed{.overlap_p2p = true, .multi_stream = true};
  const xdc_facts run = testing::llama2_70b_xdc();  // the preset, as `weft simulate` reads it
  std::printf("llama2-70b-xdc: tp %d, pp %d, dp %d, %.0f km, ratio %.0f, %d micro-batches\n",
              run.tp, run.pp, run.dp, run.km, run.ratio, run.micro);
  std::printf("%4s %12s %12s %10s | %14s %14s %14s\n", "VP", "base ms", "opt ms", "reduction",
              "MindSpeed base", "MindSpeed opt", "MindSpeed red.");
  for (const row& r : rows) {
    xdc_facts f = run;
    f.chunks = r.vp;
    const cost_model c = xdc_cost_model(f);
    const double b = step_ms(f, c, {}), o = step_ms(f, c, mindspeed);
    std::printf("%4d %12.1f %12.1f %9.1f%% | %14.1f %14.1f %13.1f%%\n", r.vp, b, o,
                100 * (1 - o / b), r.base, r.opt, 100 * (1 - r.opt / r.base));
  }
  // The NanoPipe rows: the same facts, MindSpeed's interleaved code at every VP with the weight
  // gradients of rank r's first 2r steady-phase backwards deferred to the end of its step.
  const row nano_rows[] = {{5, 16764.5, 12265.4}, {2, 12345.4, 12207.7}, {1, 12531.0, 12517.8}};
  std::printf("\nwith NanoPipe (--nanopipe)\n");
  for (const row& r : nano_rows) {
    xdc_facts f = run;
    f.chunks = r.vp;
    f.nanopipe = true;
    for (const bool contended : {false, true}) {
      const cost_model c = xdc_cost_model(f, contended ? xdc_contention(f) : contention_facts{});
      const double b = step_ms(f, c, {}), o = step_ms(f, c, mindspeed);
      std::printf("%4d %12.1f %12.1f %9.1f%% | %14.1f %14.1f %13.1f%%%s\n", r.vp, b, o,
                  100 * (1 - o / b), r.base, r.opt, 100 * (1 - r.opt / r.base),
                  contended ? "  (priced: --contention on)" : "");
    }
  }
  // How much of that is the deferred dW: the same interleaved code (one chunk at VP 1) without.
  std::printf("the same interleaved code without deferring dW (base -> opt ms):");
  for (const row& r : nano_rows) {
    xdc_facts f = run;
    f.chunks = r.vp;
    const cost_model c = xdc_cost_model(f);
    const auto ms = [&](p2p_options o) {
      o.megatron = true;
      return 1e3 *
             simulate(
                 lower(interleaved({.ranks = f.pp, .micro = f.micro, .chunks = r.vp, .p2p = o})), c)
                 .makespan.count();
    };
    std::printf("  VP %d %.1f -> %.1f", r.vp, ms({}), ms(mindspeed));
  }
  std::printf("\n");
  // What each mechanism of the model is worth: the same table without it.
  std::printf("\nablation: reduction (base -> opt ms) with one mechanism taken out\n");
  std::printf("%-44s %22s %22s %22s\n", "", "VP 5", "VP 2", "VP 1");
  const auto line = [&](const char* name, auto&& change) {
    std::printf("%-44s", name);
    for (const row& r : rows) {
      xdc_facts f = run;
      f.chunks = r.vp;
      cost_model c = xdc_cost_model(f);
      p2p_options base{}, opt = mindspeed;
      change(f, c, base, opt);
      const timeline tb = simulate(lower_unchecked(xdc_schedule(f, base)), c);
      const timeline to = simulate(lower_unchecked(xdc_schedule(f, opt)), c);
      if (tb.deadlocked() || to.deadlocked()) {
        std::printf(" %22s", "deadlock");
        continue;
      }
      const double b = 1e3 * tb.makespan.count(), o = 1e3 * to.makespan.count();
      std::printf(" %5.1f%% (%6.0f->%6.0f)", 100 * (1 - o / b), b, o);
    }
    std::printf("\n");
  };
  line("the model", [](xdc_facts&, cost_model&, p2p_options&, p2p_options&) {});
  line("no rendezvous (a late receive costs nothing)",
       [](xdc_facts&, cost_model& c, p2p_options&, p2p_options&) {
         c.p2p_latency = c.far_p2p_latency = seconds(0);
       });
  line("no tensor-parallel communication",
       [](xdc_facts& f, cost_model& c, p2p_options&, p2p_options&) {
         const cost_model full = xdc_cost_model(f);
         const double n = f.layers_per_chunk();
         const seconds comm = n * xdc_tp_comm(f);
         c.set(kind::block, phase::F, full.of(kind::block, phase::F) - comm)
             .set(kind::block, phase::B, full.of(kind::block, phase::B) - comm);
       });
  line("one data centre (no cross-DC link)",
       [](xdc_facts& f, cost_model& c, p2p_options&, p2p_options&) {
         f.sites = 1;
         c = xdc_cost_model(f);
       });
  line("early receives, MindSpeed without own streams",
       [](xdc_facts&, cost_model&, p2p_options&, p2p_options& o) { o.multi_stream = false; });
  {  // Early receives on ONE process group (one stream for its transfers): rule 4's deadlock.
    std::printf("%-44s", "early receives on one process group");
    for (const row& r : rows) {
      xdc_facts f = run;
      f.chunks = r.vp;
      const schedule compute = interleaved({.ranks = f.pp, .micro = f.micro, .chunks = f.chunks});
      const schedule one =
          with_transfers(compute, {.lanes = p2p_lanes::single, .receives = receive_posting::early});
      const timeline t = simulate(lower_unchecked(one), xdc_cost_model(f));
      std::printf(" %22s", t.deadlocked() ? "deadlock" : "runs");
    }
    std::printf("\n");
  }
  // What overlap costs (docs/metrics.md): the same table under the published contention facts,
  // the sites' uplink a resource of its own (xdc_contention).
  std::printf("\ncontention ablation: reduction (base -> opt ms)\n");
  std::printf("%-44s %22s %22s %22s\n", "", "VP 5", "VP 2", "VP 1");
  const contention_facts published = contention_facts::published();
  const auto priced = [&](const char* name, bool links, bool interference) {
    std::printf("%-44s", name);
    for (const row& r : rows) {
      xdc_facts f = run;
      f.chunks = r.vp;
      contention_facts x = xdc_contention(f);
      x.shared_links = links;
      if (!links) x.uplink_ports = 0;
      x.compute_slowdown = interference ? published.compute_slowdown : 0;
      const cost_model c = xdc_cost_model(f, x);
      const double b = step_ms(f, c, {}), o = step_ms(f, c, mindspeed);
      std::printf(" %5.1f%% (%6.0f->%6.0f)", 100 * (1 - o / b), b, o);
    }
    std::printf("\n");
  };
  priced("free", false, false);
  priced("links shared (ports, the sites' uplink)", true, false);
  priced("interference (compute 18.9% slower)", false, true);
  priced("both", true, true);
  {  // Why links matter at VP 5: how long crossing transfers shared the uplink.
    xdc_facts f = run;
    f.chunks = 5;
    const double alone = xdc_contention(f).uplink_ports;
    const cost_model c = xdc_cost_model(f, {.shared_links = true, .uplink_ports = alone});
    for (const bool opt : {false, true}) {
      const program p = lower(xdc_schedule(f, opt ? mindspeed : p2p_options{}));
      const timeline t = simulate(p, c, {.record_slowed = true});
      double shared = 0, crossing = 0;
      for (const slowed_stretch& sl : t.slowed)
        if (p.at(sl.op).k == kind::send && c.crosses_sites(p.at(sl.op), p.source.model)) {
          crossing += (sl.to - sl.from).count();
          if (sl.rate < alone * (1 - 1e-9)) shared += (sl.to - sl.from).count();
        }
      std::printf(
          "VP 5, %s, links shared: crossing transfers moved for %.0f ms, %.0f ms of it "
          "sharing the uplink\n",
          opt ? "MindSpeed's" : "Megatron's", 1e3 * crossing, 1e3 * shared);
    }
  }
  if (svg) {
    xdc_facts f = run;
    f.chunks = 2;
    f.micro = 8;
    const cost_model c = xdc_cost_model(f);
    const program a = lower(xdc_schedule(f, {})), b = lower(xdc_schedule(f, mindspeed));
    std::ofstream out(svg);
    write_svg_compare(out, a, simulate(a, c),
                      "Megatron: receives after the previous step, one stream", b, simulate(b, c),
                      "MindSpeed: receives a step earlier, ping/pong streams",
                      {.title = "llama2-70b-xdc, VP 2, 8 micro-batches, ranks 0-3 | 4-7 in two "
                                "data centres 960 km apart, simulated"});
  }
  return 0;
}

// The emulated sites: ranks 0-1 and 2-3, 2 ms apart at 0.2 GB/s between them; inside, the
// inter-node link.
constexpr int ranks = 4, chunks = 2, micro = 8;

int executed(int runs, const char* svg) {
  exec::dense_config cfg;
  cfg.stages = ranks * chunks;
  cfg.tokens = 64;
  cfg.width = 64;
  cfg.ffn = 256;
  cfg.micro = micro;
  cfg.seed = 5;
  const exec::dense_model<float> model(cfg);
  exec::dense_model<float> reference(cfg);  // the serial run, for the gradients
  reference.serial_step();
  const link_model far = link_model::with_bandwidth(seconds(2e-3), 0.2e9);
  rt::delay_model delay{.on = link_model::inter_node(), .site_ranks = ranks / 2, .far = far};
  const double bytes = 4.0 * cfg.tokens * cfg.width;
  cost_model links;
  for (kind k : {kind::send, kind::recv})
    links.set(k, phase::F, collective::p2p(*delay.on, bytes))
        .set(k, phase::B, collective::p2p(*delay.on, bytes));
  links.p2p_latency = delay.on->alpha;
  links.site_ranks = delay.site_ranks;
  links.far_p2p = collective::p2p(far, bytes);
  links.far_p2p_latency = far.alpha;
  std::printf(
      "small dense model: pp %d x %d chunks, %d micro-batches of %d tokens, width %d; ranks 0-%d "
      "| %d-%d in two sites, %.1f ms + %.2f GB/s between; %d runs each, medians\n",
      ranks, chunks, micro, cfg.tokens, cfg.width, ranks / 2 - 1, ranks / 2, ranks - 1,
      far.alpha.count() * 1e3, 1e-9 / far.beta.count(), runs);
  std::printf("%-28s %20s %44s %11s\n", "", "step ms (meas / pred)",
              "exposed p2p ms: warm-up, steady, cool-down (m / p)", "grad error");
  struct variant {
    const char* name;
    p2p_options o;
  };
  const variant variants[] = {
      {"megatron", {.megatron = true}},
      {"mindspeed (early, ping/pong)", {.overlap_p2p = true, .multi_stream = true}}};
  struct kept {
    program prog;
    timeline time;
  };
  std::vector<kept> pictures;
  for (const variant& v : variants) {
    const schedule s = interleaved({.ranks = ranks, .micro = micro, .chunks = chunks, .p2p = v.o});
    exec::run_options opt;
    opt.delay = delay;
    exec::dense_executor<float> ex(model, opt);
    std::vector<double> step, pred, ex_m[3], ex_p[3];
    double worst = 0;
    for (int r = 0; r < runs; ++r) {
      exec::run_result<float> run = ex.run(s);
      const timeline sim = predicted_run(run.prog, run.time, run, opt.workers, 1, links);
      const step_metrics got = measure(run.prog, run.time), want = measure(run.prog, sim);
      step.push_back(got.makespan.count());
      pred.push_back(want.makespan.count());
      for (int ph = 0; ph < 3; ++ph) {
        ex_m[ph].push_back(got.exposed_by_phase[ph].count());
        ex_p[ph].push_back(want.exposed_by_phase[ph].count());
      }
      worst = std::max(worst, exec::max_grad_rel_err(run, reference));
      if (r == 0) pictures.push_back({run.prog, run.time});
    }
    std::printf("%-28s %9.2f / %8.2f   %6.2f / %6.2f  %6.2f / %6.2f  %6.2f / %6.2f %11.1e\n",
                v.name, 1e3 * median(step), 1e3 * median(pred), 1e3 * median(ex_m[0]),
                1e3 * median(ex_p[0]), 1e3 * median(ex_m[1]), 1e3 * median(ex_p[1]),
                1e3 * median(ex_m[2]), 1e3 * median(ex_p[2]), worst);
  }
  if (svg && pictures.size() == 2) {
    std::ofstream out(svg);
    write_svg_compare(out, pictures[0].prog, pictures[0].time,
                      "Megatron: receives after the previous step, one p2p stream",
                      pictures[1].prog, pictures[1].time,
                      "MindSpeed: receives a step earlier, ping/pong streams",
                      {.title = "small dense model, pp 4 x 2 chunks over two emulated data "
                                "centres, measured"});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "table";
  if (mode == "table") return table(argc > 2 ? argv[2] : nullptr);
  if (mode == "executed")
    return executed(argc > 2 ? std::max(1, std::atoi(argv[2])) : 5, argc > 3 ? argv[3] : nullptr);
  std::fprintf(stderr, "usage: cross_dc table [SVG] | cross_dc executed [RUNS [SVG]]\n");
  return 2;
}
