// The pictures: the Chrome trace and the SVG parse, and say what the timeline says.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <weft/io/timeline.hpp>
#include <weft/schedules/dualpipe.hpp>
#include <weft/sim/program.hpp>
#include <weft/sim/simulate.hpp>

using namespace weft;

namespace {
struct sample {
  program prog = lower(dualpipev(
      {.ranks = 2, .micro = 4, .stages = stage_set::moe(), .overlap = overlap_options::all()}));
  timeline time = simulate(prog, cost_model::pipeline(2, 4, 2, -1, 0.2, 0.5));
};
}  // namespace

TEST_CASE("Chrome trace: a process per rank, a thread per stream, an event per op at its time") {
  const sample s;
  std::ostringstream out;
  write_chrome_trace(out, s.prog, s.time, 1000.0);
  const auto json = nlohmann::json::parse(out.str());
  int processes = 0, threads = 0, ops = 0;
  for (const auto& e : json.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      (e.at("name") == "process_name" ? processes : threads)++;
      continue;
    }
    REQUIRE(ph == "X");
    ++ops;
    const auto i = static_cast<std::uint32_t>(ops - 1);  // events come in program order
    CHECK(e.at("pid").get<int>() == s.prog.rank[i]);
    CHECK(e.at("tid").get<int>() == s.prog.stream[i]);
    CHECK(e.at("ts").get<double>() == doctest::Approx(s.time.start[i] * 1000.0));
    CHECK(e.at("dur").get<double>() ==
          doctest::Approx((s.time.finish[i] - s.time.start[i]) * 1000.0));
    CHECK(e.at("name").get<std::string>() == to_string(s.prog.at(i)));
  }
  CHECK(processes == 2);
  CHECK(ops == static_cast<int>(s.prog.size()));
  int used_streams = 0;
  for (std::uint32_t q = 0; q + 1 < s.prog.queue_begin.size(); ++q)
    used_streams += s.prog.queue_begin[q] != s.prog.queue_begin[q + 1];
  CHECK(threads == used_streams);
}

TEST_CASE("SVG timeline: a rectangle per op, placed by its start and length") {
  const sample s;
  std::ostringstream out;
  const svg_style style{.width = 1000, .lane_height = 20, .title = "DualPipeV"};
  write_svg(out, s.prog, s.time, style);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(out.str().c_str()));
  const pugi::xml_node svg = doc.child("svg");
  REQUIRE(svg);
  const double scale = style.width / s.time.makespan;
  const double left = svg.child("line").attribute("x1").as_double();  // the time axis
  int ops = 0;
  for (const pugi::xml_node g : svg.children("g")) {
    const auto i = static_cast<std::uint32_t>(g.attribute("data-op").as_uint());
    const pugi::xml_node rect = g.child("rect");
    CHECK(rect.attribute("x").as_double() ==
          doctest::Approx(left + s.time.start[i] * scale).epsilon(1e-4));
    CHECK(rect.attribute("width").as_double() ==
          doctest::Approx((s.time.finish[i] - s.time.start[i]) * scale).epsilon(1e-4));
    CHECK(std::string(g.child("title").child_value()).find(to_string(s.prog.at(i))) == 0);
    ++ops;
  }
  CHECK(ops == static_cast<int>(s.prog.size()));
  // The axis ends at the makespan.
  std::string last_tick;
  for (const pugi::xml_node t : svg.children("text")) last_tick = t.child_value();
  CHECK(std::stod(last_tick) == doctest::Approx(s.time.makespan));
}

TEST_CASE("SVG comparison: two timelines of one program, one above the other, one time scale") {
  const sample s;
  const timeline slower = simulate(s.prog, cost_model::pipeline(4, 8, 4, -1, 0.4, 1.0));
  std::ostringstream out;
  svg_style style;
  style.width = 1000;
  write_svg_compare(out, s.prog, s.time, "measured", slower, "predicted", style);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(out.str().c_str()));
  const pugi::xml_node svg = doc.child("svg");
  const double left = svg.child("line").attribute("x1").as_double();
  const double scale = 1000 / slower.makespan;  // the longer of the two spans the width
  std::vector<double> top_y(s.prog.size(), -1);
  int ops = 0;
  for (const pugi::xml_node g : svg.children("g")) {
    const auto i = static_cast<std::uint32_t>(g.attribute("data-op").as_uint());
    const pugi::xml_node rect = g.child("rect");
    const bool first = top_y[i] < 0;
    const timeline& t = first ? s.time : slower;
    CHECK(rect.attribute("x").as_double() ==
          doctest::Approx(left + t.start[i] * scale).epsilon(1e-4));
    if (first)
      top_y[i] = rect.attribute("y").as_double();
    else
      CHECK(rect.attribute("y").as_double() > top_y[i]);  // the second picture is below
    ++ops;
  }
  CHECK(ops == 2 * static_cast<int>(s.prog.size()));
  bool measured = false, predicted = false;
  for (const pugi::xml_node t : svg.children("text")) {
    measured = measured || std::string(t.child_value()) == "measured";
    predicted = predicted || std::string(t.child_value()) == "predicted";
  }
  CHECK((measured && predicted));
}
