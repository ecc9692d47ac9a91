// What the harnesses make of libFuzzer's bytes: a stream of choices, or a command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::fuzz {

/// The input as a stream of choices; zeros once it runs out (so every input decodes).
struct choices {
  const std::uint8_t* data;
  std::size_t size, at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  bool flag() { return (byte() & 1) != 0; }
};

/// The input as the tool's arguments after "weft", separated by NUL bytes (at most 63).
inline std::vector<std::string> arguments(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"weft"};
  std::string cur;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (!cur.empty()) args.push_back(cur);
  return args;
}

}  // namespace weft::fuzz
