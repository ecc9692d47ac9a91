// Pictures of a simulated step: an SVG timeline in the style of MindSpeed's feature notes' figures
// (rank rows, a lane per stream, colour per stage kind, phase and micro-batch on each op, a time
// axis). The Chrome trace is in chrome_trace.hpp.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <weft/schedule/program.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/timeline.hpp>

namespace weft {

namespace detail {
/// A stream by role, from what runs on it: "compute" (and "compute 2" for an overlapped pair's
/// second lane), "all-to-all", "p2p send", "p2p recv", "all-reduce", "TP collectives", or the
/// roles joined by " + " where one lane carries several; a lane with nothing on it by number.
inline std::string stream_name(const program& p, int rank, int stream) {
  if (stream < lanes_per_class)
    return stream == 0 ? "compute" : "compute " + std::to_string(stream + 1);
  const std::uint32_t q = program::queue_of(rank, stream);
  bool a2a = false, send_ = false, recv_ = false, reduce = false, tp = false;
  for (std::uint32_t k = p.queue_begin[q]; k < p.queue_begin[q + 1]; ++k) {
    const kind x = p.at(p.queue[k]).k;
    a2a = a2a || x == kind::dispatch || x == kind::combine;
    send_ = send_ || x == kind::send;
    recv_ = recv_ || x == kind::recv;
    reduce = reduce || x == kind::all_reduce;
    tp = tp || x == kind::all_gather || x == kind::reduce_scatter;
  }
  std::string name;
  const auto add = [&](bool on, const char* role) {
    if (on) name += (name.empty() ? "" : " + ") + std::string(role);
  };
  add(a2a, "all-to-all");
  add(send_, "p2p send");
  add(recv_, "p2p recv");
  add(reduce, "all-reduce");
  add(tp, "TP collectives");
  return name.empty() ? "comm " + std::to_string(stream - lanes_per_class) : name;
}
/// Two streams of one rank with one role get their lane number too ("all-to-all (lane 4)").
inline std::vector<std::string> stream_names(const program& p, int rank,
                                             const std::vector<int>& streams) {
  std::vector<std::string> names;
  for (const int s : streams) names.push_back(stream_name(p, rank, s));
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = 0; j < names.size(); ++j)
      if (i != j && names[i] == names[j] && streams[i] >= lanes_per_class) {
        names[i] += " (lane " + std::to_string(streams[i] - lanes_per_class) + ")";
        break;
      }
  return names;
}
/// Round ticks for an axis of `span` counts: a step of 1, 2, 2.5 or 5 times a power of ten, the
/// largest that leaves at least four ticks after 0.
inline double tick_step(double span) {
  if (!(span > 0)) return 1;
  const double decade = std::pow(10.0, std::floor(std::log10(span)));
  double best = decade / 100;
  for (const double d : {decade / 10, decade})
    for (const double m : {1.0, 2.0, 2.5, 5.0})
      if (span / (m * d) >= 4 && m * d > best) best = m * d;
  return best;
}
/// A tick's label: the shortest text that reads back as its value (no 7.23455 from rounding).
inline std::string tick_label(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::round(v * 1e9) / 1e9);
  return std::string(buf, r.ptr);
}
/// Colour per stage kind, close to the MindSpeed notes' figures.
inline const char* colour_of(kind k) {
  switch (k) {
    case kind::block:
      return "#8fb8de";
    case kind::attn:
      return "#f2b36f";
    case kind::dispatch:
      return "#a1d99b";
    case kind::mlp:
      return "#9ecae1";
    case kind::combine:
      return "#74c476";
    case kind::shared:
      return "#c6a5d6";
    case kind::send:
    case kind::recv:
      return "#bdbdbd";
    default:
      return "#fdd0a2";
  }
}
/// "F3", "B3", "W3", "I3" (PyTorch's letters for dX/dW), and the chunk when there are several.
inline std::string short_label(const op& o, bool chunks, bool splits) {
  const char letter = o.ph == phase::F    ? 'F'
                      : o.ph == phase::B  ? 'B'
                      : o.ph == phase::dX ? 'I'
                                          : 'W';
  std::string s(1, letter);
  s += std::to_string(o.mb);
  if (chunks) s.insert(0, std::to_string(o.chunk));
  if (splits) {  // AMPipe chunk (or pipe-experts piece); += each: g++ 12's false -Wrestrict
    s += '.';
    s += std::to_string(o.split);
  }
  return s;
}
inline std::string xml_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}
}  // namespace detail

template <time_type T>
struct basic_svg_style {
  double width = 1200;      ///< pixels for the whole step
  double lane_height = 18;  ///< pixels per stream lane
  std::string title;
  /// The time the width stands for; 0: the timeline's makespan. Pictures drawn to compare
  /// share one.
  T time_span{0};
};
using svg_style = basic_svg_style<seconds>;
using unit_svg_style = basic_svg_style<units>;

namespace detail {
/// Draws the lanes, ops and time axis of a timeline from `top` down; returns the height used.
/// The axis's unit and how many of it a count of T is: seconds read as s, ms or us.
template <time_type T>
std::pair<const char*, double> axis_unit(T span) {
  if constexpr (std::same_as<T, units>) {
    return {"units", 1.0};
  } else {
    if (span >= seconds(1)) return {"s", 1.0};
    if (span >= seconds(1e-3)) return {"ms", 1e3};
    return {"us", 1e6};
  }
}

template <time_type T>
double svg_timeline(std::ostream& out, const program& p, const basic_timeline<T>& t,
                    const basic_svg_style<T>& st, double top, const std::string& caption) {
  const double left = 110, gap = 8;
  const T span = st.time_span > T{0} ? st.time_span : t.makespan;
  const double scale = span > T{0} ? st.width / span.count() : 1;
  const auto [unit, per_count] = axis_unit(span);
  const bool chunks = p.source.model.chunks() > p.ranks();
  if (!caption.empty()) {
    out << "<text x=\"4\" y=\"" << top + 12 << "\" font-size=\"12\">" << xml_escape(caption)
        << "</text>\n";
    top += 18;
  }
  // Lanes: the streams each rank uses, compute first.
  std::vector<std::vector<int>> lanes(static_cast<std::size_t>(p.ranks()));
  double y = top;
  std::vector<double> row_y(static_cast<std::size_t>(p.ranks()));
  for (int r = 0; r < p.ranks(); ++r) {
    for (int s = 0; s < streams_per_rank; ++s) {
      const std::uint32_t q = program::queue_of(r, s);
      if (p.queue_begin[q] != p.queue_begin[q + 1]) lanes[static_cast<std::size_t>(r)].push_back(s);
    }
    row_y[static_cast<std::size_t>(r)] = y;
    y += static_cast<double>(lanes[static_cast<std::size_t>(r)].size()) * st.lane_height + gap;
  }
  for (int r = 0; r < p.ranks(); ++r) {
    const auto& ls = lanes[static_cast<std::size_t>(r)];
    const std::vector<std::string> names = stream_names(p, r, ls);
    for (std::size_t k = 0; k < ls.size(); ++k) {
      const double ly =
          row_y[static_cast<std::size_t>(r)] + static_cast<double>(k) * st.lane_height;
      out << "<text x=\"4\" y=\"" << ly + st.lane_height * 0.7 << "\">rank " << r << " " << names[k]
          << "</text>\n";
    }
  }
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (!t.ran(i)) continue;
    const op& o = p.at(i);
    const auto& ls = lanes[p.rank[i]];
    const auto k = static_cast<double>(std::find(ls.begin(), ls.end(), p.stream[i]) - ls.begin());
    const double x = left + t.start[i].count() * scale, w = t.duration_of(i).count() * scale;
    const double ly = row_y[p.rank[i]] + k * st.lane_height;
    out << "<g class=\"op\" data-op=\"" << i << "\"><title>" << xml_escape(to_string(o)) << " ["
        << t.start[i].count() * per_count << ", " << t.finish[i].count() * per_count << "] " << unit
        << "</title><rect x=\"" << x << "\" y=\"" << ly + 1 << "\" width=\"" << w << "\" height=\""
        << st.lane_height - 2 << "\" fill=\"" << colour_of(o.k)
        << "\" stroke=\"#555\" stroke-width=\"0.5\"/>";
    const std::string label = short_label(o, chunks, p.source.model.parts() > 1);
    if (w >= 6.0 * static_cast<double>(label.size()))
      out << "<text x=\"" << x + w / 2 << "\" y=\"" << ly + st.lane_height * 0.7
          << "\" text-anchor=\"middle\">" << label << "</text>";
    out << "</g>\n";
  }
  // Contention: where an op ran below full rate, a dark veil over that stretch of its box, the
  // darker the slower.
  for (const basic_slowed<T>& sl : t.slowed) {
    const std::uint32_t i = sl.op;
    const auto& ls = lanes[p.rank[i]];
    const auto k = static_cast<double>(std::find(ls.begin(), ls.end(), p.stream[i]) - ls.begin());
    const double x = left + sl.from.count() * scale, w = (sl.to - sl.from).count() * scale;
    out << "<rect class=\"slowed\" x=\"" << x << "\" y=\"" << row_y[p.rank[i]] + k * st.lane_height + 1
        << "\" width=\"" << w << "\" height=\"" << st.lane_height - 2
        << "\" fill=\"black\" fill-opacity=\"" << 0.5 * (1 - sl.rate)
        << "\"><title>at " << std::lround(100 * sl.rate) << "% of full rate</title></rect>\n";
  }
  // Time axis: round ticks (0, 10, 20 ms ...) up to the span, its unit once at the end.
  const double axis = y + 4;
  out << "<line x1=\"" << left << "\" y1=\"" << axis << "\" x2=\"" << left + st.width << "\" y2=\""
      << axis << "\" stroke=\"black\"/>\n";
  const double shown = span.count() * per_count, step = tick_step(shown);
  for (int k = 0; k * step <= shown * (1 + 1e-9); ++k) {
    const double x = left + (shown > 0 ? st.width * (k * step) / shown : 0);
    out << "<line x1=\"" << x << "\" y1=\"" << axis << "\" x2=\"" << x << "\" y2=\"" << axis + 4
        << "\" stroke=\"black\"/><text x=\"" << x << "\" y=\"" << axis + 16
        << "\" text-anchor=\"middle\">" << tick_label(k * step) << "</text>\n";
  }
  out << "<text x=\"" << left + st.width + 12 << "\" y=\"" << axis + 16 << "\">" << unit
      << "</text>\n";
  return axis + 26;
}

/// The SVG's opening, background, title and legend (the kinds present).
inline void svg_header(std::ostream& out, const program& p, double width, const std::string& title,
                       double height) {
  const double left = 110;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 40 << "\" height=\""
      << height << "\" font-family=\"sans-serif\" font-size=\"10\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!title.empty())
    out << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">" << xml_escape(title)
        << "</text>\n";
  bool present[kind_count] = {};
  for (const op& o : p.source.ops) present[static_cast<int>(o.k)] = true;
  present[static_cast<int>(kind::recv)] = false;  // drawn as "transfer" with send
  double x = left + width;
  for (int k = kind_count - 1; k >= 0; --k) {
    if (!present[k]) continue;
    const kind kk = static_cast<kind>(k);
    const std::string name = kk == kind::send ? "transfer" : std::string(name_of(kk));
    x -= 14 + 6.0 * static_cast<double>(name.size()) + 12;
    out << "<rect class=\"legend\" x=\"" << x << "\" y=\"10\" width=\"12\" height=\"12\" fill=\""
        << colour_of(kk) << "\" stroke=\"#555\" stroke-width=\"0.5\"/><text x=\"" << x + 15
        << "\" y=\"20\">" << name << "</text>\n";
  }
}
}  // namespace detail

/// Writes an SVG timeline: per rank a row of lanes, one per stream that has ops.
template <time_type T>
void write_svg(std::ostream& out, const program& p, const basic_timeline<T>& t,
               const basic_svg_style<T>& st = {}) {
  std::ostringstream body;
  const double height = detail::svg_timeline(body, p, t, st, 34, "");
  detail::svg_header(out, p, st.width, st.title, height);
  out << body.str() << "</svg>\n";
}

/// Writes two timelines one above the other on one time scale, each under its caption: of two
/// programs (two schedules of one step, say), the legend the upper one's.
template <time_type T>
void write_svg_compare(std::ostream& out, const program& upper_program,
                       const basic_timeline<T>& upper, const std::string& upper_caption,
                       const program& lower_program, const basic_timeline<T>& lower,
                       const std::string& lower_caption, basic_svg_style<T> st = {}) {
  if (st.time_span <= T{0}) st.time_span = std::max(upper.makespan, lower.makespan);
  std::ostringstream body;
  const double middle = detail::svg_timeline(body, upper_program, upper, st, 34, upper_caption);
  const double height =
      detail::svg_timeline(body, lower_program, lower, st, middle + 6, lower_caption);
  detail::svg_header(out, upper_program, st.width, st.title, height);
  out << body.str() << "</svg>\n";
}

/// Writes two timelines of one program one above the other on one time scale — measured and
/// predicted, say — each under its caption.
template <time_type T>
void write_svg_compare(std::ostream& out, const program& p, const basic_timeline<T>& upper,
                       const std::string& upper_caption, const basic_timeline<T>& lower,
                       const std::string& lower_caption, basic_svg_style<T> st = {}) {
  write_svg_compare(out, p, upper, upper_caption, p, lower, lower_caption, st);
}

}  // namespace weft
