// A text form of range masks (docs/adaptive-cp.md):
//
//   # comments and blank lines are ignored
//   size 4096
//   block 0 4096 0 4096 causal          # queries [0, 4096) x keys [0, 4096), k <= q
//   block 0 512 0 512 full
//   block 512 1024 0 1024 window 128     # 0 <= q - k < 128
//   block 0 4096 0 4096 offsets -64 64  # -64 <= q - k <= 64
//
// `size` comes first; every block lies inside it. Errors name the line.
#pragma once

#include <istream>
#include <sstream>
#include <string>

#include <weft/core/error.hpp>
#include <weft/cp/mask.hpp>

namespace weft::cp {

/// A malformed mask file: `line` (1-based) and what is wrong with it.
struct mask_file_error : config_error {
  int line;
  mask_file_error(int line_, const std::string& what)
      : config_error("line " + std::to_string(line_) + ": " + std::string(without_prefix(what))),
        line(line_) {}
};

inline range_mask read_mask_file(std::istream& in) {
  range_mask m;
  std::string text;
  int line = 0;
  bool sized = false;
  while (std::getline(in, text)) {
    ++line;
    if (const std::size_t hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::string word;
    if (!(words >> word)) continue;
    const auto integer = [&](const char* what) {
      long v = 0;
      if (!(words >> v) || v < -2147483647L || v > 2147483647L)
        throw mask_file_error(line, std::string("expected ") + what);
      return static_cast<int>(v);
    };
    if (word == "size") {
      if (sized) throw mask_file_error(line, "a second 'size'");
      m.size = integer("the sequence length");
      if (m.size < 1 || m.size > max_tokens)
        throw mask_file_error(
            line, "the sequence length must be in [1, " + std::to_string(max_tokens) + "]");
      sized = true;
    } else if (word == "block") {
      if (!sized) throw mask_file_error(line, "'block' before 'size'");
      if (m.blocks.size() >= static_cast<std::size_t>(max_blocks))
        throw mask_file_error(line, "more than " + std::to_string(max_blocks) + " blocks");
      mask_block b;
      b.q_begin = integer("q_begin");
      b.q_end = integer("q_end");
      b.k_begin = integer("k_begin");
      b.k_end = integer("k_end");
      std::string type = "full";
      words >> type;
      if (type == "causal") {
        b.min_offset = 0;
      } else if (type == "window") {
        const int w = integer("a window width");
        if (w < 1) throw mask_file_error(line, "a window must be >= 1 wide");
        b.min_offset = 0;
        b.max_offset = w - 1;
      } else if (type == "offsets") {
        b.min_offset = integer("the least offset q - k");
        b.max_offset = integer("the greatest offset q - k");
      } else if (type != "full") {
        throw mask_file_error(
            line, "unknown block type '" + type + "' (full, causal, window W, offsets LO HI)");
      }
      if (std::string extra; words >> extra)
        throw mask_file_error(line, "unexpected '" + extra + "'");
      try {
        check_block(b, m.size);
      } catch (const config_error& e) {
        throw mask_file_error(line, e.what());
      }
      m.blocks.push_back(b);
    } else {
      throw mask_file_error(line, "unknown keyword '" + word + "' (size, block)");
    }
  }
  if (!sized) throw mask_file_error(line, "no 'size' line");
  return m;
}

}  // namespace weft::cp
