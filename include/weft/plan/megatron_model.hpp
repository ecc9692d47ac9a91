// A model as Megatron-LM's launch flags state it (`--num-layers 32 --hidden-size 4096 --swiglu
// ...`): what a launch script says of the architecture when it has no config.json. The defaults
// are Megatron's own (megatron/core/transformer/transformer_config.py and
// megatron/training/arguments.py): biases on every linear, LayerNorm, dropout 0.1, learned
// absolute positions, tied embeddings, a vocabulary padded to a multiple of 128 x tp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan {

/// Megatron's architecture flags, under their names with underscores; 0 or empty: not given.
struct megatron_model {
  int num_layers = 0;
  double hidden_size = 0, num_attention_heads = 0;
  double ffn_hidden_size = 0;  ///< 0: 4h, or with --swiglu int(8h / 3 / 64) x 64
  double kv_channels = 0;      ///< a head's width; 0: hidden / heads
  bool group_query_attention = false;
  double num_query_groups = 0;  ///< with group_query_attention: key/value heads (Megatron: 1)
  double max_position_embeddings = 0;  ///< required by Megatron; learned positions' rows
  std::string position_embedding_type = "learned_absolute";  ///< or rope, yarn, mrope, none
  /// Megatron's older spellings: --use-rotary-position-embeddings (rope) and
  /// --no-position-embedding (with rope: the rotary embedding alone; else none)
  bool use_rotary_position_embeddings = false, no_position_embedding = false;
  std::string normalization = "LayerNorm";  ///< or RMSNorm
  std::string activation = "gelu";  ///< swiglu, quick-geglu, squared-relu, openai-gelu, gelu
  bool disable_bias_linear = false, add_qkv_bias = false, qk_layernorm = false;
  bool untie_embeddings_and_output_weights = false;
  double attention_dropout = 0.1, hidden_dropout = 0.1;
  /// The vocabulary: --vocab-size, or the tokenizer's (GPT2BPETokenizer: GPT-2's 50257).
  double vocab_size = 0;
  std::string tokenizer_type;
  bool gpt2_vocab_files = false;  ///< --vocab-file with --merge-file: GPT-2's BPE
  double make_vocab_size_divisible_by = 128;
  // Mixture of experts.
  int num_experts = 0, moe_router_topk = 2;
  double moe_ffn_hidden_size = 0;  ///< 0: ffn_hidden_size
  double moe_shared_expert_intermediate_size = 0;
  bool moe_shared_expert_gate = false;
  std::string moe_layer_freq = "1";  ///< N (every N-th from layer 0) or a pattern "([0]*3+[1]*58)"
  int moe_router_num_groups = 0, moe_router_group_topk = 0;
  // Multi-head latent attention (Megatron's defaults: no query latent, kv rank 32).
  bool multi_latent_attention = false;
  double q_lora_rank = 0, kv_lora_rank = 32, qk_head_dim = 128, qk_pos_emb_head_dim = 64,
         v_head_dim = 128;
  int mtp_num_layers = 0;
};

namespace detail {

/// Megatron's --moe-layer-freq pattern — a Python list expression of 0s and 1s: "[0,1,1]",
/// "[1]*3", "([0]*3+[1]*58)", "([1]*3+[0]*1)*3" — evaluated. Anything else is refused.
class layer_pattern_parser {
 public:
  /// `longest`: the most layers the pattern may have (the model's, as Megatron checks it).
  layer_pattern_parser(std::string_view text, std::size_t longest)
      : text_(text), longest_(longest) {}
  std::vector<int> parse() {
    std::vector<int> v = sum();
    skip();
    if (at_ < text_.size()) fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return v;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0, longest_;
  int depth_ = 0;
  static constexpr int deepest = 64;  // parentheses: far more than any pattern needs

  [[noreturn]] void fail(const std::string& why) const {
    throw config_error("--moe-layer-freq " + excerpt(text_) + ": " + why + " at character " +
                       std::to_string(at_ + 1) +
                       " (a whole number, or a list of 0s and 1s such as \"([0]*3+[1]*58)\")");
  }
  void skip() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  bool take(char c) {
    skip();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  std::size_t number() {
    skip();
    std::size_t n = 0, digits = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      n = n * 10 + static_cast<std::size_t>(text_[at_++] - '0');
      if (++digits > 7) fail("a number too large");
    }
    if (digits == 0) fail("a number expected");
    return n;
  }
  std::vector<int> sum() {
    std::vector<int> v = product();
    while (take('+')) {
      const std::vector<int> more = product();
      if (v.size() + more.size() > longest_) fail("a pattern longer than the model");
      v.insert(v.end(), more.begin(), more.end());
    }
    return v;
  }
  std::vector<int> product() {
    std::vector<int> v = atom();
    while (take('*')) {
      const std::size_t n = number();
      if (v.empty() || n == 0) {  // nothing repeated, or nothing left
        v.clear();
        continue;
      }
      if (v.size() > longest_ / n) fail("a pattern longer than the model");
      std::vector<int> out;
      out.reserve(v.size() * n);
      for (std::size_t i = 0; i < n; ++i) out.insert(out.end(), v.begin(), v.end());
      v = std::move(out);
    }
    return v;
  }
  std::vector<int> atom() {
    if (take('(')) {
      if (++depth_ > deepest) fail("parentheses nested too deep");
      std::vector<int> v = sum();
      if (!take(')')) fail("')' expected");
      --depth_;
      return v;
    }
    if (!take('[')) fail("'[' or '(' expected");
    std::vector<int> v;
    if (take(']')) return v;
    do {
      const std::size_t x = number();
      if (x > 1) fail("only 0 (dense) and 1 (experts) can be listed");
      if (v.size() >= longest_) fail("a pattern longer than the model");
      v.push_back(static_cast<int>(x));
    } while (take(','));
    if (!take(']')) fail("']' expected");
    return v;
  }
};

/// Where the MoE layers of `pattern` (1: experts) are, as weft states them: the first
/// `first_dense` layers dense, then every `every`-th. A pattern of another form is refused.
inline void place_moe_layers(const std::vector<int>& pattern, int layers, moe_shape& e) {
  if (pattern.size() != static_cast<std::size_t>(layers))
    throw config_error("--moe-layer-freq: the pattern has " + std::to_string(pattern.size()) +
                       " layers, the model " + std::to_string(layers) + " (--num-layers)");
  const auto first = std::find(pattern.begin(), pattern.end(), 1);
  if (first == pattern.end())
    throw config_error("--moe-layer-freq: the pattern has no expert layer (1)");
  e.first_dense = static_cast<int>(first - pattern.begin());
  const auto second = std::find(first + 1, pattern.end(), 1);
  e.every = second == pattern.end() ? layers : static_cast<int>(second - first);
  e.offset = (e.every - e.first_dense % e.every) % e.every;
  for (int l = 0; l < layers; ++l) {
    const bool moe = l >= e.first_dense && (l + e.offset) % e.every == 0;
    if (moe != (pattern[static_cast<std::size_t>(l)] == 1))
      throw config_error(
          "--moe-layer-freq: weft places expert layers after some dense ones at a fixed "
          "stride; layer " +
          std::to_string(l) + " breaks the pattern's stride");
  }
}

/// The experts of Megatron's flags `a` into model `m`: their count and width, the shared ones,
/// where the MoE layers are (--moe-layer-freq), group-limited routing.
inline void megatron_moe(const megatron_model& a, transformer& m) {
  moe_shape& e = m.moe;
  e.routed = a.num_experts;
  e.top_k = a.moe_router_topk;
  if (e.top_k < 1 || e.top_k > e.routed)
    throw config_error("--moe-router-topk " + std::to_string(e.top_k) + " must be in [1, " +
                       std::to_string(e.routed) + "] (--num-experts)");
  e.expert_ffn = a.moe_ffn_hidden_size > 0 ? a.moe_ffn_hidden_size : m.ffn;
  e.shared_ffn = a.moe_shared_expert_intermediate_size;
  e.shared_gate = a.moe_shared_expert_gate && e.shared_ffn > 0;
  const std::string& f = a.moe_layer_freq;
  if (f.find('[') == std::string::npos) {
    std::size_t used = 0;
    int every = 0;
    try {
      every = std::stoi(f, &used);
    } catch (const std::exception&) {
    }
    if (used != f.size() || every < 1)
      throw config_error("--moe-layer-freq " + excerpt(f) +
                         ": a whole number of 1 or more, or a pattern such as "
                         "\"([0]*3+[1]*58)\"");
    e.every = every;
  } else {
    const auto layers = static_cast<std::size_t>(m.layers);
    detail::place_moe_layers(detail::layer_pattern_parser(f, layers).parse(), m.layers, e);
  }
  if (a.moe_router_group_topk > 0 &&
      (a.moe_router_num_groups == 0 || a.moe_router_group_topk > a.moe_router_num_groups))
    throw config_error("--moe-router-group-topk " + std::to_string(a.moe_router_group_topk) +
                       " needs --moe-router-num-groups of at least that many");
  if (a.moe_router_num_groups > 0) {
    if (e.routed % a.moe_router_num_groups != 0)
      throw config_error("--moe-router-num-groups " + std::to_string(a.moe_router_num_groups) +
                         " does not divide the " + std::to_string(e.routed) + " experts");
    e.groups = a.moe_router_num_groups;
    e.group_top_k = a.moe_router_group_topk > 0 ? a.moe_router_group_topk : e.groups;
  }
}

}  // namespace detail

/// The model `a` states, at tensor parallelism `tp` (Megatron pads the vocabulary to a multiple
/// of make_vocab_size_divisible_by x tp). Throws `config_error` naming the flag for a missing size
/// or an impossible one.
inline hf_model megatron_transformer(const megatron_model& a, int tp) {
  const auto need = [](double x, const char* flag) {
    if (!(x >= 1)) throw config_error(std::string("Megatron's model needs ") + flag);
  };
  need(a.num_layers, "--num-layers");
  need(a.hidden_size, "--hidden-size");
  need(a.num_attention_heads, "--num-attention-heads");
  need(a.max_position_embeddings, "--max-position-embeddings");
  hf_model out;
  out.file = "Megatron's flags";
  out.max_positions = a.max_position_embeddings;
  transformer& m = out.model;
  m.model_type = "megatron";
  m.layers = a.num_layers;
  m.hidden = a.hidden_size;
  m.heads = static_cast<int>(a.num_attention_heads);
  // --group-query-attention without a count: Megatron's default of one group.
  m.kv_heads = !a.group_query_attention ? m.heads
               : a.num_query_groups > 0 ? static_cast<int>(a.num_query_groups)
                                        : 1;
  if (m.heads % m.kv_heads != 0)
    throw config_error("--num-query-groups " + std::to_string(m.kv_heads) +
                       " does not divide --num-attention-heads " + std::to_string(m.heads));
  if (a.kv_channels == 0 && std::fmod(m.hidden, m.heads) != 0)
    throw config_error("--hidden-size " + shown(m.hidden) + " is not a multiple of the " +
                       std::to_string(m.heads) + " heads: give --kv-channels");
  m.head_dim = a.kv_channels > 0 ? a.kv_channels : m.hidden / m.heads;
  const bool gated = a.activation == "swiglu" || a.activation == "quick-geglu";
  m.mlp = gated ? mlp_kind::gated : mlp_kind::plain;
  m.ffn = a.ffn_hidden_size > 0      ? a.ffn_hidden_size
          : a.activation == "swiglu" ? std::floor(4 * m.hidden * 2 / 3 / 64) * 64
                                     : 4 * m.hidden;
  m.layer_norm = a.normalization == "LayerNorm";
  m.linear_bias = !a.disable_bias_linear;
  m.qkv_bias = a.add_qkv_bias && a.disable_bias_linear;  // else every linear's bias has them
  // With latent attention Megatron's --qk-layernorm norms the latents (which weft's MLA has).
  m.qk_norm = a.qk_layernorm && !a.multi_latent_attention;
  m.tied_embeddings = !a.untie_embeddings_and_output_weights;
  m.dropout = a.attention_dropout > 0 || a.hidden_dropout > 0;
  const std::string pos =
      a.use_rotary_position_embeddings ? std::string("rope") : a.position_embedding_type;
  m.rotary = pos == "rope" || pos == "yarn" || pos == "mrope";
  if (a.no_position_embedding && !m.rotary)  // Megatron's rule
    throw config_error(
        "--no-position-embedding goes with rotary positions (--position-embedding-type rope)");
  if (pos == "learned_absolute") m.positions = a.max_position_embeddings;

  double vocab = a.vocab_size;
  if (vocab == 0 &&
      (a.tokenizer_type == "GPT2BPETokenizer" || (a.tokenizer_type.empty() && a.gpt2_vocab_files)))
    vocab = 50257;  // GPT-2's byte-pair encoding
  if (vocab == 0)
    throw config_error("Megatron's model needs --vocab-size: weft does not read the tokenizer " +
                       (a.tokenizer_type.empty() ? std::string("files") : a.tokenizer_type) +
                       " (GPT2BPETokenizer's 50257 it knows)");
  const double multiple = a.make_vocab_size_divisible_by * tp;
  m.vocab = std::ceil(vocab / multiple) * multiple;

  if (a.num_experts > 0) detail::megatron_moe(a, m);
  if (a.multi_latent_attention) {
    mla_shape& l = m.mla;
    l.q_lora_rank = a.q_lora_rank;
    l.kv_lora_rank = a.kv_lora_rank;
    l.qk_nope_head_dim = a.qk_head_dim;
    l.qk_rope_head_dim = a.qk_pos_emb_head_dim;
    l.v_head_dim = a.v_head_dim;
  }
  m.mtp_layers = a.mtp_num_layers;
  return out;
}

}  // namespace weft::plan
