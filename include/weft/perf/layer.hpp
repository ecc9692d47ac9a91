// One transformer layer as one device runs it for one micro-batch: every kernel of its forward
// and backward pass — the matmuls with their shapes, the memory-bound kernels with the bytes
// they read and write, attention's core — under tensor (and sequence) and expert parallelism.
// The bytes are counted tensor by tensor, as Korthikanti et al. 2022 (arXiv 2205.05198, §4)
// count a layer's activations: a kernel reads its inputs and writes its outputs once, at 2 bytes
// an element in bf16 and 1 for a dropout mask. Priced by `time_of` on a device (perf/device.hpp).
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include <weft/core/time.hpp>
#include <weft/perf/device.hpp>
#include <weft/perf/flops.hpp>
#include <weft/perf/matmul.hpp>
#include <weft/perf/recompute.hpp>
#include <weft/perf/transformer.hpp>

namespace weft::perf {

/// How one device holds a layer's work for one micro-batch.
struct layer_shard {
  double micro_batch = 1;  ///< sequences
  double seq = 0;          ///< tokens a sequence has (what each query attends over)
  int cp = 1;              ///< context parallelism: a device holds seq / cp of each sequence
  int tp = 1;
  int ep = 1;
  int etp = 0;                     ///< the experts' tensor parallelism; 0: tp's
  bool sequence_parallel = false;  ///< norms, dropouts and residuals on a 1/tp shard
  bool flash_attention = true;     ///< attention's core as one fused kernel
  dtype type = dtype::bf16;        ///< the layers' linears (attention's core and the router: bf16)
  /// FP8 current scaling (Transformer Engine's Float8CurrentScaling, Megatron's `--fp8-recipe
  /// tensorwise`; torchao's dynamic scales): each tensor's scale from its own amax, read in a
  /// pass of its own before the cast — delayed scaling takes it from earlier steps' history
  bool current_scaling = false;
  /// Bytes a weight's gradient costs to accumulate, a pass: 0 where the dW matmul adds into
  /// the accumulated gradient itself (Megatron's gradient-accumulation fusion, GEMM with
  /// beta = 1); else a pass of its own reading the new gradient and reading and writing the
  /// accumulated one (PyTorch's AccumulateGrad, Megatron's `main_grad.add_`).
  double accumulate_bytes = 0;
  /// PyTorch's eager operations for the RMSNorms, a gated activation and rotary embeddings, each
  /// op a kernel (`eager_bytes`), where Megatron and torch.compile run one fused kernel.
  bool eager = false;
  /// With `eager`, the RMSNorms one fused kernel all the same (apex's FusedRMSNorm,
  /// FlashAttention's RMSNorm kernel): what eager trainers most often swap in.
  bool fused_norm = false;
  /// Whether the RMSNorms run as PyTorch's eager operations.
  constexpr bool eager_norms() const noexcept { return eager && !fused_norm; }

  constexpr double tokens() const noexcept { return micro_batch * seq / cp; }
};

/// How a linear's operands are held and, in FP8, cast (Transformer Engine's linears): their type;
/// the share of the input's and of the output gradient's rows this device casts — a
/// sequence-parallel shard (1/tp) is cast before its FP8 all-gather; and, with current scaling,
/// whether each is read once more for its amax first — not an input whose norm computed the
/// amax as it wrote it (Transformer Engine's fused norm and linear: qkv, a dense MLP's fc1).
struct linear_operands {
  dtype type = dtype::bf16;
  bool current_scaling = false;
  double input_share = 1, gradient_share = 1;
  bool input_amax = true;
  double accumulate_bytes = 0;  ///< `layer_shard::accumulate_bytes`, a weight
};

/// The operands of the layers' linears on a device holding `s`, as a linear fed whole.
constexpr linear_operands linears_of(const layer_shard& s) noexcept {
  return {
      .type = s.type, .current_scaling = s.current_scaling, .accumulate_bytes = s.accumulate_bytes};
}

/// How Megatron parallelises a linear over tp: `column` (its input gathered first with sequence
/// parallelism), `row` (its output's gradient gathered first in the backward), or neither.
enum class split_linear : unsigned char { whole, column, row };

/// The operands of a `how` linear on a device holding `s`: with sequence parallelism what is
/// gathered is cast on this device's 1/tp shard first (Transformer Engine quantizes before its
/// all-gather); `after_norm`: a column-parallel linear fused with the norm before it.
constexpr linear_operands linears_of(const layer_shard& s, split_linear how,
                                     bool after_norm = false) noexcept {
  linear_operands o = linears_of(s);
  const double shard = s.sequence_parallel && s.tp > 1 ? 1.0 / s.tp : 1.0;
  if (how == split_linear::column) {
    o.input_share = shard;
    o.input_amax = !after_norm;
  }
  if (how == split_linear::row) o.gradient_share = shard;
  return o;
}

/// What a kernel is, for its price and for what recomputation runs again.
enum class kernel_kind : unsigned char {
  matmul,     ///< priced by its shape (perf/matmul.hpp)
  streamed,   ///< memory-bound: its bytes at the memory's sustained bandwidth
  attention,  ///< fused attention: its FLOPs at the device's attention rate
};

struct kernel {
  std::string_view name;
  kernel_kind kind = kernel_kind::streamed;
  gemm shape{};           ///< a matmul's
  double bytes = 0;       ///< a streamed kernel's reads and writes
  double flops = 0;       ///< a fused attention kernel's
  bool core = false;      ///< attention's core (selective recomputation runs it again)
  bool weight = false;    ///< a weight's gradient (the dW of a split backward)
  double seq = 0;         ///< fused attention's: the tokens of a sequence it attends over
  bool backward = false;  ///< fused attention's: the backward pass
  /// The part selective recomputation runs it again with (attention's core: `core`).
  recompute_module module = recompute_module::none;
  double head_dim = 128;  ///< fused attention's: the queries' and keys' head dimension
};

/// What a memory-bound step moves per value, forward and backward, and in how many kernels: as
/// one fused kernel runs it, and as PyTorch's eager operations do — each op a kernel of its own
/// that reads and writes its operands again. Counted op by op from the public code, 2 bytes a
/// bf16 value, 4 an fp32 one:
/// - RMSNorm as Llama's reference and Hugging Face's LlamaRMSNorm write it (x.float(), pow(2),
///   mean, + eps, rsqrt, times x, back to bf16, times the weight): the cast (2 + 4), the square
///   (4 + 4), the mean (4), the product (4 + 4), the cast back (4 + 2), the weight's product
///   (2 + 2): 36 in 8 kernels. Autograd: the weight's product, dy w (2 + 2) and dW's dy y and
///   sum (2 + 2 + 2, 2): 12; the cast (2 + 4); the product's g r (4 + 4) and g x summed for
///   r (4 + 4 + 4, 4): 24; the mean's expanded gradient (4); pow's `grad * 2 * x.pow(1)`
///   (4 + 4, 4 + 4, 4 + 4 + 4): 28; the two paths' sum (4 + 4 + 4); the cast (4 + 2): 92 in
///   15 kernels. Fused: reads x, writes y (4); reads x and dy, writes dx (6).
/// - a gated activation, per value of the MLP's width: silu (2 + 2) and the product (2 + 2 +
///   2): 10 in 2; backward the product's two gradients (2 + 2 + 2 twice) and silu's (2 + 2 +
///   2): 18 in 3. Fused: reads both, writes one (6); reads both and dy, writes two (10).
/// - rotary embeddings, per query and key value (torchtitan's and Llama's complex product):
///   the cast to fp32 (2 + 4), the product (4 + 4), the cast back (4 + 2): 20 in 3, the
///   backward the same. Fused: 4 and 4.
struct eager_bytes {
  double forward, backward;
  int forward_kernels = 1, backward_kernels = 1;
};
inline constexpr eager_bytes rms_norm_bytes[2] = {{4, 6}, {36, 92, 8, 15}};
inline constexpr eager_bytes gated_bytes[2] = {{6, 10}, {10, 18, 2, 3}};
inline constexpr eager_bytes rotary_bytes[2] = {{4, 4}, {20, 20, 3, 3}};

/// The loss as Llama's reference (`self.output(h).float()`) and PyTorch trainers built like it
/// compute it, per logit of the whole vocabulary: the logits cast to fp32 (2 + 4) and PyTorch's
/// cross_entropy — log_softmax over a row too long to stay on chip reads it three times (its
/// max, its sum of exponentials, the output) and writes it once (16), nll_loss a value a token:
/// 22 in 3 kernels. Backward: nll_loss's gradient, zero-filled (4) and scattered into;
/// log_softmax's, the gradient summed (4) then read with the output to write the input's
/// (4 + 4 + 4); the cast back (4 + 2): 26 in 4. (Megatron's vocabulary-parallel loss:
/// `plan::head_kernels`; the logits' gather: `eager_gather_bytes`.)
inline constexpr eager_bytes eager_loss_bytes{22, 26, 3, 4};

/// The copies of gathering the logits whole over tp the way fairscale's and Scaling's gathers
/// do, per logit of the whole vocabulary: `all_gather` into a list, which PyTorch's NCCL group
/// runs into one flat buffer and copies out (2 + 2), then `torch.cat` (2 + 2): 8 in 2 kernels;
/// backward the rank's slice made contiguous (2 + 2 per logit of its 1/tp), counted by the
/// caller over its shard. Nothing without tensor parallelism.
inline constexpr eager_bytes eager_gather_bytes{8, 4, 2, 1};

/// The host's time to launch one kernel: a pass of n kernels takes at least n of them, however
/// short its kernels (PyTorch's Holistic Trace Analysis: "usually, the launch time on the CPU side
/// is between 5-20 microseconds"; the lower end, a framework with little Python in the loop).
inline constexpr seconds launch_interval{5e-6};

/// A layer's kernels, in the order they run.
struct layer_kernels {
  std::vector<kernel> forward, backward;
};

namespace detail {
constexpr double bf16 = 2, mask = 1;  // bytes an element

/// Y[m x n] = X[m x k] W[k x n] forward, and its backward: dX = dY W^T, dW = X^T dY. In FP8,
/// X before the forward and dY before the backward are cast from bf16 and transposed for dW:
/// one fused pass that reads 2 bytes a value and writes 1 twice (Transformer Engine's
/// `cast_transpose`; the weights' casts, once a step, are left out), over the rows this device
/// casts (`linear_operands`); with current scaling each is read once more before, for its amax
/// (2 bytes a value; Transformer Engine's `Float8CurrentScalingQuantizer`).
inline void linear(layer_kernels& out, std::string_view name, double m, double n, double k,
                   const linear_operands& o, double batch = 1) {
  const dtype t = o.type;
  if (t == dtype::fp8) {
    const double amax = o.current_scaling ? 2 : 0;
    const double input = (4 + (o.input_amax ? amax : 0)) * m * k * batch * o.input_share;
    const double gradient = (4 + amax) * m * n * batch * o.gradient_share;
    out.forward.push_back({name, kernel_kind::streamed, {}, input});
    out.backward.push_back({name, kernel_kind::streamed, {}, gradient});
  }
  out.forward.push_back({name, kernel_kind::matmul, {m, n, k, batch, t}});
  out.backward.push_back({name, kernel_kind::matmul, {m, k, n, batch, t}});
  out.backward.push_back({name, kernel_kind::matmul, {k, n, m, batch, t}, 0, 0, false, true});
  if (o.accumulate_bytes > 0)  // dW added to what is accumulated: weight-gradient work too
    out.backward.push_back(
        {name, kernel_kind::streamed, {}, k * n * batch * o.accumulate_bytes, 0, false, true});
}
/// A memory-bound kernel reading and writing `forward` bytes, and its gradient `backward`.
inline void streamed(layer_kernels& out, std::string_view name, double forward, double backward,
                     bool core = false) {
  out.forward.push_back({name, kernel_kind::streamed, {}, forward, 0, core});
  if (backward > 0) out.backward.push_back({name, kernel_kind::streamed, {}, backward, 0, core});
}

/// A memory-bound step over `values` values, as `b` says: its bytes spread over its kernels.
inline void elementwise(layer_kernels& out, std::string_view name, const eager_bytes& b,
                        double values) {
  for (int i = 0; i < b.forward_kernels; ++i)
    out.forward.push_back(
        {name, kernel_kind::streamed, {}, b.forward * values / b.forward_kernels, 0, false});
  for (int i = 0; i < b.backward_kernels; ++i)
    out.backward.push_back(
        {name, kernel_kind::streamed, {}, b.backward * values / b.backward_kernels, 0, false});
}

/// Attention's core on one device: one fused flash kernel (the causal half of the scores and
/// of the weighted sum; its backward 2.5 times the forward, the scores computed again), or
/// without it the batched matmuls of the scores and the weighted sum, and between them the
/// fused scaled, masked softmax and the dropout over the whole score matrix.
inline void attention_core(layer_kernels& out, const transformer& m, const layer_shard& s,
                           double qk_dim, double v_dim) {
  const double T = s.tokens(), heads = m.heads / static_cast<double>(s.tp);
  const double queries = T / s.micro_batch, keys = s.seq, batch = s.micro_batch * heads;
  if (s.flash_attention) {
    // The causal half of the scores and of the weighted sum: what a flash kernel computes.
    const double flops = causal_score_flops(T, keys, heads, qk_dim, v_dim);
    const double tokens = s.seq / s.cp;  // what each of its calls attends over
    kernel fused{"attention", kernel_kind::attention, {}, 0, flops, true, false, tokens};
    fused.head_dim = qk_dim;
    out.forward.push_back(fused);
    fused.flops *= flash_backward_work;
    fused.backward = true;
    out.backward.push_back(fused);
  } else {
    const double S = batch * queries * keys;  // the score matrix's elements on this device
    // In bf16 whatever the linears' type: no FP8 recipe computes attention's core in FP8.
    constexpr dtype t = dtype::bf16;
    out.forward.push_back(
        {"scores", kernel_kind::matmul, {queries, keys, qk_dim, batch, t}, 0, 0, true});
    streamed(out, "softmax", 2 * bf16 * S, 3 * bf16 * S, true);
    if (m.dropout)
      streamed(out, "attention dropout", (2 * bf16 + mask) * S, (2 * bf16 + mask) * S, true);
    out.forward.push_back(
        {"weighted sum", kernel_kind::matmul, {queries, v_dim, keys, batch, t}, 0, 0, true});
    // Backward: dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q.
    for (const gemm g :
         {gemm{queries, keys, v_dim, batch, t}, gemm{keys, v_dim, queries, batch, t},
          gemm{queries, qk_dim, keys, batch, t}, gemm{keys, qk_dim, queries, batch, t}})
      out.backward.push_back({"attention grads", kernel_kind::matmul, g, 0, 0, true});
  }
}

/// The kernels `push` adds to `out` belong to recomputable part `part`.
template <class Push>
void tagged(layer_kernels& out, recompute_module part, Push&& push) {
  const std::size_t f = out.forward.size(), b = out.backward.size();
  push();
  for (std::size_t i = f; i < out.forward.size(); ++i) out.forward[i].module = part;
  for (std::size_t i = b; i < out.backward.size(); ++i) out.backward[i].module = part;
}

/// Attention's projections of queries, keys and values (MLA's latents and up projections, or
/// one fused linear, with Qwen3's norms over each head's queries and keys) for `T` tokens on a
/// device of `s`; the head dims of the scores and the values.
inline std::pair<double, double> qkv_projections(layer_kernels& out, const transformer& m,
                                                 const layer_shard& s, double T) {
  const double h = m.hidden, tp = s.tp, heads = m.heads / tp;
  if (!m.mla.active()) {
    const double kv = m.kv_heads * m.head_dim / tp;
    linear(out, "qkv", T, heads * m.head_dim + 2 * kv, h,
           linears_of(s, split_linear::column, true));
    if (m.qk_norm) {
      const double qk = T * (heads * m.head_dim + kv);
      // Not Megatron's `layernorm` recomputation, which runs the block's input norms again.
      elementwise(out, "query and key norms", rms_norm_bytes[s.eager_norms() && !m.layer_norm], qk);
    }
    return {m.head_dim, m.head_dim};
  }
  const mla_shape& a = m.mla;
  const double qk_dim = a.qk_head_dim(), v_dim = a.v_head_dim;
  if (a.q_lora_rank > 0) {
    linear(out, "q down", T, a.q_lora_rank, h, linears_of(s));
    elementwise(out, "q latent norm", rms_norm_bytes[s.eager_norms()], T * a.q_lora_rank);
    tagged(out, recompute_module::mla_up_proj,
           [&] { linear(out, "q up", T, heads * qk_dim, a.q_lora_rank, linears_of(s)); });
  } else {  // no query latent: Megatron recomputes the whole query projection with them
    tagged(out, recompute_module::mla_up_proj,
           [&] { linear(out, "q", T, heads * qk_dim, h, linears_of(s)); });
  }
  linear(out, "kv down", T, a.kv_lora_rank + a.qk_rope_head_dim, h, linears_of(s));
  elementwise(out, "kv latent norm", rms_norm_bytes[s.eager_norms()], T * a.kv_lora_rank);
  tagged(out, recompute_module::mla_up_proj, [&] {
    linear(out, "kv up", T, heads * (a.qk_nope_head_dim + v_dim), a.kv_lora_rank, linears_of(s));
  });
  return {qk_dim, v_dim};
}

}  // namespace detail

/// The kernels of layer `layer` of model `m` on one device holding `s`. Norms read x and write
/// y, and in the backward read x and dy and write dx; an elementwise activation the same over
/// the MLP's width (a gated one reads two inputs); a dropout also writes (forward) or reads
/// (backward) its 1-byte mask; a residual add reads two and writes one, its gradient passing
/// through. Without flash attention the scores are batched matmuls with a fused scaled, masked
/// softmax and a dropout between them over the whole (heads x queries x keys) matrix.
inline layer_kernels layer_kernels_of(const transformer& m, int layer, const layer_shard& s) {
  using namespace detail;
  layer_kernels out;
  const double T = s.tokens(), h = m.hidden, tp = s.tp;
  const double Es = T * h / (s.sequence_parallel ? tp : 1);  // what norms and residuals touch
  const double heads = m.heads / tp;
  const auto tagged = [&](recompute_module part, auto&& push) { detail::tagged(out, part, push); };
  // PyTorch's LayerNorm is one native kernel, eager or not; its RMSNorm a composite.
  const eager_bytes norm_bytes = rms_norm_bytes[s.eager_norms() && !m.layer_norm];
  const auto norm = [&](std::string_view name) {
    tagged(recompute_module::layernorm, [&] { elementwise(out, name, norm_bytes, Es); });
  };
  // `more` inputs beyond the block's output and the residual: parallel attention adds the
  // attention's output and the MLP's in one kernel.
  const auto residual = [&](std::string_view name, int more = 0) {
    if (m.dropout)  // bias, dropout and the add, fused (Megatron's bias_dropout_add)
      streamed(out, name, (3 * bf16 + mask) * Es + more * bf16 * Es, (2 * bf16 + mask) * Es);
    else
      streamed(out, name, (3 + more) * bf16 * Es, 0);
  };

  // Attention.
  norm("input norm");
  const auto [qk_dim, v_dim] = qkv_projections(out, m, s, T);
  if (m.rotary) {  // rotary embeddings on the queries and keys
    const double qk = T * (heads + (m.mla.active() ? 1 : m.kv_heads / tp)) *
                      (m.mla.active() ? m.mla.qk_rope_head_dim : m.head_dim);
    // MLA's rotary embeddings are part of its up projections' recomputation.
    tagged(m.mla.active() ? recompute_module::mla_up_proj : recompute_module::none,
           [&] { elementwise(out, "rotary", rotary_bytes[s.eager], qk); });
  }
  detail::attention_core(out, m, s, qk_dim, v_dim);
  linear(out, "out projection", T, h, heads * v_dim, linears_of(s, split_linear::row));
  if (m.norms_per_layer == 4) elementwise(out, "attention output norm", norm_bytes, Es);
  // In parallel attention the MLP reads the attention's input; both outputs join the residual
  // in one add after the MLP.
  if (!m.parallel_attention) residual("attention residual");

  // The MLP, or the experts.
  if (m.norms_per_layer > 1) norm("post-attention norm");
  const bool gated = m.mlp == mlp_kind::gated;
  // `split`: a dense MLP's or a shared expert's linears are split over tp (the dense fc1 fused
  // with its norm); the routed experts' are fed whole by their dispatcher.
  const auto mlp = [&](std::string_view up, std::string_view act, std::string_view down, double ffn,
                       double tokens, double batch_of, bool split, bool after_norm = false,
                       recompute_module act_part = recompute_module::none) {
    const double F = tokens * ffn * batch_of;
    const linear_operands in = split ? linears_of(s, split_linear::column, after_norm)
                                     : linears_of(s),
                          back = split ? linears_of(s, split_linear::row) : linears_of(s);
    linear(out, up, tokens, (gated ? 2 : 1) * ffn, h, in, batch_of);
    tagged(act_part, [&] {
      if (gated)
        elementwise(out, act, gated_bytes[s.eager], F);
      else
        streamed(out, act, 2 * bf16 * F, 3 * bf16 * F);
    });
    linear(out, down, tokens, h, ffn, back, batch_of);
  };
  if (!m.is_moe_layer(layer)) {
    tagged(recompute_module::mlp,
           [&] { mlp("fc1", "activation", "fc2", m.ffn / tp, T, 1, true, true); });
  } else {
    const moe_shape& e = m.moe;
    // Each rank routes its own tokens: with sequence parallelism a 1/tp share of them (the
    // experts' tensor-parallel ranks then gather what they compute on).
    const double mine = T / (s.sequence_parallel ? tp : 1);
    linear(out, "router", mine, e.routed, h, {dtype::bf16});  // the gate stays in bf16
    streamed(out, "top-k", 2 * 4 * mine * e.routed, 2 * 4 * mine * e.routed);  // fp32 scores
    const double routed = mine * e.top_k * h;  // the copies this device sends and gets back
    streamed(out, "permute", 2 * bf16 * routed, 2 * bf16 * routed);
    // Balanced routing: each of its routed / ep experts gets the tokens of the ep devices that
    // chose it, T ep top_k / routed, as one grouped matmul.
    // The experts' own tensor parallelism: each expert split over etp devices, which together
    // hold etp / tp of the tokens (all of them where the experts take tp's).
    const double etp = s.etp > 0 ? s.etp : tp;
    const double local = e.routed / s.ep, per_expert = T * etp / tp * s.ep * e.top_k / e.routed;
    mlp("experts up", "experts activation", "experts down", e.expert_ffn / etp, per_expert, local,
        false, false, recompute_module::moe_act);
    streamed(out, "unpermute", 2 * bf16 * routed, 2 * bf16 * routed);
    if (e.shared_ffn > 0)
      mlp("shared up", "shared activation", "shared down", e.shared_ffn / tp, T, 1, true);
  }
  if (m.norms_per_layer == 4) elementwise(out, "mlp output norm", norm_bytes, Es);
  residual("mlp residual", m.parallel_attention ? 1 : 0);
  return out;
}

/// A kernel's time on device `d`; fused attention at the device's measured rate for its length
/// and head dim (`device::flash_rate`), or `attention_flops` FLOP/s on a device without them.
inline seconds time_of(const device& d, const kernel& k, double attention_flops) noexcept {
  switch (k.kind) {
    case kernel_kind::matmul:
      return time_of(d, k.shape).time;
    case kernel_kind::streamed:
      return seconds(k.bytes / d.memory_bytes_per_s());
    case kernel_kind::attention: {
      const double rate = d.flash_rate(k.backward, k.seq, k.head_dim);
      return seconds(k.flops / (rate > 0 ? rate : attention_flops));
    }
  }
  return seconds(0);
}

}  // namespace weft::perf
