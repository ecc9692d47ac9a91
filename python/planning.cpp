// weft.plan: a real job — a Hugging Face config.json, Megatron's flags, a cluster — planned as
// `weft plan --json` plans it, returned as the same dict (plan/report.hpp's `to_json`).
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/plan/cluster_file.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/presets.hpp>
#include <weft/plan/report.hpp>
#include <weft/plan/search_report.hpp>
#include <weft/plan/torchtitan_file.hpp>
#include "bindings.hpp"

namespace weft::python {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw config_error("weft: plan: " + path.string() + " is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("weft: plan: cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A file's text: a dict as its JSON, a path as its contents; `what` names the argument.
std::string text_of(const py::object& v, const char* what) {
  if (py::isinstance<py::dict>(v)) {
    try {
      return py::cast<std::string>(py::module_::import("json").attr("dumps")(v));
    } catch (const py::error_already_set& e) {  // a value JSON cannot hold
      throw config_error(std::string("weft: plan: ") + what + " is not JSON: " + e.what());
    }
  }
  const py::module_ os = py::module_::import("os");
  if (py::isinstance<py::str>(v) || py::isinstance(v, os.attr("PathLike")))
    return read_text(fs::path(py::cast<std::string>(os.attr("fspath")(v))));
  throw config_error(std::string("weft: plan: ") + what + " is a path or a dict, got a " +
                     py::cast<std::string>(v.get_type().attr("__name__")));
}

/// A path's text (`str` or `os.PathLike`), or nothing for any other object.
std::optional<fs::path> path_of(const py::object& v) {
  const py::module_ os = py::module_::import("os");
  if (!py::isinstance<py::str>(v) && !py::isinstance(v, os.attr("PathLike"))) return std::nullopt;
  return fs::path(py::cast<std::string>(os.attr("fspath")(v)));
}

/// The model: a config.json, a model snapshot's folder holding one, or its dict.
plan::hf_model model_of(const py::object& model) {
  std::error_code ec;
  const std::optional<fs::path> p = path_of(model);
  if (p && fs::is_directory(*p, ec))
    return plan::read_hf_config(read_text(*p / "config.json"), (*p / "config.json").string());
  return plan::read_hf_config(text_of(model, "model"), p ? p->string() : "config.json");
}

/// A keyword's value as JSON: a number, a string, a bool (a numpy scalar by its `item()`), or
/// a list of strings (recompute_modules).
py::object scalar_of(const std::string& name, py::object v) {
  if (!py::isinstance<py::str>(v) && py::hasattr(v, "item")) v = v.attr("item")();
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) ||
      py::isinstance<py::float_>(v) || py::isinstance<py::str>(v))
    return v;
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::list out;
    for (const py::handle e : v) {
      if (!py::isinstance<py::str>(e)) break;
      out.append(e);
    }
    if (out.size() == py::len(v)) return out;
  }
  throw config_error("weft: plan: " + name +
                     " takes a number, a string, True/False or a list of strings, got a " +
                     py::cast<std::string>(v.get_type().attr("__name__")));
}

/// The job: `base` (a job file's JSON text, or none) with the keyword arguments on top, named as
/// `weft plan`'s flags with underscores for dashes (`micro_batch_size`). Each keyword goes
/// through the job file's reader — its ranges and messages — and one it does not know is an
/// error naming it. The base's keys are taken in dashes as the keywords are (Megatron's
/// argument names have underscores), so that a keyword replaces the base's setting.
plan::job job_of(const std::optional<std::string>& base, const py::kwargs& flags) {
  const py::module_ json = py::module_::import("json");
  py::dict merged;
  if (base) {
    const py::dict given = json.attr("loads")(*base);
    for (const auto& [k, v] : given) {
      std::string key = py::cast<std::string>(k);
      std::replace(key.begin(), key.end(), '_', '-');
      if (merged.contains(key))
        throw config_error("weft: plan: job: " + excerpt(py::cast<std::string>(k)) + " and " + key +
                           " are one setting: give one");
      merged[py::str(key)] = v;
    }
  }
  for (const auto& item : flags) {
    const std::string name = py::cast<std::string>(item.first);
    std::string key = name;
    std::replace(key.begin(), key.end(), '_', '-');
    py::dict one;
    one[py::str(key)] = scalar_of(name, py::reinterpret_borrow<py::object>(item.second));
    // Checked alone: an unknown name is refused with the nearest known one, a value out of range
    // with its range.
    (void)plan::read_job(py::cast<std::string>(json.attr("dumps")(one)), "plan");
    // A keyword replaces the base's setting under either of its names (weft's, Megatron's).
    for (const auto& [mine, megatron] : plan::megatron_keys)
      if (key == mine || key == megatron) {
        if (merged.contains(std::string(mine)))
          PyDict_DelItemString(merged.ptr(), std::string(mine).c_str());
        if (merged.contains(std::string(megatron)))
          PyDict_DelItemString(merged.ptr(), std::string(megatron).c_str());
      }
    // A new recomputation policy replaces the base's modules and per-op form unless the
    // keywords name them.
    if (key == "recompute" || key == "recompute-granularity")
      for (const auto& [form, keyword] : {std::pair{"recompute-modules", "recompute_modules"},
                                          std::pair{"recompute-ops", "recompute_ops"}})
        if (!flags.contains(keyword) && merged.contains(form))
          PyDict_DelItemString(merged.ptr(), form);
    merged[py::str(key)] = one[py::str(key)];
  }
  return plan::read_job(py::cast<std::string>(json.attr("dumps")(merged)), "plan").spec;
}

/// job=: a job file or a dict, as JSON text, its keys and values checked under its name.
std::string job_text(const py::object& job) {
  const std::string text = text_of(job, "job");
  const std::optional<fs::path> p = path_of(job);
  warn_all(plan::read_job(text, p ? p->string() : "job").warnings);  // and its values checked
  return text;
}

/// A preset's folder: a path, or a name under $WEFT_PRESETS or the presets weft was built with.
fs::path preset_folder(const std::string& name) {
  std::error_code ec;
  if (fs::is_directory(name, ec)) return name;
  if (const char* env = std::getenv("WEFT_PRESETS"); env && *env)
    if (fs::is_directory(fs::path(env) / name, ec)) return fs::path(env) / name;
  if (fs::is_directory(fs::path(WEFT_PRESETS_DIR) / name, ec))
    return fs::path(WEFT_PRESETS_DIR) / name;
  throw config_error("weft: plan: no preset '" + excerpt(name) +
                     "' (a folder of config.json, job.json and cluster.json; the built-in: "
                     "deepseek-v3, bloom-176b, llama2-70b-xdc, ampipe-16p)");
}

/// job= a torchtitan TOML file (a path ending .toml): its job as torchtitan derives it for model
/// `m` on `devices` (its data_parallel_shard_degree -1 needs them).
std::optional<plan::job> torchtitan_job_of(const std::optional<py::object>& job,
                                           const plan::transformer& m, long long devices,
                                           const py::kwargs& flags) {
  if (!job) return std::nullopt;
  const std::optional<fs::path> p = path_of(*job);
  if (!p || p->extension() != ".toml") return std::nullopt;
  if (flags.size() > 0)
    throw config_error(
        "weft: plan: torchtitan's job file is read whole; change it there, not with keywords "
        "beside it");
  const plan::torchtitan_job t = plan::read_torchtitan(read_text(*p), p->string());
  warn_all(t.warnings);
  return plan::torchtitan_as_job(t, m, devices);
}

/// What a plan is of: the model, the job and the cluster, named.
struct planned {
  plan::hf_model hf;
  plan::job j;
  plan::cluster c;
  std::string name;
};

/// The model, the job and the cluster as `plan` and `choose` take them: a preset (its job's
/// settings replaced by the keywords), or a model and a cluster with a job file or dict (or
/// torchtitan's TOML, which takes `devices` for its -1 shard degree; `devices` is then 0).
planned inputs_of(const std::optional<py::object>& model, const std::optional<py::object>& cluster,
                  const std::optional<py::object>& job, const std::optional<std::string>& preset,
                  long long& devices, const py::kwargs& flags) {
  planned out;
  if (preset) {
    if (model || cluster || job)
      throw config_error(
          "weft: plan: a preset is its model, job and cluster; give it alone "
          "(with job settings as keywords to change its job)");
    const fs::path folder = preset_folder(*preset);
    if (folder == fs::path(WEFT_PRESETS_DIR) / *preset)  // a built-in, not one's own
      plan::refuse_scenario_preset(*preset, (folder / "config.json").string());
    plan::preset p = plan::read_preset(folder);
    warn_all(p.warnings);
    out.hf = std::move(p.model);
    out.j = p.job.spec;
    if (flags.size() > 0)  // the preset's job with the keywords on top
      out.j = job_of(read_text(folder / "job.json"), flags);
    out.c = p.cluster.spec;
    out.name = *preset;
  } else {
    if (!model) throw config_error("weft: plan: give model= (a config.json) or preset=");
    if (!cluster)
      throw config_error(
          "weft: plan: give cluster= (a built-in name such as 'h100-sxm', a "
          "cluster file or its dict)");
    out.hf = model_of(*model);
    warn_all(out.hf.warnings);
    if (std::optional<plan::job> t = torchtitan_job_of(job, out.hf.model, devices, flags)) {
      out.j = *t;
      devices = 0;  // torchtitan's job has taken them
    } else {
      out.j = job_of(job ? std::optional<std::string>(job_text(*job)) : std::nullopt, flags);
    }
    if (py::isinstance<py::str>(*cluster)) {
      out.name = py::cast<std::string>(*cluster);
      if (const plan::cluster* builtin = plan::find_cluster(out.name)) out.c = *builtin;
    }
    if (out.c.name.empty()) {
      const std::string file = out.name.empty() ? "cluster" : out.name;
      plan::cluster_file f = plan::read_cluster(text_of(*cluster, "cluster"), file);
      warn_all(f.warnings);
      out.c = f.spec;
      if (out.name.empty()) out.name = "cluster";
    }
  }
  out.c.name = out.name;
  if (const auto w = plan::sequence_warning(out.hf, out.j.seq)) warn_all({*w});
  if (const auto w = plan::window_warning(out.hf, out.j.seq)) warn_all({*w});
  return out;
}

py::object plan(const std::optional<py::object>& model, const std::optional<py::object>& cluster,
                const std::optional<py::object>& job, const std::optional<std::string>& preset,
                double search_budget_s, std::uint64_t evaluations, std::uint64_t seed,
                long long devices, const py::kwargs& flags) {
  if (devices < 0) throw config_error("weft: plan: devices must be a whole number of 1 or more");
  if (!(search_budget_s >= 0) || search_budget_s > 86400)
    throw config_error("weft: plan: search_budget_s must be in [0, 86400] seconds");
  planned in = inputs_of(model, cluster, job, preset, devices, flags);
  plan::hf_model& hf = in.hf;
  plan::job& j = in.j;
  const plan::cluster& c = in.c;
  const std::string& name = in.name;
  if (devices > 0) j = plan::with_world_size(j, devices);
  plan::plan_report r;
  {
    py::gil_scoped_release free;  // a long plan leaves the interpreter to other threads
    r = plan::make_report(hf.model, j, c, name,
                          {.search_budget_s = search_budget_s,
                           .evaluations = evaluations,
                           .seed = seed,
                           .runtime = plan::runs_on::any,
                           .progress = {}});
  }
  return to_python(plan::to_json(r));
}

/// Whether keyword arguments `flags` give the setting of job-file key `key` (weft's name in
/// dashes), under either of its names.
bool given_keyword(const py::kwargs& flags, std::string_view key) {
  for (const auto& item : flags) {
    std::string k = py::cast<std::string>(item.first);
    std::replace(k.begin(), k.end(), '_', '-');
    for (const auto& [mine, megatron] : plan::megatron_keys)
      if (k == megatron) k = std::string(mine);
    if (k == key) return true;
  }
  return false;
}

py::object choose(const std::optional<py::object>& model, const std::optional<py::object>& cluster,
                  const std::optional<py::object>& job, const std::optional<std::string>& preset,
                  long long devices, double budget_s, int top, const std::string& runtime,
                  const py::kwargs& flags) {
  if (devices < 0) throw config_error("weft: choose: devices must be a whole number of 1 or more");
  const auto r = std::find(plan::runs_on_names.begin(), plan::runs_on_names.end(), runtime);
  if (r == plan::runs_on_names.end())
    throw config_error("weft: choose: runtime must be any, megatron or torchtitan, got '" +
                       excerpt(runtime) + "'");
  const auto runs = static_cast<plan::runs_on>(r - plan::runs_on_names.begin());
  planned in = inputs_of(model, cluster, job, preset, devices, flags);
  // Megatron's code runs the job: its transfers priced as Megatron issues them, unless said.
  if (runs == plan::runs_on::megatron && !given_keyword(flags, "pipeline-runtime"))
    in.j.runtime = plan::pipeline_runtime::megatron;
  plan::configuration_report report;
  {
    py::gil_scoped_release free;  // the search leaves the interpreter to other threads
    report.result = plan::search_configurations(
        in.hf.model, in.j, in.c,
        {.budget_s = budget_s,
         .top = top,
         .space = plan::kept_sizes(
             in.j, [&](std::string_view key) { return given_keyword(flags, key); }, devices,
             runs)});
  }
  report.tokens_per_step = static_cast<double>(in.j.batch()) * in.j.seq;
  return to_python(plan::to_json(report));
}

}  // namespace

void bind_planning(py::module_& m) {
  m.def("plan", &plan, py::kw_only(), py::arg("model") = py::none(),
        py::arg("cluster") = py::none(), py::arg("job") = py::none(),
        py::arg("preset") = py::none(), py::arg("search_budget_s") = 0.0,
        py::arg("evaluations") = 0, py::arg("seed") = 1, py::arg("devices") = 0,
        "plans a training job as `weft plan --json` does and returns the same dict: step_s, "
        "tokens_per_s, mfu, memory_per_stage_bytes, breakdown_per_rank, every schedule's step, "
        "the best plan and its flags. model: a config.json, a snapshot folder holding one, or "
        "its dict; cluster: a built-in name ('a100-80g', 'h100-sxm', 'h800', 'ascend-910b'), a "
        "cluster file or its dict; job settings as keywords named as weft plan's flags (tp=8, "
        "pp=4, micro_batch_size=1, seq_length=4096, recompute='selective', schedule='zb-v', "
        "...) or job= a job file or dict, or torchtitan's FILE.toml; or preset= a preset's "
        "name or folder. devices= Megatron's world size (dp what tp x pp x cp leave; the "
        "devices a torchtitan job's -1 shard degree takes). The GIL is released while it "
        "plans.");
  m.def("choose", &choose, py::kw_only(), py::arg("model") = py::none(),
        py::arg("cluster") = py::none(), py::arg("job") = py::none(),
        py::arg("preset") = py::none(), py::arg("devices") = 0, py::arg("budget_s") = 8.0,
        py::arg("top") = 5, py::arg("runtime") = "any",
        "chooses the configuration as `weft plan --search --json` does and returns the same "
        "dict: of every tp x pp x dp x cp (ep, the experts' tp), micro-batch size, "
        "recomputation, sharding, schedule, chunks and layout, the `top` fastest that fit "
        "('top': sizes, step_s, mfu, peak_memory_bytes, runtime, weft_flags, "
        "megatron_arguments), with the counts and whether the search completed within "
        "budget_s seconds. The inputs as plan() takes them; the sizes given as keywords (tp=, "
        "pp=, cp=, ep=, expert_tensor_parallel_size=, micro_batch_size=, recompute=, "
        "recompute_method=, recompute_num_layers=, the sharding) are kept, a job file's only "
        "count the devices. devices= the devices to split (the job's tp x pp x dp x cp "
        "otherwise; with it, global_batch_size must be given); runtime= 'any', 'megatron' or "
        "'torchtitan': only what that code runs. An empty 'top': nothing that fits found in "
        "the budget. The GIL is released while it searches.");
}

}  // namespace weft::python
