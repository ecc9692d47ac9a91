// A step as Chrome trace event JSON (one process per rank, one thread per stream; opens in
// Perfetto and chrome://tracing). Written with nlohmann-json: strings escaped, numbers at full
// precision (so ops of a 60k-micro-batch step never appear to overlap), never a NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/timeline.hpp>

namespace weft {

namespace detail {
template <time_type T>
void chrome_trace(std::ostream& out, const program& p, const basic_timeline<T>& t,
                  double us_per_count) {
  using json = nlohmann::ordered_json;
  // One event per line, each dumped as it is made: a trace of millions of ops never builds
  // one document in memory.
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const json& event) {
    out << (first ? "" : ",\n") << event.dump();
    first = false;
  };
  for (int r = 0; r < p.ranks(); ++r) {
    emit({{"name", "process_name"},
          {"ph", "M"},
          {"pid", r},
          {"args", {{"name", "rank " + std::to_string(r)}}}});
    std::vector<int> used;
    for (int st = 0; st < streams_per_rank; ++st) {
      const std::uint32_t q = program::queue_of(r, st);
      if (p.queue_begin[q] != p.queue_begin[q + 1]) used.push_back(st);
    }
    const std::vector<std::string> names = stream_names(p, r, used);
    for (std::size_t k = 0; k < used.size(); ++k)
      emit({{"name", "thread_name"},
            {"ph", "M"},
            {"pid", r},
            {"tid", used[k]},
            {"args", {{"name", names[k]}}}});
  }
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (!t.ran(i)) continue;
    const double ts = t.start[i].count() * us_per_count;
    const double dur = t.duration_of(i).count() * us_per_count;
    if (!std::isfinite(ts) || !std::isfinite(dur))
      throw config_error("weft: trace: " + to_string(p.at(i)) + " has no finite time");
    const op& o = p.at(i);
    emit({{"name", to_string(o)},
          {"cat", std::string(name_of(o.k))},
          {"ph", "X"},
          {"ts", ts},
          {"dur", dur},
          {"pid", p.rank[i]},
          {"tid", static_cast<int>(p.stream[i])},
          {"args",
           {{"mb", o.mb},
            {"chunk", o.chunk},
            {"layer", o.layer},
            {"phase", std::string(name_of(o.ph))}}}});
  }
  out << "\n]}\n";
}
}  // namespace detail

/// Writes the Chrome trace event format (microseconds, as the format counts).
inline void write_chrome_trace(std::ostream& out, const program& p, const timeline& t) {
  detail::chrome_trace(out, p, t, 1e6);
}
/// The length a unit of schedule time is drawn with in a Chrome trace, where the format wants
/// times.
inline constexpr seconds trace_unit{1e-3};

/// A unit-free timeline, each unit standing for `per_unit`.
inline void write_chrome_trace(std::ostream& out, const program& p, const unit_timeline& t,
                               seconds per_unit) {
  detail::chrome_trace(out, p, t, per_unit.count() * 1e6);
}

}  // namespace weft
