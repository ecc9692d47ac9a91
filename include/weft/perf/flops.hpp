// The work of a transformer, per part: FLOPs of one forward pass over a micro-batch, from the
// shapes alone (a multiply-add is 2 FLOPs). `scores` is attention over the whole sequence, as
// Korthikanti et al. 2022 and PaLM count it; a causal model needs only its lower half, which is
// what MFU counts (`model_flops`, docs/planning.md): the FLOPs a step must do, never more than
// its time prices.
#pragma once

#include <weft/perf/transformer.hpp>

namespace weft::perf {

/// One layer's forward FLOPs for `tokens` tokens of sequences `seq` long, by part.
struct layer_flops {
  double projections = 0;  ///< attention's linears (QKV or MLA's latents, the output)
  double scores = 0;       ///< QK^T and the weighted sum of V, over the whole sequence
  double mlp = 0;          ///< the dense MLP, or an MoE layer's shared expert
  double router = 0;       ///< an MoE layer's router
  double experts = 0;      ///< the routed experts a token is sent to (top-k of them)
  /// The matmuls with weights: all but the scores.
  constexpr double weighted() const noexcept { return projections + mlp + router + experts; }
  constexpr double total() const noexcept { return weighted() + scores; }
};

/// A matrix of `in` x `out` applied to `tokens` tokens.
constexpr double matmul_flops(double tokens, double in, double out) noexcept {
  return 2 * tokens * in * out;
}

/// Attention's scores and the weighted sum of the values for `tokens` queries against `keys`
/// keys each, over `heads` heads of `qk_dim` (query-key) and `v_dim` (value) widths: the whole
/// square, as Korthikanti et al. count it; a causal model needs half (`causal_score_flops`).
constexpr double score_flops(double tokens, double keys, double heads, double qk_dim,
                             double v_dim) noexcept {
  return 2 * tokens * keys * heads * (qk_dim + v_dim);
}
/// The causal half of them: what a flash kernel computes for a causal model.
constexpr double causal_score_flops(double tokens, double keys, double heads, double qk_dim,
                                    double v_dim) noexcept {
  return score_flops(tokens, keys, heads, qk_dim, v_dim) / 2;
}

constexpr layer_flops forward_flops(const transformer& m, int layer, double tokens,
                                    double seq) noexcept {
  const double h = m.hidden, a = m.heads;
  layer_flops f;
  double qk_dim = m.head_dim, v_dim = m.head_dim;
  if (m.mla.active()) {
    const mla_shape& l = m.mla;
    qk_dim = l.qk_head_dim();
    v_dim = l.v_head_dim;
    f.projections = (l.q_lora_rank > 0 ? matmul_flops(tokens, h, l.q_lora_rank) +
                                             matmul_flops(tokens, l.q_lora_rank, a * qk_dim)
                                       : matmul_flops(tokens, h, a * qk_dim)) +
                    matmul_flops(tokens, h, l.kv_lora_rank + l.qk_rope_head_dim) +
                    matmul_flops(tokens, l.kv_lora_rank, a * (l.qk_nope_head_dim + v_dim)) +
                    matmul_flops(tokens, a * v_dim, h);
  } else {
    const double q = a * m.head_dim, kv = m.kv_heads * m.head_dim;
    f.projections = matmul_flops(tokens, h, q + 2 * kv) + matmul_flops(tokens, q, h);
  }
  // Each token's query against every key of its sequence, then the weighted sum of the values.
  f.scores = score_flops(tokens, seq, a, qk_dim, v_dim);
  const double per_mlp = m.mlp == mlp_kind::gated ? 3 : 2;
  if (!m.is_moe_layer(layer)) {
    f.mlp = per_mlp * matmul_flops(tokens, h, m.ffn);
    return f;
  }
  const moe_shape& e = m.moe;
  f.router = matmul_flops(tokens, h, e.routed);
  f.experts = e.top_k * per_mlp * matmul_flops(tokens, h, e.expert_ffn);
  f.mlp = per_mlp * matmul_flops(tokens, h, e.shared_ffn);
  return f;
}

/// The LM head's forward FLOPs (the loss's softmax is elementwise, not counted).
constexpr double head_flops(const transformer& m, double tokens) noexcept {
  return matmul_flops(tokens, m.hidden, m.vocab);
}

/// An MTP module's forward FLOPs: its projection of the two joined inputs, its block, and the
/// shared head it predicts with.
constexpr double mtp_flops(const transformer& m, double tokens, double seq) noexcept {
  return matmul_flops(tokens, 2 * m.hidden, m.hidden) +
         forward_flops(m, m.layers - 1, tokens, seq).total() + head_flops(m, tokens);
}

/// What the devices compute in one step besides the model FLOPs: with full recomputation every
/// layer's forward runs again in its backward (Narayanan et al. 2021's hardware count).
constexpr double recomputed_flops(const transformer& m, double tokens, double seq,
                                  bool full_recompute) noexcept {
  if (!full_recompute) return 0;
  double again = 0;
  for (int l = 0; l < m.layers; ++l) again += forward_flops(m, l, tokens, seq).total();
  return again;
}

/// How model FLOPs count attention's scores: the causal half a causal language model needs
/// (FlashAttention-2, arXiv 2307.08691 §4.1, halves them so), or the whole square (Korthikanti
/// et al. 2022, App. A; PaLM), as the papers that report MFU that way count it.
enum class attention_count : unsigned char { causal, whole };

/// Model FLOPs of one training step over `tokens` tokens of sequences `seq` long: the forward
/// and a backward of twice its work, every layer, the head and the MTP modules; no
/// recomputation counted. MFU's definition (the default, `causal`): what the step must compute —
/// the masked half of attention is not needed, and a kernel that computes it anyway (attention
/// without flash) does work the model does not count. With `whole`, Korthikanti et al.'s count.
constexpr double model_flops(const transformer& m, double tokens, double seq,
                             attention_count count = attention_count::causal) noexcept {
  double forward = head_flops(m, tokens) + m.mtp_layers * mtp_flops(m, tokens, seq);
  double scores = m.mtp_layers * forward_flops(m, m.layers - 1, tokens, seq).scores;
  for (int l = 0; l < m.layers; ++l) {
    const layer_flops f = forward_flops(m, l, tokens, seq);
    forward += f.total();
    scores += f.scores;
  }
  return 3 * (forward - (count == attention_count::causal ? scores / 2 : 0));
}

}  // namespace weft::perf
