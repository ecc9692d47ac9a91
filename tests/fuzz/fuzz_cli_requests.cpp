// libFuzzer harness: every request the command line accepts is one the tool can carry out. The
// input is the arguments, separated by NUL bytes (as for fuzz_cli); a request the parser accepts
// for a pipeline (generate, check, simulate, compare, run) must build, through the tool's own
// translation (pipeline_request.hpp), a schedule the checker proves legal, or be refused with a
// `config_error` naming why (exit 2) — never an illegal schedule from options that were accepted,
// nor another exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/schedule/verify.hpp>
#include "cli.hpp"
#include "fuzz_input.hpp"
#include "pipeline_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = weft::fuzz::arguments(data, size);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const weft::cli::parsed p = weft::cli::parse(static_cast<int>(argv.size()), argv.data());
  if (!p.run) return 0;
  const weft::cli::request& q = p.q;
  const bool pipeline = q.command == "generate" || q.command == "check" ||
                        q.command == "simulate" || q.command == "compare" || q.command == "run";
  if (!pipeline || !q.preset.empty() || !q.schedule_file.empty()) return 0;
  (void)q.degree();  // read as the range check read it
  std::vector<std::string> names = q.schedules;
  if (!q.schedule.empty()) names.push_back(q.schedule);
  // Large pipelines take their time to build (docs/limits.md); the rules are the same at any size.
  const double ops = static_cast<double>(q.pp) * q.micro * q.layers * q.chunks *
                     (q.moe || q.shared_expert || q.fb_overlap ? 5 : 1) * q.multi_data *
                     (q.degree() == 0 ? 1 : q.degree());
  if (ops > 20'000) return 0;
  for (const std::string& name : names) {
    weft::schedule s;
    try {
      s = weft::cli::schedule_of(q, name, nullptr);
    } catch (const weft::config_error&) {
      continue;  // refused, by name: exit 2
    }
    if (!weft::check(s, {.max_violations = 1}).ok()) __builtin_trap();
  }
  return 0;
}
