// A transformer as a training job sees it: the shapes a Hugging Face config.json states, and
// what follows from them alone — parameters per part, FLOPs per token, the kinds of layer in
// order. No parallelism here (plan/memory.hpp and the cost side split it); no file format
// (plan/hf_config.hpp reads one).
#pragma once

#include <cstdint>
#include <string>

namespace weft::perf {

/// The feed-forward block: two matrices around an elementwise activation (GPT-2's GeLU), or a
/// gated unit of three (Llama's SwiGLU: gate and up, their product, down).
enum class mlp_kind : std::uint8_t { plain, gated };

/// Mixture-of-experts layers. `routed == 0`: a dense model.
struct moe_shape {
  int routed = 0;         ///< routed experts per MoE layer
  int top_k = 0;          ///< experts each token is sent to
  double expert_ffn = 0;  ///< each routed expert's inner width
  double shared_ffn = 0;  ///< the shared expert's inner width (all shared experts together)
  int first_dense = 0;    ///< layers before the first MoE layer (DeepSeek's first_k_dense_replace)
  /// From there, layer l is an MoE layer when (l + offset) % every == 0: DeepSeek's
  /// moe_layer_freq counts from 0, Qwen's decoder_sparse_step from 1.
  int every = 1, offset = 0;
  bool shared_gate = false;  ///< a sigmoid gate Linear(h, 1) on the shared expert (Qwen2-MoE)
  /// Group-limited routing (DeepSeek's n_group, topk_group): the experts in `groups` equal
  /// groups, each token's chosen from its best `group_top_k` groups. 0: any expert.
  int groups = 0, group_top_k = 0;
  constexpr bool active() const noexcept { return routed > 0; }
};

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values through low-rank
/// latents. `kv_lora_rank == 0`: ordinary attention.
struct mla_shape {
  double q_lora_rank = 0;  ///< 0: queries projected directly
  double kv_lora_rank = 0;
  double qk_rope_head_dim = 0, qk_nope_head_dim = 0, v_head_dim = 0;
  constexpr bool active() const noexcept { return kv_lora_rank > 0; }
  constexpr double qk_head_dim() const noexcept { return qk_rope_head_dim + qk_nope_head_dim; }
};

/// The architecture: what a config.json says, in one vocabulary for every model type.
struct transformer {
  std::string model_type;  ///< as the config names it: gpt2, llama, deepseek_v3, ...
  int layers = 0;
  double hidden = 0;
  int heads = 0, kv_heads = 0;  ///< kv_heads < heads: grouped-query attention
  double head_dim = 0;          ///< per head; hidden / heads unless the config says otherwise
  double ffn = 0;               ///< the dense MLP's inner width
  double vocab = 0;
  mlp_kind mlp = mlp_kind::gated;
  bool tied_embeddings = false;  ///< the LM head reuses the input embedding
  bool linear_bias = false;      ///< every linear has a bias (GPT-2, BLOOM)
  bool qkv_bias = false;         ///< only the query/key/value projections have one (Qwen2)
  bool attention_bias = false;   ///< the attention projections have one (Llama's attention_bias)
  bool mlp_bias = false;         ///< the MLP's linears have one (Llama's mlp_bias)
  bool layer_norm = false;       ///< LayerNorm (weight and bias); else RMSNorm (weight only)
  double positions = 0;          ///< learned position embeddings (GPT-2's n_positions); 0: none
  bool embedding_norm = false;   ///< a norm right after the embedding (BLOOM)
  bool rotary = true;    ///< rotary position embeddings on queries and keys (not GPT-2's, BLOOM's)
  bool dropout = false;  ///< trained with dropout (its masks are kept for the backward)
  /// The layer's own norms: 2 (before attention, before the MLP); 1 where attention and the MLP
  /// read one norm's output (Falcon-7B); 4 where each block's output is normed too (Gemma 2).
  int norms_per_layer = 2;
  bool qk_norm = false;  ///< an RMSNorm over each head's queries and keys (Qwen3)
  /// Attention and the MLP read the same input and add their outputs to the residual together
  /// (GPT-NeoX's use_parallel_residual, Falcon's parallel_attn).
  bool parallel_attention = false;
  moe_shape moe;
  mla_shape mla;
  int mtp_layers = 0;  ///< multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers)

  constexpr bool is_moe_layer(int layer) const noexcept {
    return moe.active() && layer >= moe.first_dense &&
           (layer + moe.offset) % (moe.every > 0 ? moe.every : 1) == 0;
  }
  constexpr int moe_layers() const noexcept {
    int n = 0;
    for (int l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
    return n;
  }
};

/// Parameters of one part of the model.
struct parameter_count {
  double attention = 0;  ///< projections, their biases, MLA's latents and norms
  double mlp = 0;        ///< a dense layer's MLP, or an MoE layer's shared expert, router, gates
  double experts = 0;    ///< an MoE layer's routed experts (all of them)
  double norms = 0;      ///< the layer's own norms
  constexpr double total() const noexcept { return attention + mlp + experts + norms; }
};

/// One attention block's parameters.
constexpr double attention_parameters(const transformer& m) noexcept {
  const double h = m.hidden;
  if (m.mla.active()) {
    const mla_shape& a = m.mla;
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank +  // down, its norm
                                             a.q_lora_rank * m.heads * a.qk_head_dim()
                                       : h * m.heads * a.qk_head_dim();
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                      a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    return q + kv + m.heads * a.v_head_dim * h;
  }
  const double q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  double p = h * (q + 2 * kv) + q * h;
  if (m.linear_bias || m.attention_bias) p += q + 2 * kv + h;
  if (m.qkv_bias) p += q + 2 * kv;
  // One norm's weights (and LayerNorm's biases) a head dimension, shared by the heads.
  if (m.qk_norm) p += 2 * m.head_dim * (m.layer_norm ? 2 : 1);
  return p;
}

/// An MLP of inner width `ffn` (a dense layer's, one expert's, the shared expert's).
constexpr double mlp_parameters(const transformer& m, double ffn) noexcept {
  const double h = m.hidden;
  const double matrices = m.mlp == mlp_kind::gated ? 3 * h * ffn : 2 * h * ffn;
  return matrices +
         (m.linear_bias || m.mlp_bias ? ffn * (m.mlp == mlp_kind::gated ? 2 : 1) + h : 0);
}

constexpr double norm_parameters(const transformer& m) noexcept {
  return m.layer_norm ? 2 * m.hidden : m.hidden;
}

/// Layer `layer`'s parameters (0-based; MTP modules are not layers here).
constexpr parameter_count layer_parameters(const transformer& m, int layer) noexcept {
  parameter_count c;
  c.attention = attention_parameters(m);
  c.norms = m.norms_per_layer * norm_parameters(m);
  if (!m.is_moe_layer(layer)) {
    c.mlp = mlp_parameters(m, m.ffn);
    return c;
  }
  const moe_shape& e = m.moe;
  c.experts = e.routed * mlp_parameters(m, e.expert_ffn);
  c.mlp = m.hidden * e.routed;  // the router (DeepSeek-V3's balancing bias is a buffer)
  if (e.shared_ffn > 0) c.mlp += mlp_parameters(m, e.shared_ffn);
  if (e.shared_gate) c.mlp += m.hidden;
  return c;
}

/// The parameters outside the layers.
struct edge_parameters {
  double embedding = 0;  ///< tokens (and learned positions, and BLOOM's norm after them)
  double head = 0;       ///< the LM head; 0 when tied to the embedding
  double final_norm = 0;
  double mtp = 0;  ///< the multi-token-prediction modules (their block, projection and norms)
};

constexpr edge_parameters edges(const transformer& m) noexcept {
  edge_parameters e;
  e.embedding =
      m.vocab * m.hidden + m.positions * m.hidden + (m.embedding_norm ? norm_parameters(m) : 0);
  e.head = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  e.final_norm = norm_parameters(m);
  // DeepSeek-V3's MTP module (arXiv 2412.19437, 2.2): two norms on its inputs, a projection from
  // the two joined (2h -> h), one block like the last layer, and a norm before the shared head;
  // the embedding and the head are the main model's.
  const parameter_count block = layer_parameters(m, m.layers - 1);
  e.mtp = m.mtp_layers * (3 * norm_parameters(m) + 2 * m.hidden * m.hidden + block.total());
  return e;
}

/// Every parameter: the layers, the embedding and head, the MTP modules.
constexpr double total_parameters(const transformer& m) noexcept {
  const edge_parameters e = edges(m);
  double p = e.embedding + e.head + e.final_norm + e.mtp;
  for (int l = 0; l < m.layers; ++l) p += layer_parameters(m, l).total();
  return p;
}

/// The parameters one token uses on its way through the main model (the model card's
/// "activated"): every layer's attention, norms and shared parts, top-k of its routed experts,
/// the embedding and the head; not the MTP modules.
constexpr double activated_parameters(const transformer& m) noexcept {
  const edge_parameters e = edges(m);
  double p = e.embedding + e.head + e.final_norm;
  for (int l = 0; l < m.layers; ++l) {
    const parameter_count c = layer_parameters(m, l);
    p += c.attention + c.mlp + c.norms;
    if (m.is_moe_layer(l)) p += m.moe.top_k * mlp_parameters(m, m.moe.expert_ffn);
  }
  return p;
}

}  // namespace weft::perf
