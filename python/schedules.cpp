// weft.Schedule and the calls on schedules: generate, load_csv, from_actions, verify, simulate,
// search (docs/python.md).
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/io/check_report.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/metrics_json.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/search/search.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>
#include "bindings.hpp"

namespace weft::python {
namespace {

// ---- schedules in and out ----------------------------------------------------------------

/// Generator `name`'s schedule, as `weft generate` makes it for PyTorch's CSV: whole chunks,
/// fb-overlap as OVERLAP_F_B pairs; MoE sub-stages only when asked (they have no CSV form).
py_schedule generate(const std::string& name, int pp, int micro, std::optional<int> chunks,
                     int layers, bool fb_overlap, bool moe, bool comms,
                     const std::optional<std::string>& p2p, bool nanopipe) {
  generator_args a;
  a.ranks = pp;
  a.micro = micro;
  a.layers = layers;
  a.stages = moe ? stage_set::moe() : stage_set::whole_block();
  a.overlap = fb_overlap ? overlap_options::all() : overlap_options::none();
  a.extra_warmup = fb_overlap;  // MindSpeed's extra warm-up micro-batch with fb-overlap on VPP
  a.nanopipe = nanopipe;
  if (chunks) a.chunks = *chunks;
  if (p2p) {
    if (*p2p == "megatron")
      a.p2p.megatron = true;
    else if (*p2p == "blocking")
      a.p2p.blocking = true;
    else if (*p2p != "pytorch")
      throw config_error("weft: generate: p2p must be 'pytorch', 'megatron' or 'blocking', got '" +
                         excerpt(*p2p) + "'");
  }
  a.transfers = comms || a.p2p.lowers();
  return {weft::generate(name, a), name};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("weft: cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A PyTorch schedule CSV's text (`where` names it in errors: a file, or "text").
py_schedule parse_csv(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  try {
    return {read_pytorch_csv(in), where};
  } catch (const csv_error& e) {
    throw config_error("weft: " + where + ": " + std::string(without_prefix(e.what())));
  }
}

/// A path (a `str` naming a file, or an `os.PathLike`) or the CSV's own text.
py_schedule load_csv(const py::object& source) {
  const py::module_ os = py::module_::import("os");
  const bool path_like = py::isinstance(source, os.attr("PathLike"));
  if (!path_like && !py::isinstance<py::str>(source))
    throw config_error("weft: load_csv takes a path or a CSV's text, got a " +
                       std::string(py::str(source.get_type().attr("__name__"))));
  const std::string text = py::str(os.attr("fspath")(source));
  // A CSV's text has a line break or a comma (every row with more than one action); a string
  // without either names a file, and one that cannot be opened is an error saying so.
  const bool is_file = path_like || text.find_first_of(",\n") == std::string::npos;
  if (is_file) return parse_csv(read_file(text), text);
  return parse_csv(text, "text");
}

/// Rows of actions in PyTorch's notation, one list a rank ("" an idle step).
py_schedule from_actions(const std::vector<std::vector<std::string>>& rows) {
  std::string text;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      const std::string& cell = rows[r][i];
      if (cell.find_first_of(",\n\r") != std::string::npos)
        throw config_error("weft: from_actions: rank " + std::to_string(r) + ", action " +
                           std::to_string(i) + " ('" + excerpt(cell) +
                           "') holds a comma or a line break; give one action a string");
      text += (i ? "," : "") + cell;
    }
    text += '\n';
  }
  return parse_csv(text, "actions");
}

std::string to_csv(const py_schedule& x, std::optional<bool> comms) {
  bool has = false;
  for (const op& o : x.s.ops) has = has || is_p2p(o.k);
  schedule s = x.s;
  if (comms && *comms && !has) s = with_transfers(s);
  if (comms && !*comms && has) s = compute_only(s);
  std::ostringstream out;
  write_pytorch_csv(out, s);
  return out.str();
}

bool same(const schedule& a, const schedule& b) {
  return a.model == b.model && std::ranges::equal(a.ops, b.ops) &&
         std::ranges::equal(a.slot_end, b.slot_end) &&
         std::ranges::equal(a.rank_begin, b.rank_begin);
}

std::string repr(const py_schedule& x) {
  const model_desc& m = x.s.model;
  return "<weft.Schedule " + x.name + ": " + std::to_string(m.ranks) + " ranks, " +
         std::to_string(m.micro) + " micro-batches, " + std::to_string(m.chunks_per_rank) +
         (m.chunks_per_rank == 1 ? " chunk" : " chunks") + " per rank, " +
         std::to_string(x.s.ops.size()) + " ops>";
}

// ---- verify ------------------------------------------------------------------------------

/// A number of bytes a Python value gives: finite, in [0, 1e18].
double bytes_of(const py::handle& v, const std::string& what) {
  if (!(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)) ||
      py::isinstance<py::bool_>(v))
    throw config_error("weft: verify: " + what + " must be a number of bytes");
  const double x = py::cast<double>(v);
  if (!(x >= 0 && x <= 1e18))
    throw config_error("weft: verify: " + what + " must be in [0, 1e18] bytes");
  return x;
}

/// memory['key']: a list of `n` numbers, or one number for every entry.
std::vector<double> per(const py::dict& memory, const char* key, std::size_t n) {
  std::vector<double> out(n, 0.0);
  if (!memory.contains(key)) return out;
  const py::object v = memory[key];
  const std::string what = std::string("memory['") + key + "']";
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) {
    std::fill(out.begin(), out.end(), bytes_of(v, what));
    return out;
  }
  const py::sequence list = v;
  if (list.size() != n)
    throw config_error("weft: verify: " + what + " has " + std::to_string(list.size()) +
                       " entries, the schedule needs " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i) out[i] = bytes_of(list[i], what);
  return out;
}

/// What memory= states: a chunk's live activations and a rank's model states, in bytes.
struct memory_facts {
  std::vector<double> activation, states;
};

/// memory= checked, before anything runs.
memory_facts memory_of(const py::dict& memory, const model_desc& m) {
  for (const auto& item : memory) {
    const std::string key = py::str(item.first);
    if (key != "activation_bytes" && key != "states_bytes")
      throw config_error(
          "weft: verify: memory takes 'activation_bytes' (a chunk's live "
          "activations) and 'states_bytes' (a rank's model states), not '" +
          excerpt(key) + "'");
  }
  return {per(memory, "activation_bytes", static_cast<std::size_t>(m.chunks())),
          per(memory, "states_bytes", static_cast<std::size_t>(m.ranks))};
}

py::object verify(const py_schedule& x, std::optional<int> max_live,
                  const std::optional<py::dict>& memory) {
  schedule s = x.s;
  if (max_live) {
    if (*max_live < 1) throw config_error("weft: verify: max_live must be at least 1");
    s.model.max_live = *max_live;
  }
  std::optional<memory_facts> mem;
  if (memory) mem = memory_of(*memory, s.model);
  report r;
  std::optional<std::string> stall;
  {
    py::gil_scoped_release free;  // a schedule of millions of ops takes a while
    r = check(s, report_check_options);
    if (r.ok()) stall = pytorch_simulator_refusal(lower(s));
  }
  nlohmann::ordered_json j = check_json(r, r.violations.size(), stall);
  j["pytorch_simulator_stalls"] = stall.has_value();
  if (r.ok()) {
    j["peak_live_per_rank"] = nlohmann::ordered_json::array();
    for (const int n : peak_live_activations(s)) j["peak_live_per_rank"].push_back(n);
    if (mem) {
      const buffer<double> live = peak_live_weight(
          s, [&](int ch) { return mem->activation[static_cast<std::size_t>(ch)]; });
      nlohmann::ordered_json bytes = nlohmann::ordered_json::array();
      for (std::size_t rk = 0; rk < live.size(); ++rk)
        bytes.push_back(std::llround(mem->states[rk] + live[rk]));
      j["bytes_per_rank"] = bytes;
    }
  }
  return to_python(j);
}

// ---- simulate ----------------------------------------------------------------------------

struct unit_prices {
  double F = 1, B = 2, W = 1;
  std::optional<double> FB;
  double P2P = 0, A2A = 0;
};

/// `costs`, a rank's share of the model in schedule units as the tool's `--cost` states it (F,
/// B, W, FB, P2P, A2A), the rest the defaults (F 1, B 2, W 1); `call` names the caller.
unit_prices prices_of(const std::optional<py::dict>& costs, const char* call) {
  unit_prices p;
  if (!costs) return p;
  for (const auto& item : *costs) {
    const std::string key = py::str(item.first);
    const py::handle v = item.second;
    const std::string where = std::string("weft: ") + call + ": costs['" + excerpt(key) + "']";
    if (!(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)) ||
        py::isinstance<py::bool_>(v))
      throw config_error(where + " must be a number of schedule units");
    const double c = py::cast<double>(v);
    if (!(c >= 0 && c <= 1e12)) throw config_error(where + " must be in [0, 1e12] units");
    if (key == "F")
      p.F = c;
    else if (key == "B")
      p.B = c;
    else if (key == "W")
      p.W = c;
    else if (key == "FB")
      p.FB = c;
    else if (key == "P2P")
      p.P2P = c;
    else if (key == "A2A")
      p.A2A = c;
    else
      throw config_error(std::string("weft: ") + call + ": no cost '" + excerpt(key) +
                         "' (F forward, B full backward, W its dW part, FB an overlapped F and "
                         "B, P2P a pipeline transfer, A2A an all-to-all)");
  }
  return p;
}

unit_cost_model costs_of(const model_desc& m, const unit_prices& p, bool contention) {
  unit_cost_model c = unit_cost_model::pipeline(
      {.F = p.F, .B = p.B, .W = p.W, .FB = p.FB.value_or(-1), .P2P = p.P2P, .A2A = p.A2A});
  if (contention) c.contention = contention_facts::published();
  return c.per_chunk_of(m);  // the costs are a rank's share of the model, as the tool's --cost
}

struct simulated {
  program prog;
  unit_timeline time;
};

simulated run_simulation(const schedule& s, const unit_prices& p, bool contention) {
  py::gil_scoped_release free;  // nothing of Python's below
  simulated out{lower(s), {}};  // an illegal schedule: IllegalScheduleError
  out.time = simulate(out.prog, costs_of(s.model, p, contention), {.record_slowed = true});
  if (out.time.deadlocked())
    throw illegal_schedule("weft: simulate: deadlock: " +
                           to_string(out.prog.at(out.time.blocked[0])) + " never starts");
  return out;
}

py::object simulate_schedule(const py_schedule& x, const unit_prices& p, bool contention) {
  const simulated r = run_simulation(x.s, p, contention);
  return to_python(metrics_json(x.name, measure(r.prog, r.time)));
}

void write_picture(const py_schedule& x, const std::filesystem::path& path, const unit_prices& p,
                   bool contention, bool svg) {
  const simulated r = run_simulation(x.s, p, contention);
  std::ofstream out(path);
  if (!out) throw config_error("weft: cannot write '" + path.string() + "'");
  if (svg)
    write_svg(out, r.prog, r.time, {.title = repr(x)});
  else
    write_chrome_trace(out, r.prog, r.time, trace_unit);
  if (!out) throw config_error("weft: cannot write '" + path.string() + "'");
}

// ---- search ------------------------------------------------------------------------------

py::object search(int pp, int micro, int chunks, const std::string& placement_name, int layers,
                  bool moe, bool fb_overlap, int max_live, double budget_s,
                  std::uint64_t evaluations, std::uint64_t seed, const unit_prices& p,
                  bool contention) {
  if (!(budget_s > 0) || budget_s > 86400)
    throw config_error("weft: search: budget_s must be in (0, 86400] seconds");
  if (placement_name != "loop" && placement_name != "vee")
    throw config_error("weft: search: placement must be 'loop' or 'vee', got '" +
                       excerpt(placement_name) + "'");
  const bool vee = placement_name == "vee";
  search::unit_problem prob;
  prob.model = {.ranks = pp,
                .chunks_per_rank = vee ? 2 : chunks,
                .place = vee ? placement::vee : placement::loop,
                .micro = micro,
                .layers = layers,
                .stages = moe || fb_overlap ? stage_set::moe() : stage_set::whole_block(),
                .max_live = max_live};
  if (const model_error e = validate(prob.model); e != model_error::none)
    throw config_error("weft: search: " + std::string(describe(e)));
  prob.overlap = fb_overlap ? overlap_options::all() : overlap_options::none();
  prob.cost = costs_of(prob.model, p, contention);
  search::search_result<units> r;
  {
    py::gil_scoped_release free;  // a long search leaves the interpreter to other threads
    r = search::find_schedule(prob,
                              {.budget_s = budget_s, .max_evaluations = evaluations, .seed = seed});
  }
  py::dict out;
  if (r.best) {
    out["schedule"] = py_schedule{search::to_schedule(r.best->p), "search"};
    out["makespan"] = r.best->makespan.count();
  } else {
    out["schedule"] = py::none();
    out["makespan"] = py::none();
  }
  out["found_by"] = r.found_by;
  const auto best_gen = r.best_generator();
  out["best_generator_makespan"] =
      best_gen ? py::object(py::float_(best_gen->makespan.count())) : py::none();
  py::list gens;
  for (const auto& g : r.generators) {
    py::dict row;
    row["schedule"] = g.name;
    if (g.result)
      row["makespan"] = g.result->makespan.count();
    else
      row["refused"] = g.why;
    gens.append(row);
  }
  out["generators"] = gens;
  out["bound"] = py::dict(
      py::arg("best") = r.bound.best().count(),
      py::arg("critical_path") = r.bound.critical_path.count(),
      py::arg("work") = r.bound.work.count(), py::arg("in_order") = r.bound.in_order.count(),
      py::arg("memory") = r.bound.memory.count(), py::arg("one_rank") = r.bound.one_rank.count());
  out["optimal"] = r.best.has_value() && r.best->makespan <= r.bound.best();
  out["evaluations"] = r.evaluations;
  out["estimated"] = r.estimated;
  out["seconds"] = r.seconds;
  out["rate"] = r.seconds > 0 ? static_cast<double>(r.evaluations) / r.seconds : 0.0;
  return out;
}

}  // namespace

void bind_schedules(py::module_& m) {
  py::class_<py_schedule>(m, "Schedule",
                          "A pipeline schedule: per rank, its steps in order. Made by generate(), "
                          "load_csv(), from_actions() or search().")
      .def_property_readonly(
          "name", [](const py_schedule& x) { return x.name; },
          "the generator (or file) it came from")
      .def_property_readonly("ranks", [](const py_schedule& x) { return x.s.model.ranks; })
      .def_property_readonly(
          "micro", [](const py_schedule& x) { return x.s.model.micro; }, "micro-batches a step")
      .def_property_readonly("chunks_per_rank",
                             [](const py_schedule& x) { return x.s.model.chunks_per_rank; })
      .def_property_readonly(
          "placement",
          [](const py_schedule& x) {
            return std::string(x.s.model.place == placement::vee ? "vee" : "loop");
          })
      .def_property_readonly(
          "has_comms",
          [](const py_schedule& x) {
            return std::ranges::any_of(x.s.ops, [](const op& o) { return is_p2p(o.k); });
          },
          "whether its transfers are explicit (SEND/RECV actions)")
      .def_property_readonly(
          "actions", [](const py_schedule& x) { return pytorch_actions(x.s); },
          "per rank, its actions in PyTorch's notation ('0F3', '1B2', '0SEND_F3', "
          "'(0F7;7B3)OVERLAP_F_B'; '' an idle step)")
      .def("to_csv", &to_csv, py::arg("comms") = py::none(),
           "PyTorch's schedule CSV: comms=None as the schedule is, True with SEND/RECV actions "
           "(added as PyTorch's _add_send_recv does), False compute only")
      .def(
          "save",
          [](const py_schedule& x, const std::filesystem::path& path, std::optional<bool> comms) {
            const std::string text = to_csv(x, comms);
            std::ofstream out(path);
            if (!(out << text)) throw config_error("weft: cannot write '" + path.string() + "'");
          },
          py::arg("path"), py::arg("comms") = py::none(), "writes to_csv(comms) to path")
      .def("verify", &verify, py::arg("max_live") = py::none(), py::arg("memory") = py::none(),
           "weft.verify(self, ...)")
      .def(
          "simulate",
          [](const py_schedule& x, const std::optional<py::dict>& costs, bool contention) {
            return simulate_schedule(x, prices_of(costs, "simulate"), contention);
          },
          py::kw_only(), py::arg("costs") = py::none(), py::arg("contention") = false,
          "weft.simulate(self, ...)")
      .def(
          "svg",
          [](const py_schedule& x, const std::filesystem::path& path,
             const std::optional<py::dict>& costs, bool contention) {
            write_picture(x, path, prices_of(costs, "svg"), contention, true);
          },
          py::arg("path"), py::kw_only(), py::arg("costs") = py::none(),
          py::arg("contention") = false,
          "the simulated step as an SVG picture, a row of lanes per rank")
      .def(
          "trace",
          [](const py_schedule& x, const std::filesystem::path& path,
             const std::optional<py::dict>& costs, bool contention) {
            write_picture(x, path, prices_of(costs, "trace"), contention, false);
          },
          py::arg("path"), py::kw_only(), py::arg("costs") = py::none(),
          py::arg("contention") = false,
          "the simulated step as a Chrome trace (chrome://tracing, Perfetto)")
      .def(
          "__eq__",
          [](const py_schedule& a, const py::object& b) {
            return py::isinstance<py_schedule>(b) && same(a.s, b.cast<const py_schedule&>().s);
          },
          py::is_operator())
      .def("__repr__", &repr);

  m.def(
      "generators",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const generator_info& g : weft::generators)
          out.emplace_back(std::string(g.name), std::string(g.summary));
        return out;
      },
      "every generator's name and one line on it");
  m.def("generate", &generate, py::arg("name"), py::kw_only(), py::arg("pp"), py::arg("micro"),
        py::arg("chunks") = py::none(), py::arg("layers") = 1, py::arg("fb_overlap") = false,
        py::arg("moe") = false, py::arg("comms") = false, py::arg("p2p") = py::none(),
        py::arg("nanopipe") = false,
        "generator name's schedule for pp ranks and micro micro-batches (chunks per rank where "
        "it takes them); comms=True with explicit transfers, p2p='megatron' or 'blocking' as "
        "Megatron issues them");
  m.def("load_csv", &load_csv, py::arg("source"),
        "a PyTorch schedule CSV: a path, or the CSV's text (compute only or with comms)");
  m.def("from_actions", &from_actions, py::arg("rows"),
        "a schedule from per-rank lists of PyTorch actions ('0F0', '1B3', '' an idle step)");
  m.def("verify", &verify, py::arg("schedule"), py::kw_only(), py::arg("max_live") = py::none(),
        py::arg("memory") = py::none(),
        "the checker's report: 'legal', every violation (rule, fault, rank, slot, op, other, "
        "message), the ops a deadlock leaves 'blocked', whether PyTorch's simulator would "
        "stall, the peak live activations per rank; with memory={'activation_bytes': per "
        "chunk, 'states_bytes': per rank} the peak bytes per rank");
  m.def(
      "simulate",
      [](const py_schedule& x, const std::optional<py::dict>& costs, bool contention) {
        return simulate_schedule(x, prices_of(costs, "simulate"), contention);
      },
      py::arg("schedule"), py::kw_only(), py::arg("costs") = py::none(),
      py::arg("contention") = false,
      "the step in schedule units: makespan, bubble_ratio, exposed_comm and per rank busy, "
      "idle, peak activations (as `weft simulate --json`); costs={'F': 1, 'B': 2, 'W': 1, 'FB': "
      "..., 'P2P': 0, 'A2A': 0}, a rank's share of the model as the tool's --cost");
  m.def(
      "search",
      [](int pp, int micro, int chunks, const std::string& placement, int layers, bool moe,
         bool fb_overlap, int max_live, double budget_s, std::uint64_t evaluations,
         std::uint64_t seed, const std::optional<py::dict>& costs, bool contention) {
        return search(pp, micro, chunks, placement, layers, moe, fb_overlap, max_live, budget_s,
                      evaluations, seed, prices_of(costs, "search"), contention);
      },
      py::kw_only(), py::arg("pp"), py::arg("micro"), py::arg("chunks") = 1,
      py::arg("placement") = "loop", py::arg("layers") = 1, py::arg("moe") = false,
      py::arg("fb_overlap") = false, py::arg("max_live") = 0, py::arg("budget_s") = 1.0,
      py::arg("evaluations") = 0, py::arg("seed") = 1, py::arg("costs") = py::none(),
      py::arg("contention") = false,
      "the fastest legal schedule found within budget_s (the GIL released meanwhile): "
      "'schedule' and 'makespan' (None when nothing legal fits max_live), the lower 'bound's, "
      "'optimal' (at the bound), every generator's makespan, 'evaluations' (plans judged in "
      "full), 'estimated' (plans estimated step by step first), 'seconds' and the 'rate' of "
      "plans judged a second");
}

}  // namespace weft::python
