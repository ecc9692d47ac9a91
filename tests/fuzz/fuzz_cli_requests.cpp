// libFuzzer harness: every request the command line accepts is one the tool can carry out. The
// input is the arguments, separated by NUL bytes (as for fuzz_cli); a request the parser accepts
// for a pipeline (generate, check, simulate, compare, run) must build, through the tool's own
// translation (pipeline_request.hpp), a schedule the checker proves legal, or be refused with a
// `config_error` naming why (exit 2) — never an illegal schedule from options that were accepted,
// nor another exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/schedule/verify.hpp>
#include "cli.hpp"
#include "fuzz_input.hpp"
#include "pipeline_request.hpp"

namespace {

/// The schedules a pipeline subcommand would build, and where for; none for the others and for
/// a preset or a file, which stand for the pipeline.
struct wanted {
  const weft::cli::pipeline_args* pipeline = nullptr;
  std::vector<std::string> names;
  weft::cli::pipeline_use use;
};

wanted pipeline_of(const weft::cli::command& c) {
  using namespace weft::cli;
  wanted w;
  if (const auto* o = std::get_if<generate_args>(&c))
    w = {&o->pipeline, {o->pipeline.schedule}, {.csv = o->format == listing::csv}};
  else if (const auto* o = std::get_if<check_args>(&c))
    w = {&o->pipeline, {o->pipeline.schedule}, {}};
  else if (const auto* o = std::get_if<simulate_args>(&c); o && o->cost.preset == preset_name::none)
    w = {&o->pipeline, {o->pipeline.schedule}, {}};
  else if (const auto* o = std::get_if<compare_args>(&c); o && o->cost.preset == preset_name::none)
    w = {&o->pipeline, o->schedules, {}};
  else if (const auto* o = std::get_if<run_args>(&c); o && o->schedule_file.empty())
    w = {&o->pipeline, {o->pipeline.schedule}, {.demo_model = true, .ep = o->ep}};
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = weft::fuzz::arguments(data, size);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const weft::cli::parsed p = weft::cli::parse(static_cast<int>(argv.size()), argv.data());
  if (!p.run) return 0;
  const wanted w = pipeline_of(p.what);
  if (!w.pipeline) return 0;
  const weft::cli::pipeline_args& q = *w.pipeline;
  // Large pipelines take their time to build (docs/limits.md); the rules are the same at any size.
  const double ops = static_cast<double>(q.pp) * q.micro * q.layers * q.chunks *
                     (q.sub_stages() ? 5 : 1) * q.multi_data *
                     (q.ampipe_degree == 0 ? 1 : q.ampipe_degree);
  if (ops > 20'000) return 0;
  for (const std::string& name : w.names) {
    weft::schedule s;
    try {
      s = weft::cli::schedule_of(q, name, w.use, nullptr);
    } catch (const weft::config_error&) {
      continue;  // refused, by name: exit 2
    }
    if (!weft::check(s, {.max_violations = 1}).ok()) __builtin_trap();
  }
  return 0;
}
