// Reads a Hugging Face config.json as it is published: the key sets of the gpt2, bloom, llama,
// mixtral, qwen2_moe and deepseek_v3 model types (and any model type that uses them) into one
// `plan::transformer`. A key weft does not know is named in a warning; a key it needs and does
// not find, or a value out of range, is a `config_error` naming it.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan {

/// What reading a config.json gives: the architecture, and what it did not use.
struct hf_model {
  transformer model;
  std::vector<std::string> warnings;  ///< "config.json: key 'x' is not used", one per key
  std::string file = "config.json";   ///< the name messages give the file
  /// The longest sequence the model was trained for (`max_position_embeddings`); 0: not said.
  double max_positions = 0;
  /// The window of sliding-window attention (`sliding_window` where it is on); 0: none.
  double sliding_window = 0;
};

/// A warning when `seq` tokens a sequence are more than model `hf` was trained for: weft plans
/// it anyway (the positions' encoding is what a longer sequence changes, not its cost).
inline std::optional<std::string> sequence_warning(const hf_model& hf, double seq) {
  if (hf.max_positions <= 0 || seq <= hf.max_positions) return std::nullopt;
  return hf.file + ": --seq-length " + shown(seq) + " is more than max_position_embeddings " +
         shown(hf.max_positions) + ", the longest sequence the model was trained for";
}

/// A warning when attention slides over a window shorter than the `seq` tokens of a sequence:
/// weft prices every layer's attention over the whole causal sequence, more than a window costs.
inline std::optional<std::string> window_warning(const hf_model& hf, double seq) {
  if (hf.sliding_window <= 0 || seq <= hf.sliding_window) return std::nullopt;
  return hf.file + ": sliding_window " + shown(hf.sliding_window) + " is less than --seq-length " +
         shown(seq) +
         "; attention is priced over the whole causal sequence (the window's saving is not "
         "modelled)";
}

namespace detail {

/// Keys that say nothing about the shapes or the cost of a step: read by no one here, and no
/// warning for them.
inline constexpr std::string_view ignored_keys[] = {"_name_or_path",
                                                    "architectures",
                                                    "auto_map",
                                                    "bos_token_id",
                                                    "eos_token_id",
                                                    "pad_token_id",
                                                    "torch_dtype",
                                                    "transformers_version",
                                                    "use_cache",
                                                    "initializer_range",
                                                    "rms_norm_eps",
                                                    "layer_norm_epsilon",
                                                    "layer_norm_eps",
                                                    "rope_theta",
                                                    "rope_scaling",
                                                    "rope_interleave",
                                                    "attention_dropout",
                                                    "hidden_dropout",
                                                    "attention_softmax_in_fp32",
                                                    "apply_residual_connection_post_layernorm",
                                                    "masked_softmax_fusion",
                                                    "pretraining_tp",
                                                    "slow_but_exact",
                                                    "offset_alibi",
                                                    "bias_dropout_fusion",
                                                    "skip_bias_add",
                                                    "skip_bias_add_qkv",
                                                    "unk_token_id",
                                                    "scale_attn_weights",
                                                    "scale_attn_by_inverse_layer_idx",
                                                    "reorder_and_upcast_attn",
                                                    "summary_type",
                                                    "summary_use_proj",
                                                    "summary_activation",
                                                    "summary_proj_to_labels",
                                                    "summary_first_dropout",
                                                    "task_specific_params",
                                                    "output_router_logits",
                                                    "router_aux_loss_coef",
                                                    "router_jitter_noise",
                                                    "aux_loss_alpha",
                                                    "seq_aux",
                                                    "norm_topk_prob",
                                                    "routed_scaling_factor",
                                                    "scoring_func",
                                                    "ep_size",
                                                    "quantization_config",
                                                    "n_ctx",
                                                    "model_type",
                                                    "mlp_bias",
                                                    "attention_bias",
                                                    "num_experts_per_tok",
                                                    "topk_method",
                                                    "rotary_pct",
                                                    "rotary_emb_base",
                                                    "partial_rotary_factor",
                                                    "original_max_position_embeddings",
                                                    "query_pre_attn_scalar",
                                                    "attn_logit_softcapping",
                                                    "final_logit_softcapping",
                                                    "cache_implementation",
                                                    "sliding_window_size",
                                                    "use_mrope"};

/// How deep a user's JSON may nest. Far more than any config, job or cluster file needs; values
/// nested deeper are refused while parsing, before anything (the JSON library's `dump()`, its
/// comparisons) could recurse through them level by level and exhaust the stack.
inline constexpr int deepest_json = 64;

/// `text` parsed as JSON; a syntax error, a number out of range or nesting deeper than
/// `deepest_json` is a `config_error` naming `file`. What every reader of a user's JSON starts
/// with.
inline nlohmann::json parse_json(std::string_view text, const std::string& file) {
  bool too_deep = false;
  const nlohmann::json::parser_callback_t depth = [&](int level, nlohmann::json::parse_event_t e,
                                                      nlohmann::json&) {
    if ((e == nlohmann::json::parse_event_t::object_start ||
         e == nlohmann::json::parse_event_t::array_start) &&
        level >= deepest_json)
      too_deep = true;
    return !too_deep;  // a discarded value ends the nesting at once
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, depth);
  } catch (const nlohmann::json::exception& e) {
    if (!too_deep) throw config_error(file + ": not JSON: " + excerpt(e.what(), 0, 240));
  }
  if (too_deep)
    throw config_error(file + ": nested more than " + std::to_string(deepest_json) +
                       " levels deep");
  return j;
}

/// A JSON value as an error message shows it: a number, true/false or null as written, a string
/// quoted (its first 60 characters), an array or object by its size — never a whole subtree.
inline std::string brief(const nlohmann::json& v) {
  if (v.is_string()) {  // appended: g++ 12 warns (-Wrestrict) on "x" + std::string&&
    std::string out(1, '"');
    out += excerpt(v.get_ref<const std::string&>());
    out += '"';
    return out;
  }
  if (v.is_array()) return "an array of " + std::to_string(v.size());
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
  return v.dump();  // a number, true, false or null: short
}

/// The config's object, the keys read so far, and what to say about the rest.
class config_reader {
 public:
  /// `file` names the input in messages ("config.json").
  explicit config_reader(const nlohmann::json& j, std::string file = "config.json")
      : j_(j), file_(std::move(file)) {
    if (!j_.is_object()) throw config_error(file_ + ": not a JSON object");
  }

  bool has(std::string_view key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  /// Every key asked for so far, present or not: the names a reader knows.
  const std::vector<std::string>& asked() const noexcept { return used_; }
  /// `has(key)`, the key counted as read: a value the caller reads itself.
  bool read_here(std::string_view key) {
    used_.emplace_back(key);
    return has(key);
  }
  /// The first of `keys` present (and not null), or "" for none.
  std::string_view first_of(std::initializer_list<std::string_view> keys) {
    for (const std::string_view k : keys) {
      used_.emplace_back(k);
      if (has(k)) return k;
    }
    return {};
  }
  /// A whole number in [lo, hi] under one of `keys`; `fallback` when none is present, or an
  /// error naming them when there is no fallback.
  double whole(std::initializer_list<std::string_view> keys, double lo, double hi,
               const double* fallback = nullptr) {
    const std::string_view k = first_of(keys);
    if (k.empty()) {
      if (fallback) return *fallback;
      throw config_error(file_ + ": missing " + names(keys));
    }
    const nlohmann::json& v = j_.at(k);
    const double x = v.is_number() ? v.get<double>() : std::nan("");
    if (!v.is_number() || x != std::floor(x) || x < lo || x > hi)
      throw config_error(file_ + ": " + std::string(k) + " must be a whole number in [" +
                         shown(lo) + ", " + shown(hi) + "], got " + brief(v));
    return x;
  }
  double whole(std::initializer_list<std::string_view> keys, double lo, double hi,
               double fallback) {
    return whole(keys, lo, hi, &fallback);
  }
  bool flag(std::string_view key, bool fallback) {
    used_.emplace_back(key);
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    if (!v.is_boolean())
      throw config_error(file_ + ": " + std::string(key) + " must be true or false, got " +
                         brief(v));
    return v.get<bool>();
  }
  std::string text(std::initializer_list<std::string_view> keys, std::string fallback) {
    const std::string_view k = first_of(keys);
    if (k.empty()) return fallback;
    const nlohmann::json& v = j_.at(k);
    if (!v.is_string())
      throw config_error(file_ + ": " + std::string(k) + " must be a string, got " + brief(v));
    return v.get<std::string>();
  }
  /// The strings of the array under `key` (one string counts as an array of it); none when
  /// missing.
  std::optional<std::vector<std::string>> texts(std::string_view key) {
    used_.emplace_back(key);
    if (!has(key)) return std::nullopt;
    const nlohmann::json& v = j_.at(key);
    if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
    const auto bad = [&] {
      return config_error(file_ + ": " + std::string(key) + " must be an array of strings, got " +
                          brief(v));
    };
    if (!v.is_array()) throw bad();
    std::vector<std::string> out;
    for (const nlohmann::json& e : v) {
      if (!e.is_string()) throw bad();
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  double number(std::string_view key, double fallback) {
    used_.emplace_back(key);
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw config_error(file_ + ": " + std::string(key) + " must be a number, got " + brief(v));
    return v.get<double>();
  }
  /// A number in [lo, hi] under `key`; an error naming it when out of range, or when missing
  /// (null counts as missing) and there is no `fallback`.
  double in_range(std::string_view key, double lo, double hi, const double* fallback = nullptr) {
    used_.emplace_back(key);
    if (!has(key)) {
      if (fallback) return *fallback;
      throw config_error(file_ + ": missing " + std::string(key));
    }
    const double x = number(key, 0);
    if (!(x >= lo && x <= hi))
      throw config_error(file_ + ": " + std::string(key) + " must be in [" + shown(lo) + ", " +
                         shown(hi) + "], got " + brief(j_.at(key)));
    return x;
  }
  /// The reader of the object under `key` (an error naming it when missing or not an object).
  config_reader object(std::string_view key) {
    used_.emplace_back(key);
    if (!has(key) || !j_.at(key).is_object())
      throw config_error(file_ + ": " + std::string(key) + " must be an object");
    return config_reader(j_.at(key), file_ + ": " + std::string(key));
  }
  /// Every key neither read nor known to be irrelevant.
  std::vector<std::string> unused_keys() const {
    std::vector<std::string> out;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      const std::string& k = it.key();
      const auto known = [&](std::string_view x) { return x == k; };
      if (std::any_of(used_.begin(), used_.end(), known) ||
          std::any_of(std::begin(ignored_keys), std::end(ignored_keys), known) ||
          k.ends_with("_pdrop") || k.ends_with("_dropout"))
        continue;
      out.push_back(k);
    }
    return out;
  }
  /// "config.json: key 'x' is not used" for each of `unused_keys()`.
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const std::string& k : unused_keys())
      out.push_back(file_ + ": key '" + excerpt(k) + "' is not used");
    return out;
  }
  const std::string& file() const noexcept { return file_; }

 private:
  const nlohmann::json& j_;
  std::string file_;
  std::vector<std::string> used_;

  static std::string names(std::initializer_list<std::string_view> keys) {
    std::string s;
    for (const std::string_view k : keys) s += (s.empty() ? "" : " or ") + std::string(k);
    return s;
  }
};

}  // namespace detail

namespace detail {
/// A multimodal config (LLaVA's, Gemma 3's, Llama 4's, Qwen2-VL's ...) keeps its language model's
/// keys in `text_config`, and none of its own layers.
inline bool language_model_nested(const nlohmann::json& j) {
  const auto has = [&](const char* k) { return j.contains(k) && !j.at(k).is_null(); };
  return j.is_object() && j.contains("text_config") && j.at("text_config").is_object() &&
         !has("num_hidden_layers") && !has("n_layer") && !has("num_layers");
}
}  // namespace detail

namespace detail {
/// The mixture of experts of config `j` (read by `r`; `where` names it) into `m`: the routed
/// experts, their width, the shared ones, where the MoE layers are, the routing groups.
inline void read_moe(config_reader& r, const nlohmann::json& j, const std::string& where,
                     transformer& m) {
  constexpr double most = 1 << 24;
  moe_shape& e = m.moe;
  e.routed = static_cast<int>(
      r.whole({"n_routed_experts", "num_local_experts", "num_experts"}, 0, 1 << 20, 0.0));
  if (e.routed > 0) {
    e.top_k = static_cast<int>(r.whole({"num_experts_per_tok"}, 1, e.routed));
    if (m.model_type == "mixtral") {  // every layer MoE, experts of intermediate_size
      e.expert_ffn = m.ffn;
    } else {
      e.expert_ffn = r.whole({"moe_intermediate_size"}, 1, most);
    }
    const double shared = r.whole({"n_shared_experts"}, 0, 1 << 20, 0.0);
    e.shared_ffn = shared * e.expert_ffn;
    if (r.has("shared_expert_intermediate_size")) {
      e.shared_ffn = r.whole({"shared_expert_intermediate_size"}, 0, most);
      e.shared_gate = e.shared_ffn > 0;
    }
    e.first_dense = static_cast<int>(r.whole({"first_k_dense_replace"}, 0, m.layers, 0.0));
    e.groups = static_cast<int>(r.whole({"n_group"}, 1, e.routed, 0.0));
    if (e.groups > 0) {
      if (e.routed % e.groups != 0)
        throw config_error(where + ": n_group " + std::to_string(e.groups) +
                           " does not divide the " + std::to_string(e.routed) + " routed experts");
      e.group_top_k = static_cast<int>(r.whole({"topk_group"}, 1, e.groups, e.groups));
    }
    if (r.has("decoder_sparse_step")) {
      e.every = static_cast<int>(r.whole({"decoder_sparse_step"}, 1, m.layers));
      e.offset = 1;
    } else {
      e.every = static_cast<int>(r.whole({"moe_layer_freq"}, 1, m.layers, 1.0));
    }
    if (r.read_here("mlp_only_layers") &&
        !(j.at("mlp_only_layers").is_array() && j.at("mlp_only_layers").empty()))
      throw config_error(where +
                         ": mlp_only_layers (dense layers among MoE ones) is not supported");
  }
}
}  // namespace detail

namespace detail {
/// The model types whose every key that shapes a layer or prices it is read, as their Hugging
/// Face class reads it. Another model_type is planned from its keys only when it has none weft
/// does not know (such a key could change a shape), and refused naming them otherwise.
inline constexpr std::string_view read_model_types[] = {
    "gpt2",      "bloom", "llama",     "mistral",     "mixtral",     "qwen2",
    "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gemma",
    "gemma2",    "phi3",  "falcon",    "gpt_neox"};

/// The model types weft reads, as messages name them (`read_model_types`, grouped).
inline constexpr std::string_view read_model_types_text =
    "gpt2, bloom, gpt_neox, falcon, llama, mistral, mixtral, qwen2(_moe), qwen3(_moe), gemma(2), "
    "phi3 and deepseek_v2/v3";

inline bool reads_model_type(std::string_view type) {
  return std::find(std::begin(read_model_types), std::end(read_model_types), type) !=
         std::end(read_model_types);
}

/// The key and value heads: Falcon's one (multi_query) unless its new decoder or plain
/// multi-head attention reads num_kv_heads; num_key_value_heads elsewhere (grouped-query).
inline int read_kv_heads(config_reader& r, const transformer& m) {
  const double heads = m.heads;
  if (m.model_type != "falcon")
    return static_cast<int>(r.whole({"num_key_value_heads"}, 1, heads, heads));
  const bool new_decoder = r.flag("new_decoder_architecture", false);
  const bool multi_query = r.flag("multi_query", true);
  const int kv = static_cast<int>(r.whole({"num_kv_heads", "n_head_kv"}, 1, heads, heads));
  return new_decoder || !multi_query ? kv : 1;
}

/// How a layer is built around its attention and MLP, by model family: the activation and the
/// MLP's width, biases, norms, positions, the tied head.
inline void read_layer_form(config_reader& r, transformer& m) {
  constexpr double most = 1 << 24;
  const std::string& type = m.model_type;
  const bool gpt_family = type == "gpt2" || type == "bloom";
  const bool neox = type == "gpt_neox", falcon = type == "falcon";
  const bool gemma = type == "gemma" || type == "gemma2";

  // The MLP: GPT-2, BLOOM, GPT-NeoX and Falcon: an activation over 4h (n_inner: null) or
  // intermediate_size, two matrices; Gemma's always gated (GeGLU); Llama-style configs gated
  // where the activation is silu (SwiGLU).
  const std::string act = r.text({"hidden_act", "activation_function", "activation"}, "gelu");
  if (gemma) (void)r.text({"hidden_activation"}, "");  // Gemma's name for it, same MLP
  const bool gated_family = r.has("intermediate_size") && act.find("gelu") == std::string::npos;
  const bool gated =
      gemma || (!neox && !falcon && (act == "silu" || act == "swiglu" || gated_family));
  m.mlp = gated ? mlp_kind::gated : mlp_kind::plain;
  m.ffn = r.whole({"intermediate_size", "n_inner", "ffn_hidden_size"}, 1, most, 4 * m.hidden);

  // GPT-2, BLOOM, GPT-NeoX, Falcon: LayerNorm; GPT-2 and BLOOM a bias on every linear, GPT-NeoX
  // on the MLP's and (attention_bias) attention's, Falcon where `bias` says. The rest: RMSNorm,
  // no biases unless said; Qwen2's on q, k and v; Qwen3's norms on queries and keys.
  m.layer_norm = gpt_family || neox || falcon;
  m.linear_bias = gpt_family || (falcon && r.flag("bias", false));
  // Phi-3's projections never have one, whatever its attention_bias says.
  m.attention_bias = !gpt_family && !falcon && type != "phi3" && r.flag("attention_bias", neox);
  m.mlp_bias = neox || (!gpt_family && !falcon && r.flag("mlp_bias", false));
  m.qkv_bias = type == "qwen2_moe" || type == "qwen2";
  m.qk_norm = type == "qwen3" || type == "qwen3_moe";
  // Tied unless the config says: PretrainedConfig's default, which the GPT-2, BLOOM, Falcon and
  // Gemma classes keep; the others' classes untie.
  m.tied_embeddings = r.flag("tie_word_embeddings", gpt_family || falcon || gemma);
  if (type == "gpt2") m.positions = r.whole({"n_positions"}, 1, most, 1024);
  m.embedding_norm = type == "bloom";
  // GPT-2's learned positions, BLOOM's and an alibi Falcon's ALiBi.
  m.rotary = !gpt_family && !(falcon && r.flag("alibi", false));
  if (neox) m.parallel_attention = r.flag("use_parallel_residual", true);
  if (falcon) {
    // Falcon's layer: attention and MLP side by side (parallel_attn, or its new decoder) read
    // one norm's output, or two norms' (num_ln_in_parallel_attn 2, the new decoder's default).
    const bool parallel_attn = r.flag("parallel_attn", true);
    const bool new_decoder = r.flag("new_decoder_architecture", false);
    const double norms = r.whole({"num_ln_in_parallel_attn"}, 1, 2, new_decoder ? 2 : 1);
    m.parallel_attention = parallel_attn || new_decoder;
    m.norms_per_layer = !parallel_attn || norms == 2 ? 2 : 1;
  }
  if (type == "gemma2") m.norms_per_layer = 4;  // before and after attention and the MLP
  for (const char* k : {"attn_pdrop", "resid_pdrop", "attention_dropout", "hidden_dropout"})
    m.dropout = r.number(k, 0) > 0 || m.dropout;
}

/// The sliding window of attention a config sets (Mistral's, Phi-3's, Gemma 2's every other
/// layer, Qwen's where use_sliding_window is on), or 0.
inline double read_sliding_window(config_reader& r, std::string_view type) {
  r.whole({"max_window_layers"}, 0, 1 << 20, 0.0);  // which layers: Qwen's, with the switch
  const bool on = r.flag("use_sliding_window", !type.starts_with("qwen"));  // Qwen's: off
  const std::optional<std::vector<std::string>> kinds = r.texts("layer_types");
  const bool some_layer =
      !kinds || std::find(kinds->begin(), kinds->end(), "sliding_attention") != kinds->end();
  const double window = r.whole({"sliding_window"}, 1, 1e12, 0.0);
  return on && some_layer ? window : 0;
}

/// "'a', 'b' and 'c'" of `items`; past eight, "… and N more".
inline std::string quoted_list(const std::vector<std::string>& items) {
  constexpr std::size_t shown_at_most = 8;
  const std::size_t n = std::min(items.size(), shown_at_most);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += i == 0 ? "" : (i + 1 == items.size() ? " and " : ", ");
    s += '\'';  // appended: g++ 12 warns (-Wrestrict) on "x" + std::string&&
    s += excerpt(items[i]);
    s += '\'';
  }
  if (items.size() > n) s += " and " + std::to_string(items.size() - n) + " more";
  return s;
}
}  // namespace detail

/// Reads a config.json's text; `file` names it in every message and warning. Throws
/// `config_error` for text that is not JSON, a key the model needs that is missing, or a value
/// out of range. A multimodal config's `text_config` is read as the model (its language model;
/// the rest is not planned, and a warning says so).
inline hf_model read_hf_config(std::string_view text, const std::string& file = "config.json") {
  const nlohmann::json whole = detail::parse_json(text, file);
  const bool nested = detail::language_model_nested(whole);
  const nlohmann::json& j = nested ? whole.at("text_config") : whole;
  const std::string where = nested ? file + ": text_config" : file;
  detail::config_reader r(j, where);
  hf_model out;
  out.file = file;
  if (nested)
    out.warnings.push_back(file +
                           ": the language model of text_config is planned; the rest of the "
                           "model (vision, audio) is not");
  transformer& m = out.model;
  constexpr double most = 1 << 24;  // layers, heads, widths: far beyond any model, still exact
  m.model_type =
      r.text({"model_type"},
             nested ? detail::config_reader(whole, file).text({"model_type"}, "") : std::string());
  m.layers = static_cast<int>(r.whole({"num_hidden_layers", "n_layer", "num_layers"}, 1, 1 << 20));
  m.hidden = r.whole({"hidden_size", "n_embd", "n_embed", "d_model"}, 1, most);
  m.heads = static_cast<int>(r.whole({"num_attention_heads", "n_head"}, 1, most));
  m.kv_heads = detail::read_kv_heads(r, m);
  if (m.heads % m.kv_heads != 0)
    throw config_error(where + ": num_attention_heads (" + std::to_string(m.heads) +
                       ") must be a multiple of num_key_value_heads (" +
                       std::to_string(m.kv_heads) + ")");
  m.head_dim = r.whole({"head_dim"}, 1, most, m.hidden / m.heads);
  if (!r.has("head_dim") && std::fmod(m.hidden, m.heads) != 0)
    throw config_error(where + ": hidden size " + std::to_string(static_cast<long long>(m.hidden)) +
                       " is not a multiple of the " + std::to_string(m.heads) + " heads");
  m.vocab = r.whole({"vocab_size", "padded_vocab_size"}, 1, most);
  detail::read_layer_form(r, m);
  read_moe(r, j, where, m);

  // Multi-head latent attention.
  mla_shape& a = m.mla;
  a.kv_lora_rank = r.whole({"kv_lora_rank"}, 0, most, 0.0);
  if (a.kv_lora_rank > 0) {
    a.q_lora_rank = r.whole({"q_lora_rank"}, 0, most, 0.0);
    a.qk_rope_head_dim = r.whole({"qk_rope_head_dim"}, 0, most);
    a.qk_nope_head_dim = r.whole({"qk_nope_head_dim"}, 0, most);
    a.v_head_dim = r.whole({"v_head_dim"}, 1, most);
  }
  m.mtp_layers = static_cast<int>(r.whole({"num_nextn_predict_layers"}, 0, 1 << 10, 0.0));
  out.max_positions = r.whole({"max_position_embeddings"}, 1, 1e12, 0.0);
  out.sliding_window = detail::read_sliding_window(r, m.model_type);
  // No model_type: the documented key styles only — a key weft does not know may change the
  // shape it would plan (Falcon's multi_query and parallel_attn read as Llama's).
  if (m.model_type.empty()) {
    const std::vector<std::string> unknown = r.unused_keys();
    if (!unknown.empty())
      throw config_error(where + ": no model_type, and its key" +
                         (unknown.size() == 1 ? " " : "s ") + detail::quoted_list(unknown) +
                         " may change the model's shape; give the model_type its Hugging Face "
                         "class reads (weft reads " +
                         std::string(detail::read_model_types_text) + ")");
  }
  if (!m.model_type.empty() && !detail::reads_model_type(m.model_type)) {
    const std::vector<std::string> unknown = r.unused_keys();
    std::string type = "model_type '";
    type += excerpt(m.model_type);
    type += '\'';
    if (!unknown.empty())
      throw config_error(where + ": " + type + " is not one weft reads, and its key" +
                         (unknown.size() == 1 ? " " : "s ") + detail::quoted_list(unknown) +
                         " may change the model's shape; weft reads " +
                         std::string(detail::read_model_types_text));
    out.warnings.push_back(where + ": " + type +
                           " is not one weft reads; planned from its keys, every one of which "
                           "weft knows");
  }
  for (std::string& w : r.unused()) out.warnings.push_back(std::move(w));
  return out;
}

}  // namespace weft::plan
