// `weft search`: the fastest legal schedule found for the costs and memory cap asked for, beside
// every generator's and the lower bounds (docs/search.md); the best written as PyTorch's CSV
// (--out) and pictured (--svg).
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <weft/io/pytorch_csv.hpp>
#include <weft/io/svg.hpp>
#include <weft/search/placements.hpp>
#include <weft/search/search.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "commands/common.hpp"
#include "commands/search.hpp"

namespace weft::cli {
namespace {

using json = nlohmann::ordered_json;

/// What a plan does when simulated: makespan, bubble, peak live activations.
template <time_type T>
struct measured {
  program prog;
  basic_timeline<T> time;
  basic_step_metrics<T> metrics;
  int peak = 0;
};

template <time_type T>
measured<T> measure_plan(const search::basic_problem<T>& q, const search::step_order& p) {
  measured<T> m;
  const schedule s = search::to_schedule(p);
  m.prog = lower(s);
  m.time = simulate(m.prog, q.cost, {.record_slowed = true});  // a few plans, for the pictures
  m.metrics = measure(m.prog, m.time);
  for (const int x : peak_live_activations(s)) m.peak = std::max(m.peak, x);
  return m;
}

std::string describe(const model_desc& m, bool xdc) {
  std::ostringstream o;
  o << "pp " << m.ranks << ", micro " << m.micro << ", "
    << (m.place == placement::vee
            ? "vee placement (2 chunks per rank)"
            : "loop placement (" + std::to_string(m.chunks_per_rank) +
                  (m.chunks_per_rank == 1 ? " chunk" : " chunks") + " per rank)")
    << ", " << m.layers << (m.layers == 1 ? " layer" : " layers") << " per chunk, "
    << (m.stages == stage_set::whole_block() ? "whole blocks" : "MoE sub-stages")
    << (xdc ? ", llama2-70b-xdc costs (seconds)" : ", schedule units")
    << (m.max_live > 0 ? ", memory cap " + std::to_string(m.max_live) + " units per rank"
                       : ", no memory cap");
  return o.str();
}

/// A search's result beside the problem it solved.
template <time_type T>
struct found {
  const search::basic_problem<T>& prob;
  search::search_result<T> r;
  std::optional<measured<T>> best;  ///< the best plan, simulated
  bool xdc = false;                 ///< seconds (llama2-70b-xdc) or schedule units
  /// Over every placement: each one's search (`prob` and `r` are the best one's).
  const search::placements_result<T>* over = nullptr;
};

/// Over every placement: each one's best, its own bound, and the least of the bounds.
template <time_type T>
void print_placements(const search::placements_result<T>& over) {
  std::cout << "placements searched (each its own problem, with its own bounds):\n"
            << std::left << std::setw(26) << "placement" << std::right << std::setw(12) << "best"
            << std::setw(12) << "bound"
            << "   found by\n";
  for (const search::placement_search<T>& s : over.searched) {
    std::cout << std::left << std::setw(26) << search::placement_name(s.problem.model) << std::right
              << std::fixed << std::setprecision(3);
    if (s.result.best)
      std::cout << std::setw(12) << s.result.best->makespan.count();
    else
      std::cout << std::setw(12) << "none";
    std::cout << std::setw(12) << s.result.bound.best().count() << "   "
              << (s.result.best ? s.result.found_by : "no legal plan")
              << (s.result.best && s.result.best->makespan <= s.result.bound.best()
                      ? " (optimal for this placement)"
                      : "")
              << std::defaultfloat << "\n";
  }
  std::cout << "no placement tried runs under " << std::fixed << std::setprecision(3)
            << over.bound.count() << std::defaultfloat << " (the least of their bounds)\n\n";
}

/// --out (whole chunks, as PyTorch's CSV holds them) and --svg of the best plan.
template <time_type T>
void write_files(const search_args& q, const found<T>& f) {
  if (!q.out.empty() && f.r.best) {
    search::step_order whole = f.r.best->p;
    whole.model.stages = stage_set::whole_block();
    whole.model.layers = 1;
    whole.overlap = overlap_options::none();
    std::ofstream out = open_for_writing(q.out);
    write_pytorch_csv(out, search::to_schedule(whole));
  }
  if (!q.svg.empty() && f.best) {
    std::ofstream out = open_for_writing(q.svg);
    const model_desc& m = f.prob.model;
    write_svg(out, f.best->prog, f.best->time,
              {.title = "weft search: pp " + std::to_string(m.ranks) + ", micro " +
                        std::to_string(m.micro) +
                        (m.max_live > 0 ? ", cap " + std::to_string(m.max_live) : std::string()) +
                        " (" + f.r.found_by + ")"});
  }
}

template <time_type T>
json as_json(const search_args& q, const found<T>& f) {
  const search::search_result<T>& r = f.r;
  json j;
  j["problem"] = describe(f.prob.model, f.xdc);
  j["time_unit"] = f.xdc ? "seconds" : "units";
  json gens = json::array();
  for (const auto& g : r.generators) {
    json x;
    x["schedule"] = g.name;
    if (g.result) {
      const measured<T> m = measure_plan(f.prob, g.result->p);
      x["makespan"] = m.metrics.makespan.count();
      x["bubble_ratio"] = m.metrics.bubble_ratio;
      x["peak_live"] = m.peak;
    } else {
      x["error"] = g.why;
    }
    gens.push_back(x);
  }
  j["generators"] = gens;
  if (f.best)
    j["best"] = {{"makespan", f.best->metrics.makespan.count()},
                 {"bubble_ratio", f.best->metrics.bubble_ratio},
                 {"peak_live", f.best->peak},
                 {"found_by", r.found_by}};
  else
    j["best"] = nullptr;
  const auto best_gen = r.best_generator();
  j["best_generator_makespan"] = best_gen ? json(best_gen->makespan.count()) : json(nullptr);
  j["bound"] = {
      {"best", r.bound.best().count()},   {"critical_path", r.bound.critical_path.count()},
      {"work", r.bound.work.count()},     {"in_order", r.bound.in_order.count()},
      {"memory", r.bound.memory.count()}, {"one_rank", r.bound.one_rank.count()}};
  j["evaluations"] = r.evaluations;
  j["estimated"] = r.estimated;
  j["seconds"] = r.seconds;
  if (f.over) {
    json all = json::array();
    for (const search::placement_search<T>& s : f.over->searched)
      all.push_back({{"placement", search::placement_name(s.problem.model)},
                     {"makespan", s.result.best ? json(s.result.best->makespan.count()) : json()},
                     {"bound", s.result.bound.best().count()},
                     {"found_by", s.result.found_by},
                     {"evaluations", s.result.evaluations},
                     {"estimated", s.result.estimated}});
    j["placements"] = all;
    j["bound_over_placements"] = f.over->bound.count();
  }
  j["seed"] = q.seed;
  return j;
}

/// The table: every generator's plan, the search's, the lower bound, and how the best was found.
template <time_type T>
int print_text(const search_args& q, const found<T>& f) {
  const search::search_result<T>& r = f.r;
  const T bound = r.bound.best();
  const auto over = [&](T t) { return bound > T{0} ? 100 * (t / bound - 1) : 0.0; };
  const auto scale = [&](T t) { return f.xdc ? t.count() * 1e3 : t.count(); };  // ms or units
  if (f.over) print_placements(*f.over);
  std::cout << "search: " << describe(f.prob.model, f.xdc) << (f.over ? " (the best)" : "") << "\n"
            << std::left << std::setw(22) << "schedule" << std::right << std::setw(12)
            << (std::string("makespan, ") + (f.xdc ? "ms" : "units")) << std::setw(9) << "bubble"
            << std::setw(11) << "peak live" << std::setw(13) << "over bound"
            << "\n";
  const auto row = [&](const std::string& name, const measured<T>& m) {
    std::cout << std::left << std::setw(22) << name << std::right << std::fixed
              << std::setprecision(3) << std::setw(12) << scale(m.metrics.makespan)
              << std::setprecision(1) << std::setw(8) << 100 * m.metrics.bubble_ratio << "%"
              << std::setw(11) << m.peak << std::setw(12) << over(m.metrics.makespan) << "%"
              << std::defaultfloat << "\n";
  };
  for (const auto& g : r.generators) {
    if (g.result) {
      row(g.name, measure_plan(f.prob, g.result->p));
      continue;
    }
    const bool cap = g.why.find("rule 5") != std::string::npos;
    std::cout << std::left << std::setw(22) << g.name
              << (cap ? "over the memory cap: " : "does not apply: ") << g.why << "\n";
  }
  if (!f.best) {
    std::cout << "no legal schedule found: no generator fits and no list-scheduler policy "
                 "finishes under the memory cap (a V needs 2 units per rank at least; "
                 "interleaving V chunks, V)\n";
    return exit_illegal;
  }
  row("search", *f.best);
  std::cout << std::left << std::setw(22) << "lower bound" << std::right << std::fixed
            << std::setprecision(3) << std::setw(12) << scale(bound) << "   (critical path "
            << scale(r.bound.critical_path) << ", work " << scale(r.bound.work) << ", in order "
            << scale(r.bound.in_order) << ", memory " << scale(r.bound.memory) << ", one rank "
            << scale(r.bound.one_rank) << ")" << std::defaultfloat << "\n";
  std::cout << "found by " << r.found_by;
  const auto best_gen = r.best_generator();
  if (best_gen && r.best->makespan < best_gen->makespan)
    std::cout << ", " << std::fixed << std::setprecision(1)
              << 100 * (1 - r.best->makespan / best_gen->makespan)
              << "% faster than the best generator" << std::defaultfloat;
  std::cout << "; " << r.evaluations << " plans judged";
  if (r.estimated > 0) std::cout << ", " << r.estimated << " estimated";
  std::cout << " in " << std::fixed << std::setprecision(1) << r.seconds << " s (seed " << q.seed
            << ")" << std::defaultfloat << "\n";
  return exit_ok;
}

search::search_options options_of(const search_args& q) {
  return {.budget_s = q.budget.count(),
          .max_evaluations = static_cast<std::uint64_t>(q.evaluations),
          .seed = static_cast<std::uint64_t>(q.seed)};
}

template <time_type T>
int report(const search_args& q, found<T>& f) {
  if (f.r.best) f.best = measure_plan(f.prob, f.r.best->p);
  write_files(q, f);
  if (!q.json) return print_text(q, f);
  std::cout << as_json(q, f).dump() << "\n";
  return f.best ? exit_ok : exit_illegal;
}

template <time_type T>
int report(const search_args& q, const search::basic_problem<T>& prob, bool xdc) {
  found<T> f{prob, search::find_schedule(prob, options_of(q)), std::nullopt, xdc};
  return report(q, f);
}

/// Every placement of the rank's share of the model (--cost), each its own problem; the best
/// reported in full.
int report_placements(const search_args& q, const search::unit_problem& asked,
                      const unit_cost_model& given) {
  std::vector<search::unit_problem> problems;
  for (const model_desc& m : search::placements_to_try(asked.model)) {
    search::unit_problem p = asked;
    p.model = m;
    p.cost = given.per_chunk_of(m);
    problems.push_back(std::move(p));
  }
  const search::placements_result<units> over =
      search::find_over_placements(problems, options_of(q));
  const std::size_t best = over.best.value_or(0);
  found<units> f{over.searched[best].problem, over.searched[best].result, std::nullopt, false,
                 &over};
  return report(q, f);
}

}  // namespace

int run_command(const search_args& q) {
  if (q.cost.preset == preset_name::llama2_70b_xdc) {
    const xdc_facts f = xdc_facts_of(q.chunks, q.micro, false, q.delay);
    search::problem prob;
    prob.model = {
        .ranks = f.pp, .chunks_per_rank = f.chunks, .micro = f.micro, .max_live = q.max_live};
    prob.cost = xdc_cost_model(f, xdc_contention_of(f, q.cost));
    return report(q, prob, true);
  }
  search::unit_problem prob;
  const stage_set stages = q.shared_expert         ? stage_set::moe_with_shared()
                           : q.moe || q.fb_overlap ? stage_set::moe()
                                                   : stage_set::whole_block();
  const bool vee = q.placement == placement_choice::vee;
  prob.model = {.ranks = q.pp,
                .chunks_per_rank = vee ? 2 : q.chunks,
                .place = vee ? placement::vee : placement::loop,
                .micro = q.micro,
                .layers = q.layers,
                .stages = stages,
                .max_live = q.max_live};
  prob.overlap = q.fb_overlap ? overlap_options::all() : overlap_options::none();
  // --cost is a rank's share of the model, split over its chunks; the preset is per chunk.
  const unit_cost_model given = unit_costs(q.cost);
  if (q.every_placement) return report_placements(q, prob, given);
  prob.cost = q.cost.preset == preset_name::none ? given.per_chunk_of(prob.model) : given;
  return report(q, prob, false);
}

}  // namespace weft::cli
