// Pictures of adaptive CP: the coarse mask in its original order and re-mapped, side by side,
// with the cp x cp grid drawn over each and the tasks shaded.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <weft/cp/mask.hpp>

namespace weft::cp {

/// An SVG of `m` under the identity order and under `order`, each downsampled to at most
/// `pixels` cells a side (a pixel is dark when any cell in it attends).
inline void write_remap_svg(std::ostream& out, const dense_mask& m, const std::vector<int>& order,
                            int cp, const std::string& title, int pixels = 128) {
  const int n = m.size(), px = std::min(n, pixels), panel = 320, gap = 40, top = 40;
  const double cell = static_cast<double>(panel) / px;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << 2 * panel + 3 * gap
      << "\" height=\"" << panel + top + gap << "\" font-family=\"sans-serif\" font-size=\"13\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << gap << "\" y=\"20\">" << title << "</text>\n";
  const auto draw = [&](const std::vector<int>& ord, int x0, const char* label) {
    std::vector<int> pos(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) pos[static_cast<std::size_t>(ord[static_cast<std::size_t>(p)])] = p;
    std::vector<std::uint8_t> on(static_cast<std::size_t>(px * px), 0);
    for (int q = 0; q < n; ++q) {
      const auto row = m.row(q);
      const long a = static_cast<long>(pos[static_cast<std::size_t>(q)]) * px / n;
      for (int k = 0; k < n; ++k)
        if (row[static_cast<std::size_t>(k)])
          on[static_cast<std::size_t>(a * px + static_cast<long>(pos[static_cast<std::size_t>(k)]) *
                                                   px / n)] = 1;
    }
    out << "<g transform=\"translate(" << x0 << "," << top << ")\">\n"
        << "<rect width=\"" << panel << "\" height=\"" << panel
        << "\" fill=\"#f4f4f4\" stroke=\"#888\"/>\n";
    for (int a = 0; a < px; ++a)  // one rectangle per run of dark pixels
      for (int b = 0; b < px;) {
        if (!on[static_cast<std::size_t>(a * px + b)]) {
          ++b;
          continue;
        }
        int e = b;
        while (e < px && on[static_cast<std::size_t>(a * px + e)]) ++e;
        out << "<rect x=\"" << b * cell << "\" y=\"" << a * cell << "\" width=\"" << (e - b) * cell
            << "\" height=\"" << cell << "\" fill=\"#3465a4\"/>\n";
        b = e;
      }
    for (int i = 1; i < cp; ++i) {
      const double at = static_cast<double>(i) * panel / cp;
      out << "<line x1=\"" << at << "\" y1=\"0\" x2=\"" << at << "\" y2=\"" << panel
          << "\" stroke=\"#c00\"/>\n<line x1=\"0\" y1=\"" << at << "\" x2=\"" << panel << "\" y2=\""
          << at << "\" stroke=\"#c00\"/>\n";
    }
    out << "<text x=\"0\" y=\"" << panel + 18 << "\">" << label << ": " <<
        [&] {
          int tasks = 0;
          const dense_mask g = grid(m, ord, cp);
          for (int i = 0; i < cp; ++i)
            for (int j = 0; j < cp; ++j) tasks += g(i, j) ? 1 : 0;
          return std::to_string(tasks);
        }()
        << " of " << cp * cp << " blocks have work</text>\n</g>\n";
  };
  draw(identity_order(n), gap, "original order");
  draw(order, panel + 2 * gap, "re-mapped");
  out << "</svg>\n";
}

}  // namespace weft::cp
