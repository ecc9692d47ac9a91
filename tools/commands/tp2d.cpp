// `weft tp2d` (MindSpeed's tp-2d note): one attention + MLP layer on a tp_x x tp_y grid of
// in-process ranks and on its 1D counterpart (tp_x * tp_y x 1), every linear run as a schedule
// under the chosen overlap; or the llama3-405B scenario, simulated from device and link facts.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <weft/plan/presets.hpp>
#include <weft/tp/layer_run.hpp>
#include <weft/tp/preset.hpp>
#include "commands/common.hpp"
#include "commands/tp2d.hpp"

namespace weft::cli {
namespace {

using json = nlohmann::ordered_json;

/// --overlap, or MindSpeed's switches for it.
tp_overlap overlap_of(const tp2d_args& q) {
  if (q.ag_matmul || q.matmul_rs || q.coc_fused)
    return tp::resolve({.ag_matmul = q.ag_matmul, .matmul_rs = q.matmul_rs, .fused = q.coc_fused});
  return q.overlap;
}

rt::delay_model delay_of(const tp2d_args& q) {
  if (q.delay.link == link_choice::intra_node) return {link_model::intra_node()};
  if (q.delay.link == link_choice::inter_node) return {link_model::inter_node()};
  return {};
}

/// The unsharded layer in fp64 from the fp32 weights: output, input gradient, weight gradients
/// (QKV's fused as the grid will hold them, for `tp_x`).
struct reference {
  nn::matrix<double> y, dx, dw1, dw2;
  nn::attention<double> grads;  ///< wq, wk, wv, wo: their gradients as values
};

template <class To, class From>
nn::matrix<To> cast(const nn::matrix<From>& m) {
  return m.template cast<To>();
}

reference unsharded(const tp::layer_shape& shape, const tp::layer_weights<float>& w,
                    const nn::matrix<float>& x, const nn::matrix<float>& dy) {
  nn::attention<double> att;
  att.heads = w.attention.heads;
  att.wq = nn::param<double>(cast<double>(w.attention.wq.value));
  att.wk = nn::param<double>(cast<double>(w.attention.wk.value));
  att.wv = nn::param<double>(cast<double>(w.attention.wv.value));
  att.wo = nn::param<double>(cast<double>(w.attention.wo.value));
  const nn::matrix<double> w1 = cast<double>(w.w1), w2 = cast<double>(w.w2);
  const nn::matrix<double> xd = cast<double>(x), dyd = cast<double>(dy);
  nn::attention<double>::context c;
  const nn::matrix<double> a = att.forward(xd, tp::batched_causal_mask(shape.seq, shape.batch), c);
  const nn::matrix<double> h = a * w1, g = tp::gelu(h);
  reference r;
  r.y = g * w2;
  r.dw2 = g.transpose() * dyd;
  const nn::matrix<double> dh =
      ((dyd * w2.transpose()).array() * tp::gelu_grad(h).array()).matrix();
  r.dw1 = a.transpose() * dh;
  r.dx = att.backward_dx(dh * w1.transpose(), c);
  att.backward_dw(c);
  r.grads = att;
  for (nn::param<double>* p : {&r.grads.wq, &r.grads.wk, &r.grads.wv, &r.grads.wo})
    p->value = p->grad;
  return r;
}

double rel_err(const nn::matrix<float>& got, const nn::matrix<double>& want) {
  const double scale = want.norm();
  return (got.cast<double>() - want).norm() / (scale > 0 ? scale : 1.0);
}
nn::matrix<double> block_at(const nn::matrix<double>& full, int rows, int i, int cols, int j) {
  const Eigen::Index r = full.rows() / rows, c = full.cols() / cols;
  return full.block(i * r, j * c, r, c);
}

/// One grid's run: its error, its times per phase, its bytes.
struct grid_run {
  std::string label;
  tp::grid g;
  double max_rel_err = 0;
  std::vector<std::string> phases;
  std::vector<double> measured, predicted;  ///< seconds, per phase
  double bytes = 0, bytes_formula = 0;      ///< per rank, forward and backward
  double total_measured() const { return sum(measured); }
  double total_predicted() const { return sum(predicted); }
  static double sum(const std::vector<double>& v) {
    double t = 0;
    for (const double x : v) t += x;
    return t;
  }
};

grid_run run_grid(const std::string& label, const tp::grid& g, const tp::layer_shape& shape,
                  const tp::layer_weights<float>& w, tp_overlap o, const exec::run_options& opt,
                  const nn::matrix<float>& x, const nn::matrix<float>& dy, const reference& ref) {
  tp::layer_runner<float> layer(g, shape, w, o, opt);
  const std::vector<nn::matrix<float>> xs = tp::blocks_of(x, g), dys = tp::blocks_of(dy, g);
  std::vector<nn::matrix<float>> dxs;
  std::vector<tp::phase_timing> timings;
  layer.step(xs, dys, dxs, timings);  // warm-up: first touches, thread start-up
  for (std::size_t i = 0; i < layer.linears(); ++i)
    for (int r = 0; r < g.size(); ++r) layer.linear(i).binding.weight(r).zero_grad();
  const std::vector<nn::matrix<float>> ys = layer.step(xs, dys, dxs, timings);

  grid_run out{label, g, 0, {}, {}, {}, 0, 0};
  const nn::matrix<double> fused = tp::attention2d<double>::fused_qkv(ref.grads, g.tp_x);
  const nn::matrix<double>* dws[] = {&fused, &ref.grads.wo.value, &ref.dw1, &ref.dw2};
  for (int r = 0; r < g.size(); ++r) {
    const auto k = static_cast<std::size_t>(r);
    out.max_rel_err = std::max(
        {out.max_rel_err, rel_err(ys[k], block_at(ref.y, g.tp_x, g.x_of(r), g.tp_y, g.y_of(r))),
         rel_err(dxs[k], block_at(ref.dx, g.tp_x, g.x_of(r), g.tp_y, g.y_of(r)))});
    for (std::size_t i = 0; i < 4; ++i) {
      const bool over_x = i % 2 == 0;  // QKV and fc1 gather over X, proj and fc2 over Y
      const int gi = over_x ? g.x_of(r) : g.y_of(r), si = over_x ? g.y_of(r) : g.x_of(r);
      const int G = over_x ? g.tp_x : g.tp_y, S = over_x ? g.tp_y : g.tp_x;
      out.max_rel_err = std::max(out.max_rel_err, rel_err(layer.linear(i).binding.weight(r).grad,
                                                          block_at(*dws[i], S, si, G, gi)));
    }
  }
  // Measured: each program's makespan as the runner timed it, the attention's wall time.
  // Predicted: each program simulated with costs calibrated from its run, on the runtime's
  // workers; the attention (no program) as measured.
  for (const tp::phase_timing& t : timings) {
    out.phases.push_back(t.what);
    out.measured.push_back(tp::measured(t).count());
    out.predicted.push_back(tp::predicted(t, opt.workers).count());
  }
  for (int r = 0; r < g.size(); ++r) out.bytes = std::max(out.bytes, layer.sent(r).total());
  const tp::layer_volume v =
      tp::forward_volume(g, static_cast<double>(shape.tokens()), static_cast<double>(shape.hidden),
                         static_cast<double>(shape.ffn), sizeof(float));
  out.bytes_formula = 2 * (v.mlp + v.attention);
  return out;
}

json run_json(const grid_run& r) {
  json phases = json::array();
  for (std::size_t i = 0; i < r.phases.size(); ++i)
    phases.push_back(
        {{"phase", r.phases[i]}, {"measured_s", r.measured[i]}, {"predicted_s", r.predicted[i]}});
  return {{"grid", r.label},
          {"tp_x", r.g.tp_x},
          {"tp_y", r.g.tp_y},
          {"max_rel_err", r.max_rel_err},
          {"measured_s", r.total_measured()},
          {"predicted_s", r.total_predicted()},
          {"bytes_per_rank", r.bytes},
          {"bytes_per_rank_formula", r.bytes_formula},
          {"phases", phases}};
}

void print_run(const grid_run& r) {
  std::cout << r.label << " (" << r.g.tp_x << " x " << r.g.tp_y << " ranks)\n"
            << "  max_rel_err " << r.max_rel_err << " (fp32 against the unsharded layer in fp64)\n"
            << "  step: measured " << r.total_measured() * 1e3 << " ms, predicted "
            << r.total_predicted() * 1e3 << " ms\n"
            << "  bytes moved per rank " << r.bytes << " (formula " << r.bytes_formula << ")\n";
  for (std::size_t i = 0; i < r.phases.size(); ++i)
    std::cout << "    " << std::left << std::setw(20) << r.phases[i] << std::right << std::setw(10)
              << r.measured[i] * 1e3 << " ms  predicted " << std::setw(10) << r.predicted[i] * 1e3
              << " ms\n";
}

int preset_command(const tp2d_args& q) {
  const plan::preset p = plan::read_preset(preset_dir("llama3-405b"));
  for (const std::string& w : p.warnings) std::cerr << "weft: " << w << "\n";
  tp_layer_facts f = plan::tp_layer_facts_of(p);
  f.contention = q.contention;
  const tp::grid one = tp::one_d_grid(16), two{8, 2};
  const tp_layer_time base = simulate_tp_layer(f, one, tp_overlap::none);
  json rows = json::array();
  const auto row = [&](const std::string& label, const tp::grid& g, tp_overlap o) {
    const tp_layer_time t = simulate_tp_layer(f, g, o);
    json linears = json::array();
    for (const tp_linear_time& l : t.linears)
      linears.push_back({{"linear", l.name}, {"time_s", l.time.count()}});
    rows.push_back({{"grid", label},
                    {"overlap", tp::name_of(o)},
                    {"layer_s", t.total.count()},
                    {"speedup_vs_1d", base.total / t.total},
                    {"linears", linears}});
    if (!q.json)
      std::cout << std::left << std::setw(10) << label << std::setw(11) << tp::name_of(o)
                << std::right << std::setw(9) << std::fixed << std::setprecision(2)
                << t.total.count() * 1e3 << " ms  x" << std::setprecision(3) << base.total / t.total
                << std::defaultfloat << "\n";
  };
  if (!q.json)
    std::cout << "llama3-405B layer (s 8192, bf16) at tp 16 on Ascend 910B servers (8 per "
                 "machine), forward + backward, simulated"
              << (f.contention.active() ? ", overlap priced" : "") << ":\n";
  row("1D 16x1", one, tp_overlap::none);
  for (const tp_overlap o :
       {tp_overlap::none, tp_overlap::ag_matmul, tp_overlap::matmul_rs, tp_overlap::fused})
    row("2D 8x2", two, o);
  if (q.json)
    std::cout << json{{"preset", "llama3-405b"},
                      {"overlap_priced", f.contention.active()},
                      {"rows", rows}}
                     .dump()
              << "\n";
  return exit_ok;
}

}  // namespace

int run_command(const tp2d_args& q) {
  if (q.preset == preset_name::llama3_405b) return preset_command(q);
  const tp_overlap o = overlap_of(q);
  const tp::grid two = tp::make_grid(q.tp_x * q.tp_y, q.tp_x, q.tp_y);
  const tp::grid one = tp::one_d_grid(two.size());
  if (const fault_spec& f = q.failing.fault; f.kind != fault_kind::none && f.rank >= two.size())
    throw config_error("weft: --inject-fault " + f.text + ": rank " + std::to_string(f.rank) +
                       " is outside the grid of " + std::to_string(two.size()) + " ranks");
  tp::layer_shape shape{.seq = q.seq == 0 ? 256 : q.seq,
                        .batch = q.batch,
                        .hidden = q.hidden,
                        .heads = q.heads,
                        .ffn = q.ffn == 0 ? 4 * q.hidden : q.ffn};
  // Each rank keeps its heads' attention probabilities, tokens x its query rows: bound them.
  const double probabilities = static_cast<double>(shape.heads) *
                               static_cast<double>(shape.tokens()) *
                               static_cast<double>(shape.tokens());
  if (probabilities > 1 << 27)
    throw config_error("weft: tp2d: heads x tokens^2 = " + std::to_string(probabilities) +
                       " attention probabilities; at most 2^27 on in-process ranks (fewer "
                       "--heads, --seq or --batch)");
  const auto w = tp::layer_weights<float>::random(shape, 1);
  const nn::matrix<float> x = tp::random_activation<float>(shape, 2),
                          dy = tp::random_activation<float>(shape, 3);
  const reference ref = unsharded(shape, w, x, dy);
  exec::run_options opt{.workers = 2, .comm_workers = 1, .delay = delay_of(q)};
  opt.timeout = q.failing.timeout;
  // The requested grid must fit the layer (the run says why not); its 1D counterpart is a
  // comparison, reported only where the layer shards on it. An injected fault is the 2D run's.
  exec::run_options faulty = opt;
  faulty.before_op = fault_injection(q.failing);
  const grid_run r2 = run_grid("2D", two, shape, w, o, faulty, x, dy, ref);
  std::string no_1d = tp::unfit_reason(one, shape);
  std::optional<grid_run> r1;
  if (no_1d.empty()) try {
      r1 = run_grid("1D", one, shape, w, o, opt, x, dy, ref);
    } catch (const config_error& e) {  // the sizes the linears' collectives need (sequence)
      constexpr std::string_view prefix = "weft: tp2d: ";
      std::string why = e.what();
      if (why.starts_with(prefix)) why.erase(0, prefix.size());
      no_1d = why + " on the " + std::to_string(one.tp_x) + "x1 grid";
    }
  if (q.json) {
    json runs = json::array({run_json(r2)});
    if (r1) runs.push_back(run_json(*r1));
    json out{{"overlap", tp::name_of(o)}, {"delay_model", name_of(q.delay.link)},
             {"hidden", shape.hidden},    {"heads", shape.heads},
             {"ffn", shape.ffn},          {"seq", shape.seq},
             {"batch", shape.batch},      {"runs", runs}};
    if (!r1) out["no_1d_comparison"] = no_1d;
    std::cout << out.dump() << "\n";
    return exit_ok;
  }
  std::cout << "one attention + MLP layer (hidden " << shape.hidden << ", " << shape.heads
            << " heads, ffn " << shape.ffn << ", " << shape.batch << " x " << shape.seq
            << " tokens), overlap " << tp::name_of(o) << ", link " << name_of(q.delay.link) << "\n";
  print_run(r2);
  if (!r1) {
    std::cout << "no 1D comparison: " << no_1d << "\n";
    return exit_ok;
  }
  print_run(*r1);
  const grid_run& one_run = *r1;
  std::cout << "2D / 1D: measured " << r2.total_measured() / one_run.total_measured()
            << ", predicted " << r2.total_predicted() / one_run.total_predicted() << ", bytes "
            << r2.bytes / one_run.bytes << "\n";
  return exit_ok;
}

}  // namespace weft::cli
