// The mask families long-context training meets, in range form, and a parser for their names
// (`FAMILY[:key=value,...]`, docs/adaptive-cp.md).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/key_values.hpp>
#include <weft/cp/mask.hpp>

namespace weft::cp::masks {

inline constexpr int unbounded = mask_block::unbounded;

inline range_mask full(int s) { return {s, {{0, s, 0, s, -unbounded, unbounded}}}; }
inline range_mask causal(int s) { return {s, {{0, s, 0, s, 0, unbounded}}}; }
/// Each query attends to itself and the `w - 1` keys before it.
inline range_mask sliding_window(int s, int w) { return {s, {{0, s, 0, s, 0, w - 1}}}; }
/// Each query attends to the keys less than `w` away on either side.
inline range_mask bidirectional_window(int s, int w) {
  return {s, {{0, s, 0, s, -(w - 1), w - 1}}};
}
/// A causal window of `w`, plus `g` global tokens at the start that every query attends to and
/// that attend to every key before them.
inline range_mask global_window(int s, int g, int w) {
  range_mask m = sliding_window(s, w);
  m.blocks.push_back({0, s, 0, g, 0, unbounded});  // every query sees the global tokens
  m.blocks.push_back({0, g, 0, s, 0, unbounded});  // the global tokens see everything before
  return m;
}
/// Documents of the given lengths packed into one sequence; attention stays inside a document,
/// full or causal.
inline range_mask documents(const std::vector<int>& lengths, bool is_causal) {
  range_mask m;
  for (const int len : lengths) {
    m.blocks.push_back(
        {m.size, m.size + len, m.size, m.size + len, is_causal ? 0 : -unbounded, unbounded});
    m.size += len;
  }
  return m;
}
/// `n` documents of equal length (the last takes the rest).
inline std::vector<int> equal_lengths(int s, int n) {
  std::vector<int> l(static_cast<std::size_t>(n), s / n);
  l.back() += s - (s / n) * n;
  return l;
}
/// Documents interleaved token by token: token t belongs to document t mod n and attends (full)
/// to its document. Contiguous slices all hold every document; re-ordering can undo it.
inline range_mask interleaved_documents(int s, int n) {
  range_mask m{s, {}};
  // Same document <=> q - k is a multiple of n: one single-offset diagonal per multiple.
  for (int d = -(s - 1) / n * n; d <= s - 1; d += n) m.blocks.push_back({0, s, 0, s, d, d});
  return m;
}
/// A shared question of `question` tokens followed by answers of the given lengths: the
/// question is causal, each answer attends to the question and causally to itself.
inline range_mask shared_question(int question, const std::vector<int>& answers) {
  range_mask m{question, {{0, question, 0, question, 0, unbounded}}};
  for (const int len : answers) {
    m.blocks.push_back({m.size, m.size + len, 0, question, -unbounded, unbounded});
    m.blocks.push_back({m.size, m.size + len, m.size, m.size + len, 0, unbounded});
    m.size += len;
  }
  return m;
}
/// Causal at the granularity of blocks of `b` tokens: a query sees every key of its own block
/// and of the blocks before it.
inline range_mask causal_blockwise(int s, int b) {
  range_mask m{s, {}};
  for (int q = 0; q < s; q += b) m.blocks.push_back({q, std::min(q + b, s), 0, std::min(q + b, s)});
  return m;
}
/// A bidirectional prefix of `p` tokens, causal after it.
inline range_mask prefix_lm(int s, int p) {
  return {s, {{0, s, 0, s, 0, unbounded}, {0, p, 0, p, -unbounded, unbounded}}};
}
/// Blocks of `b` x `b` that attend (fully) with probability `density`, from `seed`; diagonal
/// blocks always attend, so no query attends to nothing.
inline range_mask random_blocks(int s, int b, double density, std::uint64_t seed) {
  range_mask m{s, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int q = 0; q < s; q += b)
    for (int k = 0; k < s; k += b)
      if (q == k || u(rng) < density)
        m.blocks.push_back({q, std::min(q + b, s), k, std::min(k + b, s)});
  return m;
}

/// The families by name, for tools: `full`, `causal`, `window:w=W`, `bidir-window:w=W`,
/// `global-window:g=G,w=W`, `documents:n=N` (full) and `causal-documents:n=N`,
/// `interleaved-documents:n=N`, `shared-question:q=Q,n=N` (N equal answers),
/// `causal-blockwise:b=B`, `prefix-lm:p=P`, `random:density=D,b=B,seed=X`. Sizes default to a
/// fraction of the sequence (docs/adaptive-cp.md). Throws `config_error` naming what is wrong,
/// before building anything: a sequence beyond `max_tokens`, a parameter that is not a finite
/// number in range, or a mask of more than `max_blocks` blocks (docs/limits.md).
inline range_mask by_name(std::string_view spec, int s) {
  if (s < 1 || s > max_tokens)
    throw config_error("weft: mask: the sequence length must be in [1, " +
                       std::to_string(max_tokens) + "], got " + std::to_string(s));
  const std::size_t colon = spec.find(':');
  const std::string family(spec.substr(0, colon));
  key_values kv(colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1),
                "mask: " + family);
  const auto count = [&](const char* key, int fallback, int lo, int hi) {
    return static_cast<int>(kv.whole(key, fallback, lo, hi));
  };
  // Families whose block count grows with the sequence: refuse before building.
  const auto at_most = [&](long long blocks) {
    if (blocks > max_blocks)
      kv.fail("these parameters make " + std::to_string(blocks) + " blocks, over the limit of " +
              std::to_string(max_blocks));
  };
  const auto blocks_of = [](long long n, long long per) { return (n + per - 1) / per; };
  range_mask m;
  std::string_view known;
  if (family == "full") {
    m = full(s);
  } else if (family == "causal") {
    m = causal(s);
  } else if (family == "window") {
    known = "w";
    m = sliding_window(s, count("w", std::max(1, s / 8), 1, s));
  } else if (family == "bidir-window") {
    known = "w";
    m = bidirectional_window(s, count("w", std::max(1, s / 16), 1, s));
  } else if (family == "global-window") {
    known = "g, w";
    const int g = count("g", std::max(1, s / 64), 0, s);
    m = global_window(s, g, count("w", std::max(1, s / 16), 1, s));
  } else if (family == "documents" || family == "causal-documents") {
    known = "n";
    const int n = count("n", std::min(8, s), 1, s);
    at_most(n);
    m = documents(equal_lengths(s, n), family == "causal-documents");
  } else if (family == "interleaved-documents") {
    known = "n";
    const int n = count("n", std::min(8, s), 1, s);
    at_most(2 * blocks_of(s, n));
    m = interleaved_documents(s, n);
  } else if (family == "shared-question") {
    known = "q, n";
    const int q = count("q", std::max(1, s / 4), 1, s);
    if (q == s) kv.fail("no tokens left for answers");
    const int n = count("n", std::min(4, s - q), 1, s - q);
    at_most(1 + 2LL * n);
    m = shared_question(q, equal_lengths(s - q, n));
  } else if (family == "causal-blockwise") {
    known = "b";
    const int b = count("b", std::max(1, s / 16), 1, s);
    at_most(blocks_of(s, b));
    m = causal_blockwise(s, b);
  } else if (family == "prefix-lm") {
    known = "p";
    m = prefix_lm(s, count("p", s / 4, 0, s));
  } else if (family == "random") {
    known = "density, b, seed";
    const double d = kv.number("density", 0.3, 0, 1);
    const int b = count("b", std::max(1, s / 16), 1, s);
    const auto seed = static_cast<std::uint64_t>(count("seed", 1, 0, 1 << 30));
    at_most(blocks_of(s, b) * blocks_of(s, b));
    m = random_blocks(s, b, d, seed);
  } else {
    throw config_error("weft: mask: unknown family '" + family +
                       "' (full, causal, window, bidir-window, global-window, documents, "
                       "causal-documents, interleaved-documents, shared-question, "
                       "causal-blockwise, prefix-lm, random)");
  }
  kv.finish(known);
  return m;
}

}  // namespace weft::cp::masks
