// How the subcommands report: a step's metrics as text or JSON, its pictures, a checker's report;
// one format for every command that prints them.
#pragma once

#include <concepts>
#include <cstddef>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include <weft/io/check_report.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/metrics_json.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/metrics.hpp>
#include "commands/common.hpp"

namespace weft::cli {

using json = nlohmann::ordered_json;

/// A time with its unit: "12.5 units", "3.21 ms".
template <time_type T>
std::string show(T t) {
  std::ostringstream os;
  if constexpr (std::same_as<T, seconds>)
    os << t.count() * 1e3 << " ms";
  else
    os << t.count() << " units";
  return os.str();
}

template <time_type T>
void print_text(std::ostream& os, const std::string& name, const basic_step_metrics<T>& m) {
  os << name << ": makespan " << show(m.makespan) << ", bubble " << 100 * m.bubble_ratio
     << "%, exposed comm " << show(m.exposed_comm) << " (warm-up " << show(m.exposed_by_phase[0])
     << ", steady " << show(m.exposed_by_phase[1]) << ", cool-down " << show(m.exposed_by_phase[2])
     << ")\n";
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const auto& x = m.ranks[r];
    os << "  rank " << r << ": busy " << show(x.busy) << ", idle " << show(x.idle)
       << ", exposed comm " << show(x.exposed_comm) << ", peak activations " << x.peak_activations
       << "\n";
  }
}

/// --trace and --svg.
template <time_type T>
void write_pictures(const std::string& trace, const std::string& svg, const program& prog,
                    const basic_timeline<T>& time, const std::string& title) {
  if (!trace.empty()) {
    std::ofstream out = open_for_writing(trace);
    if constexpr (std::same_as<T, seconds>)
      write_chrome_trace(out, prog, time);
    else
      write_chrome_trace(out, prog, time, trace_unit);
  }
  if (!svg.empty()) {
    std::ofstream out = open_for_writing(svg);
    write_svg(out, prog, time, {.title = title});
  }
}

/// A picture's title says when overlap was priced (its veils show where).
inline std::string priced(const contention_facts& c) {
  return c.active() ? ", overlap priced (veiled where slowed)" : "";
}

/// The checker's options for the tool: it collects many, and the report shows
/// `violations_shown` (io/check_report.hpp).
inline constexpr weft::check_options tool_check = report_check_options;

/// Prints the checker's report, the first `violations_shown` violations then how many more (and
/// `note`, what else the user should know of a legal schedule); exit 0 legal, 1 illegal.
int report_check(bool as_json, const report& r, const std::optional<std::string>& note = {});

/// A PyTorch schedule CSV, or `config_error` naming the file and what is wrong with it.
schedule read_csv_file(const std::string& file);

}  // namespace weft::cli
