// The pictures: the Chrome trace and the SVG parse, and say what the timeline says.
#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <weft/generators/dualpipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/io/chrome_trace.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/simulate.hpp>

using namespace weft;

namespace {
struct sample {
  program prog = lower(dualpipev(
      {.ranks = 2, .micro = 4, .stages = stage_set::moe(), .overlap = overlap_options::all()}));
  // One unit of the formula costs a millisecond.
  timeline time =
      simulate(prog, unit_cost_model::pipeline({.F = 2, .B = 4, .W = 2, .P2P = 0.2, .A2A = 0.5})
                         .at(seconds(1e-3)));
};
}  // namespace

TEST_CASE("Chrome trace: a process per rank, a thread per stream, an event per op at its time") {
  const sample s;
  std::ostringstream out;
  write_chrome_trace(out, s.prog, s.time);
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
    // Microseconds, as the format counts.
    CHECK(e.at("ts").get<double>() == doctest::Approx(s.time.start[i].count() * 1e6));
    CHECK(e.at("dur").get<double>() == doctest::Approx(s.time.duration_of(i).count() * 1e6));
    CHECK(e.at("name").get<std::string>() == to_string(s.prog.at(i)));
  }
  CHECK(processes == 2);
  CHECK(ops == static_cast<int>(s.prog.size()));
  int used_streams = 0;
  for (std::uint32_t q = 0; q + 1 < s.prog.queue_begin.size(); ++q)
    used_streams += s.prog.queue_begin[q] != s.prog.queue_begin[q + 1];
  CHECK(threads == used_streams);
}

TEST_CASE("Chrome trace: full precision, so ops of a long step never appear to overlap") {
  // 60000 micro-batches: times up to ~1.8e8 microseconds, where six significant digits (the
  // stream default) round starts onto the op before. The events are one per line; the last
  // thousands, where times are largest, are parsed and checked.
  const program prog = lower(one_f_one_b({.ranks = 1, .micro = 60000}));
  const unit_timeline t = simulate(prog, unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}));
  std::ostringstream out;
  write_chrome_trace(out, prog, t, seconds(1e-3));
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == prog.size() + 4);  // the header, a process, a thread, ops, the end
  double end = -1;
  for (std::size_t i = lines.size() - 4000; i + 1 < lines.size(); ++i) {
    std::string text = lines[i];
    if (text.back() == ',') text.pop_back();
    const auto e = nlohmann::json::parse(text);
    const double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
    if (ts < end) FAIL("an op starts before the one before it ends: " << e);
    end = ts + dur;
  }
  CHECK(end == doctest::Approx(60000 * 3 * 1e3));
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
  const double scale = style.width / s.time.makespan.count();
  const double left = svg.child("line").attribute("x1").as_double();  // the time axis
  int ops = 0;
  for (const pugi::xml_node g : svg.children("g")) {
    const auto i = static_cast<std::uint32_t>(g.attribute("data-op").as_uint());
    const pugi::xml_node rect = g.child("rect");
    CHECK(rect.attribute("x").as_double() ==
          doctest::Approx(left + s.time.start[i].count() * scale).epsilon(1e-4));
    CHECK(rect.attribute("width").as_double() ==
          doctest::Approx(s.time.duration_of(i).count() * scale).epsilon(1e-4));
    CHECK(std::string(g.child("title").child_value()).find(to_string(s.prog.at(i))) == 0);
    ++ops;
  }
  CHECK(ops == static_cast<int>(s.prog.size()));
  // The axis in milliseconds, said once at its end, with round ticks: 0, then a step of 1, 2,
  // 2.5 or 5 times a power of ten, at least four of them, the last within the makespan.
  std::vector<std::string> texts;
  for (const pugi::xml_node t : svg.children("text")) texts.emplace_back(t.child_value());
  REQUIRE(texts.size() >= 2);
  CHECK(texts.back() == "ms");
  CHECK(std::count(texts.begin(), texts.end(), "ms") == 1);
  std::vector<double> ticks;
  for (std::size_t k = texts.size() - 1; k-- > 0;) {
    double v = 0;
    const auto [end, ec] = std::from_chars(texts[k].data(), texts[k].data() + texts[k].size(), v);
    if (ec != std::errc{} || end != texts[k].data() + texts[k].size()) break;
    ticks.insert(ticks.begin(), v);
  }
  REQUIRE(ticks.size() >= 5);
  CHECK(ticks.front() == 0);
  const double step = ticks[1];
  const double decade = std::pow(10.0, std::floor(std::log10(step)));
  const double mantissa = step / decade;
  CHECK((mantissa == doctest::Approx(1) || mantissa == doctest::Approx(2) ||
         mantissa == doctest::Approx(2.5) || mantissa == doctest::Approx(5)));
  for (std::size_t k = 0; k < ticks.size(); ++k) CHECK(ticks[k] == doctest::Approx(k * step));
  CHECK(ticks.back() <= s.time.makespan.count() * 1e3);
  CHECK(ticks.back() + step > s.time.makespan.count() * 1e3);
  // Lanes are named by role: the MoE all-to-alls and the pipeline's transfers.
  const std::string text = out.str();
  CHECK(text.find("rank 0 compute<") != std::string::npos);
  CHECK(text.find("rank 0 all-to-all") != std::string::npos);
  CHECK(text.find("rank 0 p2p send") != std::string::npos);
  CHECK(text.find("rank 1 p2p recv") != std::string::npos);
  CHECK(text.find(">rank 0 comm ") == std::string::npos);
}

TEST_CASE("SVG axis: round steps for any span") {
  CHECK(detail::tick_step(72.3455) == 10);  // 0, 10, ... 70 ms
  CHECK(detail::tick_step(49) == 10);
  CHECK(detail::tick_step(12) == 2.5);
  CHECK(detail::tick_step(1889) == 250);
  CHECK(detail::tick_step(0.004) == doctest::Approx(0.001));
  CHECK(detail::tick_label(0.1 * 3) == "0.3");
  CHECK(detail::tick_label(70) == "70");
}

TEST_CASE("pictures of unit-free time: the axis counts units, a trace needs their length") {
  const sample s;
  const unit_timeline t =
      simulate(s.prog, unit_cost_model::pipeline({.F = 2, .B = 4, .W = 2, .P2P = 0.2, .A2A = 0.5}));
  std::ostringstream svg_out;
  write_svg(svg_out, s.prog, t);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(svg_out.str().c_str()));
  std::vector<std::string> texts;
  for (const pugi::xml_node x : doc.child("svg").children("text"))
    texts.emplace_back(x.child_value());
  REQUIRE(texts.size() >= 2);
  CHECK(texts.back() == "units");
  const double last = std::stod(texts[texts.size() - 2]);
  CHECK(last <= t.makespan.count());
  CHECK(last + detail::tick_step(t.makespan.count()) > t.makespan.count());
  // The same step as the millisecond one above: each unit stands for 1 ms.
  std::ostringstream a, b;
  write_chrome_trace(a, s.prog, t, seconds(1e-3));
  write_chrome_trace(b, s.prog, s.time);
  const auto ja = nlohmann::json::parse(a.str()), jb = nlohmann::json::parse(b.str());
  REQUIRE(ja.at("traceEvents").size() == jb.at("traceEvents").size());
  for (std::size_t k = 0; k < ja.at("traceEvents").size(); ++k)
    if (ja["traceEvents"][k].at("ph") == "X")
      CHECK(ja["traceEvents"][k].at("ts").get<double>() ==
            doctest::Approx(jb["traceEvents"][k].at("ts").get<double>()));
}

TEST_CASE("SVG comparison: two timelines of one program, one above the other, one time scale") {
  const sample s;
  const timeline slower =
      simulate(s.prog, unit_cost_model::pipeline({.F = 4, .B = 8, .W = 4, .P2P = 0.4, .A2A = 1.0})
                           .at(seconds(1e-3)));
  std::ostringstream out;
  svg_style style;
  style.width = 1000;
  write_svg_compare(out, s.prog, s.time, "measured", slower, "predicted", style);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(out.str().c_str()));
  const pugi::xml_node svg = doc.child("svg");
  const double left = svg.child("line").attribute("x1").as_double();
  const double scale = 1000 / slower.makespan.count();  // the longer of the two spans the width
  std::vector<double> top_y(s.prog.size(), -1);
  int ops = 0;
  for (const pugi::xml_node g : svg.children("g")) {
    const auto i = static_cast<std::uint32_t>(g.attribute("data-op").as_uint());
    const pugi::xml_node rect = g.child("rect");
    const bool first = top_y[i] < 0;
    const timeline& t = first ? s.time : slower;
    CHECK(rect.attribute("x").as_double() ==
          doctest::Approx(left + t.start[i].count() * scale).epsilon(1e-4));
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

TEST_CASE(
    "SVG under contention: a veil over each stretch an op ran slowed, the darker the slower") {
  const sample s;
  timeline t = s.time;
  REQUIRE(t.slowed.empty());
  std::ostringstream plain;
  write_svg(plain, s.prog, t, svg_style{.width = 1000, .lane_height = 20, .title = ""});
  CHECK(plain.str().find("class=\"slowed\"") == std::string::npos);
  // Op 0 at a quarter of full rate over the second half of its run.
  const seconds mid = t.start[0] + t.duration_of(0) / 2;
  t.slowed.push_back({0, mid, t.finish[0], 0.25});
  std::ostringstream out;
  write_svg(out, s.prog, t, svg_style{.width = 1000, .lane_height = 20, .title = ""});
  pugi::xml_document doc;
  REQUIRE(doc.load_string(out.str().c_str()));
  const pugi::xml_node veil = doc.child("svg").find_child_by_attribute("rect", "class", "slowed");
  REQUIRE(veil);
  const pugi::xml_node box =
      doc.child("svg").find_child_by_attribute("g", "data-op", "0").child("rect");
  const double scale = 1000 / t.makespan.count();
  CHECK(veil.attribute("x").as_double() ==
        doctest::Approx(box.attribute("x").as_double() + (mid - t.start[0]).count() * scale));
  CHECK(veil.attribute("width").as_double() ==
        doctest::Approx(box.attribute("width").as_double() / 2));
  CHECK(veil.attribute("y").as_double() == box.attribute("y").as_double());
  CHECK(veil.attribute("fill-opacity").as_double() == doctest::Approx(0.5 * 0.75));
  CHECK(std::string(veil.child("title").child_value()) == "at 25% of full rate");
}
