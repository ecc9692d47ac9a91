// 2D tensor parallelism (MindSpeed's tp-2d note), two ways.
//
//   tp2d table [PREFIX]     the llama3-405B layer at tp 16 (simulated from public facts,
//                           docs/tp-2d.md): 1D against 8 x 2 under every overlap, per linear,
//                           with collectives over two machines in two levels (what collective
//                           libraries do) and as flat rings; PREFIX-fc1-fused.svg and
//                           PREFIX-fc1-ag-rs.svg get fc1's forward on 8 x 2 under the overlaps;
//   tp2d executed [RUNS]    a small attention + MLP layer on in-process ranks over an emulated
//                           intra-node link: 2 x 2 and 4 x 2 under every overlap beside their 1D
//                           counterparts, measured step (the programs' makespans and the
//                           attention's wall time) and prediction from costs calibrated on the
//                           same run, medians of RUNS (5 by default), fp32 error against fp64.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <weft/io/svg.hpp>
#include <weft/tp/layer_run.hpp>
#include <weft/tp/preset.hpp>
#include "scenario_presets.hpp"

using namespace weft;

namespace {

constexpr tp_overlap overlaps[] = {tp_overlap::none, tp_overlap::ag_matmul, tp_overlap::matmul_rs,
                                   tp_overlap::fused};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The table's scenarios: how collectives cross the machines, and what overlap costs.
struct scenario {
  bool hierarchical;
  contention_facts contention;
  const char* label;
};

void table(const char* prefix) {
  const tp_layer_facts layer = testing::llama3_405b();  // the preset, as `weft tp2d` reads it
  const contention_facts on = contention_facts::published();
  for (const scenario& sc :
       {scenario{true, {}, "in two levels"}, scenario{false, {}, "as flat rings"},
        scenario{true, on, "in two levels, overlap priced (links shared, compute +18.9 %)"},
        scenario{true, {.shared_links = true}, "in two levels, links shared"},
        scenario{true,
                 {.compute_slowdown = on.compute_slowdown},
                 "in two levels, compute +18.9 % while communicating"}}) {
    tp_layer_facts f = layer;
    f.mesh.hierarchical = sc.hierarchical;
    f.contention = sc.contention;
    std::printf(
        "\nllama3-405B layer, s 8192, tp 16 on 2 machines of 8; collectives over both "
        "machines %s\n",
        sc.label);
    std::printf("%-8s %-10s %9s %7s | %8s %8s %8s %8s | %6s\n", "grid", "overlap", "layer ms",
                "vs 1D", "qkv", "proj", "fc1", "fc2", "attn");
    const tp_layer_time base = simulate_tp_layer(f, tp::one_d_grid(16), tp_overlap::none);
    const auto row = [&](const char* label, const tp::grid& g, tp_overlap o) {
      const tp_layer_time t = simulate_tp_layer(f, g, o);
      std::printf("%-8s %-10s %9.2f %7.3f |", label, tp::name_of(o), t.total.count() * 1e3,
                  base.total / t.total);
      for (const tp_linear_time& l : t.linears) std::printf(" %8.2f", l.time.count() * 1e3);
      std::printf(" | %6.2f\n", t.glue.total().count() * 1e3);
    };
    row("16x1", tp::one_d_grid(16), tp_overlap::none);
    row("16x1", tp::one_d_grid(16), tp_overlap::ag_matmul);
    for (const tp_overlap o : overlaps) row("8x2", tp::grid{8, 2}, o);
    for (const tp_overlap o : {tp_overlap::none, tp_overlap::fused}) row("4x4", tp::grid{4, 4}, o);
  }
  const tp_layer_facts& f = layer;
  const std::vector<tp_linear_facts> ls = tp_layer_linears(f, tp::grid{8, 2});
  std::printf("\nmatmul time per linear (forward + backward, either grid):");
  for (const tp_linear_facts& l : ls) {
    const cost_model c = tp_linear_costs(l, f.tokens(), f.mesh, f.device, 2, tp_overlap::none);
    std::printf(" %s %.2f ms", l.name.c_str(),
                (c.of(kind::block, phase::F) + c.of(kind::block, phase::B)).count() * 1e3);
  }
  std::printf("\n");
  if (!prefix) return;
  // fc1's forward on 8 x 2 (8 ring steps over X, 2 strided chunks over Y) under each overlap.
  const tp_linear_facts& fc1 = ls[2];
  const auto forward = [&](tp_overlap o, program& p) {
    p = lower(tp::linear_schedule(o, tp::pieces_for(o, {fc1.gather.members, fc1.scatter.members}),
                                  false));
    return simulate(p, tp_linear_costs(fc1, f.tokens(), f.mesh, f.device, 2, o));
  };
  const auto picture = [&](tp_overlap upper, tp_overlap lower_one, const std::string& name) {
    program pu, pl;
    const timeline a = forward(upper, pu), b = forward(lower_one, pl);
    const std::string path = std::string(prefix) + name;
    std::ofstream out(path);
    write_svg_compare(out, pu, a, tp::name_of(upper), pl, b, tp::name_of(lower_one),
                      svg_style{.title = "llama3-405B fc1 forward on 8 x 2 (simulated)"});
    std::printf("wrote %s\n", path.c_str());
  };
  picture(tp_overlap::none, tp_overlap::fused, "-fc1-fused.svg");
  picture(tp_overlap::ag_matmul, tp_overlap::matmul_rs, "-fc1-ag-rs.svg");
}

void executed(int runs) {
  const tp::layer_shape shape{.seq = 128, .batch = 1, .hidden = 128, .heads = 16, .ffn = 512};
  const auto w = tp::layer_weights<float>::random(shape, 1);
  const nn::matrix<float> x = tp::random_activation<float>(shape, 2),
                          dy = tp::random_activation<float>(shape, 3);
  // A slow emulated link (20 us, 0.5 GB/s), so that on a CPU's small matmuls the collectives
  // weigh about what they weigh beside the 405B layer's on its devices.
  const link_model slow = link_model::with_bandwidth(seconds(20e-6), 0.5e9);
  const exec::run_options opt{.workers = 2, .comm_workers = 1, .delay = {slow}};
  std::printf(
      "\nattention + MLP layer (hidden %ld, %ld heads, ffn %ld, %ld tokens), emulated "
      "link 20 us + 0.5 GB/s, medians of %d runs\n",
      static_cast<long>(shape.hidden), static_cast<long>(shape.heads), static_cast<long>(shape.ffn),
      static_cast<long>(shape.tokens()), runs);
  std::printf("%-6s %-10s %12s %13s %12s %13s %10s\n", "grid", "overlap", "linears ms",
              "predicted ms", "attention ms", "step ms", "bytes/rank");
  for (const tp::grid g : {tp::grid{2, 2}, tp::one_d_grid(4), tp::grid{4, 2}, tp::one_d_grid(8)})
    for (const tp_overlap o : overlaps) {
      tp::layer_runner<float> layer(g, shape, w, o, opt);
      const std::vector<nn::matrix<float>> xs = tp::blocks_of(x, g), dys = tp::blocks_of(dy, g);
      std::vector<nn::matrix<float>> dxs;
      std::vector<double> linears, predicted, attention;
      std::vector<tp::phase_timing> t;
      layer.step(xs, dys, dxs, t);  // warm-up
      for (int k = 0; k < runs; ++k) {
        layer.step(xs, dys, dxs, t);
        double lin = 0, pred = 0, att = 0;
        for (const tp::phase_timing& p : t) {
          (p.prog ? lin : att) += tp::measured(p).count();
          if (p.prog) pred += tp::predicted(p, opt.workers).count();
        }
        linears.push_back(lin);
        predicted.push_back(pred);
        attention.push_back(att);
      }
      std::printf("%dx%-4d %-10s %12.3f %13.3f %12.3f %13.3f %10.0f\n", g.tp_x, g.tp_y,
                  tp::name_of(o), median(linears) * 1e3, median(predicted) * 1e3,
                  median(attention) * 1e3, (median(linears) + median(attention)) * 1e3,
                  layer.sent(0).total());
    }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "table";
  if (what == "table") {
    table(argc > 2 ? argv[2] : nullptr);
    return 0;
  }
  if (what == "executed") {
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    if (runs < 1 || runs > 1000) {
      std::fprintf(stderr, "tp2d executed: RUNS must be in [1, 1000]\n");
      return 2;
    }
    executed(runs);
    return 0;
  }
  std::fprintf(stderr, "usage: tp2d table [PREFIX] | tp2d executed [RUNS]\n");
  return 2;
}
