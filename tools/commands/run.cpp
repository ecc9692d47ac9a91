// `weft run` (run.hpp): the schedule run on a tiny model, in-process or over MPI, reported beside
// its prediction and a serial run.
#include "commands/run.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/prediction.hpp>
#include "commands/report.hpp"
#include "pipeline_request.hpp"
#include "process_world.hpp"

namespace weft::cli {
namespace {

/// The emulated links of `run`: one class, or with cross-dc two data centres, each holding half
/// the pipeline ranks (and their expert-parallel replicas), linked inside by the inter-node link.
rt::delay_model delay_preset(const delay_args& d, int pp, int replicas) {
  switch (d.link) {
    case link_choice::intra_node:
      return {link_model::intra_node()};
    case link_choice::inter_node:
      return {link_model::inter_node()};
    case link_choice::cross_dc:
      return {.on = link_model::inter_node(),
              .site_ranks = pp >= 2 ? pp / 2 * replicas : 0,
              .far = link_model::cross_dc(d.km, d.ratio)};
    case link_choice::none:
      break;
  }
  return {};
}

/// What the emulated links make a pipeline transfer of `bytes` cost, for the prediction:
/// calibration keeps these with two link classes (weft::calibrated).
cost_model link_costs(const rt::delay_model& d, int replicas, double bytes) {
  cost_model c;
  if (!d.on) return c;
  const seconds near = collective::p2p(*d.on, bytes);
  for (kind k : {kind::send, kind::recv}) c.set(k, phase::F, near).set(k, phase::B, near);
  c.p2p_latency = d.on->alpha;
  if (d.site_ranks > 0) {
    c.site_ranks = d.site_ranks / replicas;
    c.far_p2p = collective::p2p(d.far, bytes);
    c.far_p2p_latency = d.far.alpha;
  }
  return c;
}

/// A fault that could never fire is a mistake in the request, not a run that passes.
void check_fault(const fault_spec& f, const schedule& s, int replicas) {
  if (f.kind == fault_kind::none) return;
  const int world = s.ranks() * replicas;
  if (f.rank >= world)
    throw config_error("weft: --inject-fault " + f.text + ": rank " + std::to_string(f.rank) +
                       " is outside the world of " + std::to_string(world) + " ranks");
  const program p = lower(s);
  long ops = 0;  // a world rank runs the ops of its pipeline rank
  for (std::uint32_t i = 0; i < p.size(); ++i) ops += p.rank[i] == f.rank / replicas;
  if (f.op >= ops)
    throw config_error("weft: --inject-fault " + f.text + ": rank " + std::to_string(f.rank) +
                       " runs " + std::to_string(ops) + " ops (0 to " + std::to_string(ops - 1) +
                       ")");
}

/// What a run ran on: named for the report, and how many compute workers ran at once (all
/// in-process ranks share one pool; over MPI, each machine's processes share its cores).
struct backend_info {
  std::string name;
  unsigned workers = 1;
};

/// A run of one schedule on one model: what it is called in the report, its expert-parallel
/// replicas and the bytes of one pipeline transfer.
struct run_target {
  std::string schedule_name, what;
  int replicas = 1;
  double transfer_bytes = 0;
};

/// Runs `s` with `Executor` on `model`, then the serial reference, and reports both. Over MPI,
/// only rank 0 reports: it has gathered the whole run.
template <class Executor, class Model>
int run_and_report(const run_args& o, const schedule& s, Model& model, const exec::run_options& opt,
                   const run_target& t, const backend_info& backend) {
  check_fault(o.failing.fault, s, t.replicas);
  Executor ex(model, opt);
  const exec::run_result<float> run = ex.run(s);  // a timeout, a failed op: `run_error`
  if (opt.comm && opt.comm->rank() != 0) return exit_ok;
  const float loss = model.serial_step();
  const double worst = exec::max_grad_rel_err(run, model);
  const step_metrics metrics = measure(run.prog, run.time);
  // The prediction of this very run: costs calibrated from it, the CPU runtime's workers and
  // replicas, the same stream program through the same semantics. In-process, the machine too:
  // compute costs its CPU time, and the cores it shares with the runtime's other threads slow
  // it (over MPI, where no CPU time is gathered, its measured span and a core per worker).
  const timeline predicted = predicted_run(run.prog, run.time, run, backend.workers, t.replicas,
                                           link_costs(opt.delay, t.replicas, t.transfer_bytes));
  const std::string& name = t.schedule_name;
  if (!o.output.svg.empty()) {  // measured above predicted, on one time scale
    std::ofstream out = open_for_writing(o.output.svg);
    write_svg_compare(out, run.prog, run.time, "measured", predicted,
                      "predicted from the calibrated cost model", {.title = name + ", " + t.what});
  }
  write_pictures(o.output.trace, "", run.prog, run.time, name + ", " + t.what + ", measured");
  if (o.output.json) {
    json j = metrics_json(name, metrics);
    j["loss"] = run.loss;
    j["serial_loss"] = loss;
    j["max_grad_rel_err"] = worst;
    j["predicted_makespan"] = predicted.makespan.count();
    j["backend"] = backend.name;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << t.what << " (" << backend.name << ")\n";
    print_text(std::cout, name, metrics);
    std::cout << "predicted makespan " << show(predicted.makespan)
              << " (costs calibrated from this run)\n";
    std::cout << "loss " << run.loss << " (serial " << loss << "), max gradient relative error "
              << worst << "\n";
  }
  return exit_ok;
}

/// How long a failed rank of a world of processes waits before ending the job: the others have
/// been told and print what they waited at meanwhile.
constexpr auto report_linger = std::chrono::milliseconds(500);

int run_on(const run_args& o, exec::run_options opt, const backend_info& backend) {
  if (!o.schedule_file.empty()) {  // a PyTorch CSV: whole chunks, on the tiny dense model
    const schedule s = read_csv_file(o.schedule_file);
    if (const report r = weft::check(s); !r.ok())
      throw illegal_schedule(in_file(
          o.schedule_file, to_string(r.violations[0]) +
                               (r.violations.size() > 1
                                    ? " (and " + std::to_string(r.violations.size() - 1) + " more)"
                                    : "")));
    opt.delay = delay_preset(o.delay, s.ranks(), 1);
    exec::dense_model<float> model({.stages = s.model.chunks(), .micro = s.model.micro});
    return run_and_report<exec::dense_executor<float>>(
        o, s, model, opt,
        {o.schedule_file, "tiny dense model, " + std::to_string(s.ranks()) + " ranks", 1,
         4.0 * model.cfg.tokens * model.cfg.width},
        backend);
  }
  const pipeline_args& p = o.pipeline;
  const schedule s = schedule_of(p, p.schedule, {.demo_model = true, .ep = o.ep}, &std::cerr);
  const model_desc& m = s.model;
  const int stages = m.bidirectional ? m.chunks() / 2 : m.chunks();
  if (m.stages == stage_set::whole_block()) {
    opt.delay = delay_preset(o.delay, p.pp, 1);
    exec::dense_model<float> model({.stages = stages, .micro = p.micro});
    return run_and_report<exec::dense_executor<float>>(
        o, s, model, opt,
        {p.schedule, "tiny dense model, " + std::to_string(p.pp) + " ranks", 1,
         4.0 * model.cfg.tokens * model.cfg.width},
        backend);
  }
  const int ep = o.ep == 0 ? 2 : o.ep;
  opt.delay = delay_preset(o.delay, p.pp, ep);
  exec::moe_config cfg = exec::demo_config();
  cfg.stages = stages;
  cfg.layers = p.layers;
  cfg.micro = p.micro;
  cfg.replicas = ep;
  cfg.shared_expert = m.stages.has(kind::shared);
  exec::moe_model<float> model(cfg);
  return run_and_report<exec::moe_executor<float>>(
      o, s, model, opt,
      {p.schedule,
       "tiny MoE model, " + std::to_string(p.pp) + " pipeline ranks x " + std::to_string(ep) +
           " expert-parallel = " + std::to_string(p.pp * ep) + " ranks",
       ep, 4.0 * cfg.tokens * cfg.width},
      backend);
}

}  // namespace

int run_command(const run_args& o) {
  exec::run_options opt;
  opt.timeout = o.failing.timeout;
  opt.before_op = fault_injection(o.failing);
  const bool mpi = o.backend == backend_kind::mpi;
  opt.workers = static_cast<unsigned>(o.workers ? o.workers : mpi ? 1 : 2);
  if (!mpi) return run_on(o, opt, {"in-process", opt.workers});
  const std::unique_ptr<process_world> world = start_mpi(o);
  opt.comm = &world->comm();
  const bool root = opt.comm->rank() == 0;
  // A failure ends the whole job: each rank says its own, then the job ends with the code.
  try {
    return run_on(o, opt, {world->describe(), world->concurrent_workers(opt.workers)});
  } catch (...) {
    const failure f = failure_of(std::current_exception());
    if (!f.same_everywhere) {  // each rank says its own (run_error names its rank)
      std::cerr << (f.code == exit_internal ? "weft: rank " + std::to_string(opt.comm->rank()) +
                                                  ": " + std::string(without_prefix(f.message))
                                            : f.message)
                << "\n";
      std::this_thread::sleep_for(report_linger);
    } else if (root) {  // the same on every rank: said once, by rank 0
      std::cerr << f.message << "\n";
      if (f.shows_help) std::cerr << help_hint("weft " + std::string(run_args::name)) << "\n";
    } else {  // rank 0 ends the job once it has said it; a peer ending it first could cut it off
      std::this_thread::sleep_for(report_linger);
    }
    world->abort(f.code);
  }
}

}  // namespace weft::cli
