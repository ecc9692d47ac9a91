// Megatron's --pipeline-model-parallel-layout (and MindSpeed's, the same grammar): which layers
// each pipeline stage holds. `E` the embedding, `t` a decoder layer, `m` an MTP layer, `L` the
// loss (LM head); `|` ends a stage; `x*N` repeats a symbol and `(...)*N` a part; commas are
// cosmetic; empty stages are legal. Stages are listed virtual stage by virtual stage: the first
// `pp` are chunk 0 of ranks 0..pp-1, the next `pp` chunk 1, and so on, so their count is a
// multiple of pp and gives the chunks per rank. (On a V — zb-v, dualpipev — the stages are taken
// in model order too, and the second `pp` run back up the ranks: stage pp + j on rank pp-1-j.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <weft/core/error.hpp>

namespace weft::plan {

/// What one stage (a rank's chunk) holds, in the order it runs.
struct layout_stage {
  bool embedding = false, loss = false;
  int first_layer = 0;  ///< index of its first decoder layer (when it has any)
  int layers = 0;       ///< decoder layers
  int mtp = 0;          ///< MTP layers
};

struct pipeline_layout {
  std::vector<layout_stage> stages;  ///< in Megatron's order: chunk-major, then rank
  int pp = 1, chunks = 1;
  /// The stage rank `rank`'s chunk `chunk` runs, in Megatron's loop placement.
  const layout_stage& at(int rank, int chunk) const {
    return stages[static_cast<std::size_t>(chunk * pp + rank)];
  }
};

namespace detail {

/// Expands the layout's repetitions into one symbol string (`E`, `t`, `m`, `L`, `|`).
class layout_expander {
 public:
  explicit layout_expander(std::string_view text) : s_(text) {}
  std::string run() {
    std::string out = sequence();
    if (i_ < s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "'");
    return out;
  }

 private:
  static constexpr std::size_t most = 1 << 20;  // symbols after expansion
  static constexpr int deepest = 64;            // parentheses within parentheses
  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw config_error("--pipeline-layout: " + why + " at position " + std::to_string(i_ + 1) +
                       " of \"" + excerpt(s_, i_) + "\"");
  }
  std::string sequence() {
    std::string out;
    while (i_ < s_.size() && s_[i_] != ')') {
      const char c = s_[i_];
      std::string part;
      if (c == '(') {
        if (++depth_ > deepest)
          fail("parentheses nested more than " + std::to_string(deepest) + " deep");
        ++i_;
        part = sequence();
        if (i_ >= s_.size()) fail("'(' is never closed");
        ++i_;  // ')'
        --depth_;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        part = std::string(1, c);
        ++i_;
      } else if (c == ',' || c == ' ') {
        ++i_;
        continue;
      } else {
        fail("'" + std::string(1, c) + "' is not one of E t m L | ( ) * ,");
      }
      const std::size_t n = repeat();
      if (part.empty()) continue;  // "()*N" is nothing, however large N
      if (part.size() * n + out.size() > most)
        fail("the layout expands to more than " + std::to_string(most) + " symbols");
      for (std::size_t k = 0; k < n; ++k) out += part;
    }
    return out;
  }
  std::size_t repeat() {
    if (i_ >= s_.size() || s_[i_] != '*') return 1;
    ++i_;
    std::size_t n = 0, digits = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && digits < 8) {
      n = n * 10 + static_cast<std::size_t>(s_[i_] - '0');
      ++i_;
      ++digits;
    }
    if (digits == 0) fail("'*' needs a count");
    if (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') fail("a count of more than 8 digits");
    if (n == 0) fail("a count of 0");
    return n;
  }
};

}  // namespace detail

/// Parses `text` for `pp` pipeline ranks and checks it covers a model of `layers` decoder layers
/// and `mtp_layers` MTP layers: the embedding once, in the first stage; the loss once, in the
/// last; every decoder and MTP layer once. Throws `config_error` naming what is wrong.
inline pipeline_layout parse_pipeline_layout(std::string_view text, int pp, int layers,
                                             int mtp_layers) {
  if (pp < 1) throw config_error("--pipeline-layout: pp must be at least 1");
  const std::string symbols = detail::layout_expander(text).run();
  pipeline_layout out;
  out.pp = pp;
  out.stages.emplace_back();
  int next_layer = 0, embeddings = 0, losses = 0, mtp = 0;
  for (const char c : symbols) {
    layout_stage& st = out.stages.back();
    switch (c) {
      case '|':
        out.stages.emplace_back();
        break;
      case 'E':
        ++embeddings;
        st.embedding = true;
        if (out.stages.size() != 1 || st.layers > 0 || st.mtp > 0)
          throw config_error("--pipeline-layout: the embedding (E) must open the first stage");
        break;
      case 'L':
        ++losses;
        st.loss = true;
        break;
      case 'm':
        ++mtp;
        ++st.mtp;
        break;
      default:  // 't'
        if (st.layers == 0) st.first_layer = next_layer;
        ++st.layers;
        ++next_layer;
        break;
    }
  }
  const auto n = static_cast<int>(out.stages.size());
  const std::string where = " (\"" + excerpt(text) + "\")";
  if (embeddings != 1)
    throw config_error("--pipeline-layout: the embedding (E) appears " +
                       std::to_string(embeddings) + " times, not once" + where);
  if (losses != 1 || !out.stages.back().loss)
    throw config_error("--pipeline-layout: the loss (L) must appear once, in the last stage" +
                       where);
  if (next_layer != layers)
    throw config_error("--pipeline-layout: " + std::to_string(next_layer) +
                       " decoder layers (t), the model has " + std::to_string(layers) + where);
  if (mtp != mtp_layers)
    throw config_error("--pipeline-layout: " + std::to_string(mtp) +
                       " MTP layers (m), the model has " + std::to_string(mtp_layers) + where);
  if (n % pp != 0)
    throw config_error("--pipeline-layout: " + std::to_string(n) +
                       " stages are not a multiple of the " + std::to_string(pp) +
                       " pipeline ranks" + where);
  out.chunks = n / pp;
  return out;
}

}  // namespace weft::plan
