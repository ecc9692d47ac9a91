// Memory in bytes: the activations a layer keeps for its backward (Korthikanti et al. 2022,
// arXiv 2205.05198, section 4, generalised to grouped-query and latent attention, gated MLPs,
// experts and flash attention), and the model states — weights, gradients, optimizer — with
// Megatron's distributed optimizer. docs/planning.md derives every term.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <weft/perf/recompute.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan {

/// Activation recomputation, as Megatron's --recompute-granularity names it: none; selective
/// (the attention core runs again in the backward, its s x s scores not kept); full (each
/// layer keeps only its input and runs its forward again).
enum class recompute : std::uint8_t { none, selective, full };
/// As `--recompute` spells them, in the enum's order: the one list the flags and files read.
inline constexpr std::array<std::string_view, 3> recompute_names{"none", "selective", "full"};

/// FP8 training (`--fp8`): the transformer layers' linears in FP8 — Transformer Engine's
/// per-tensor recipes (`e4m3` everywhere; `hybrid`, Megatron's usual, E4M3 forward and E5M2
/// gradients) or DeepSeek-V3's blockwise one (1 x 128 activation and 128 x 128 weight tiles,
/// its report §3.3). Either way the matmuls of the linears run on the FP8 units, their inputs
/// and output gradients are cast (and transposed for the weights' gradients), and the inputs a
/// linear keeps for its backward are kept in FP8. Attention's core, the router, the embedding
/// and the LM head stay in bf16, as all three recipes leave them.
enum class fp8_recipe : std::uint8_t { none, e4m3, hybrid, blockwise };
inline constexpr std::array<std::string_view, 4> fp8_names{"none", "e4m3", "hybrid", "blockwise"};

/// Whether recipe `r` scales whole tensors (Transformer Engine's per-tensor recipes, which
/// Megatron's `--fp8-recipe delayed` and `tensorwise` choose between), not DeepSeek's tiles.
constexpr bool scales_per_tensor(fp8_recipe r) noexcept {
  return r == fp8_recipe::e4m3 || r == fp8_recipe::hybrid;
}

/// How context parallelism moves keys and values (Megatron's `--cp-comm-type`): `p2p`, a ring
/// passing each rank's K and V round the group behind the scores (Megatron's default); or
/// `all_gather`, every rank's gathered before attention and their gradients reduce-scattered
/// after, exposed (Llama 3's, arXiv 2407.21783 §3.3.2: simpler for document masks, and small
/// with grouped-query attention).
enum class cp_comm : std::uint8_t { p2p, all_gather };
inline constexpr std::array<std::string_view, 2> cp_comm_names{"p2p", "all_gather"};

/// How the MoE layers move tokens to their experts (Megatron's `--moe-token-dispatcher-type`):
/// `alltoall`, an all-to-all of every token's copy to each of its experts; or `flex`, DeepEP's
/// kernels (DeepSeek's), which send a token once to each node it is routed to and forward it
/// inside the node over NVLink.
enum class moe_dispatcher : std::uint8_t { alltoall, flex };
inline constexpr std::array<std::string_view, 2> moe_dispatcher_names{"alltoall", "flex"};

/// Whose code runs the pipeline, which decides who waits for its transfers. `pytorch`: PyTorch's
/// runtime (`torch.distributed.pipelining`), where only the op that needs a transfer's data waits
/// for it. `megatron`: Megatron-LM's schedules, whose batched sends and receives
/// (`batch_isend_irecv`) the host waits for before the next step — always in its 1F1B, and in
/// its interleaved schedule unless `--overlap-p2p-communication`, which keeps one transfer in
/// flight behind each step. Megatron has code for 1F1B and the interleaved schedule only; the
/// other schedules run as PyTorch runs them.
enum class pipeline_runtime : std::uint8_t { pytorch, megatron };
inline constexpr std::array<std::string_view, 2> pipeline_runtime_names{"pytorch", "megatron"};

/// How one micro-batch's layer is laid out on a device.
struct activation_layout {
  double seq = 0;                  ///< tokens of a sequence
  double micro_batch = 1;          ///< sequences per micro-batch
  int tp = 1;                      ///< tensor parallelism (shards heads and inner widths)
  int cp = 1;                      ///< context parallelism (shards the sequence)
  bool sequence_parallel = false;  ///< the parts tensor parallelism replicates are sharded too
  recompute policy = recompute::none;
  /// With selective recomputation, the parts it runs again (Megatron's `--recompute-modules`).
  perf::recompute_set modules = perf::default_recompute_modules;
  /// With selective recomputation, torchtitan's per-op policy instead (`job::recompute_ops`).
  bool ops = false;
  /// Flash attention: the s x s scores are never kept (only a per-row softmax statistic).
  bool flash_attention = false;
  /// FP8 linears: the inputs they keep for the backward take 1 byte a value, not 2.
  bool fp8 = false;
  /// PyTorch's eager norms and gated activation (`perf::layer_shard::eager`), which keep more.
  bool eager = false;
  /// With `eager`, the norms one fused kernel all the same (`perf::layer_shard::fused_norm`).
  bool fused_norm = false;
};

/// A layer's activation bytes by where they live: the parts tensor parallelism replicates
/// (the norms' inputs, the projections' shared input, dropout masks), the parts it shards,
/// and the attention scores. 16-bit values (2 bytes), 1-byte dropout masks. `linear_inputs_*`:
/// of those, what the linears keep as their inputs (kept in FP8, they take half).
struct activation_bytes {
  double replicated = 0, sharded = 0, scores = 0;
  double linear_inputs_replicated = 0, linear_inputs_sharded = 0;
  /// Of `replicated`, the two input norms' outputs (what recomputing `layernorm` drops; the
  /// linears' inputs of them too, but an MoE layer's router input); of `sharded`, MLA's up
  /// projections' outputs — Q, K and V (`mla_up_proj`), the experts' activation outputs, their
  /// second linears' inputs (`moe_act`), and a dense MLP's insides (`mlp`; its second linear's
  /// input among them).
  double norm_outputs = 0, norm_outputs_linear = 0, up_projections = 0, expert_activations = 0,
         mlp_insides = 0, mlp_second_input = 0;
};

/// What layer `layer` of `m` keeps per micro-batch before any parallelism (s tokens of b
/// sequences on one device): Korthikanti's 34sbh + 5as²b for GPT-3's layer (GeLU over 4h,
/// dropout, no flash attention), term by term.
constexpr activation_bytes layer_activations(const transformer& m, int layer, double s,
                                             double s_keys, double b, bool flash,
                                             bool eager = false, bool fused_norm = false) noexcept {
  const double h = m.hidden, a = m.heads, sb = s * b;
  const double mask = m.dropout ? 1 : 0;  // a dropout mask: one byte per value
  activation_bytes x;
  // Attention: its norm's input, the projections' input, the dropout mask after it.
  x.replicated += (2 + 2 + mask) * sb * h;
  x.linear_inputs_replicated += 2 * sb * h;
  x.norm_outputs += 2 * sb * h;
  x.norm_outputs_linear += 2 * sb * h;
  if (m.mla.active()) {
    // The latents: the query's (and its norm's output), the keys' and values' (and theirs).
    const mla_shape& l = m.mla;
    x.replicated += 2 * sb * (2 * l.q_lora_rank + 2 * l.kv_lora_rank + l.qk_rope_head_dim);
    // Q and K per head (no-position and rotary parts), V, and the output projection's input.
    x.sharded += 2 * sb * a * (2 * l.qk_head_dim() + 2 * l.v_head_dim);
    x.up_projections += 2 * sb * a * (2 * l.qk_head_dim() + l.v_head_dim);
    x.linear_inputs_replicated += 2 * sb * (l.q_lora_rank + l.kv_lora_rank);  // the up projections'
    x.linear_inputs_sharded += 2 * sb * a * l.v_head_dim;  // the output projection's
  } else {
    // Q, K (for the scores), V, and the output projection's input: 8sbh with a = kv heads.
    const double q = a * m.head_dim, kv = m.kv_heads * m.head_dim;
    x.sharded += 2 * sb * (q + kv) + 2 * sb * kv + 2 * sb * q;
    x.linear_inputs_sharded += 2 * sb * q;          // the output projection's
    if (m.qk_norm) x.sharded += 2 * sb * (q + kv);  // the query and key norms' inputs
  }
  // The scores: softmax output (2as²b), dropout mask and output (as²b + 2as²b); flash attention
  // keeps a 4-byte statistic per row and head instead.
  x.scores = flash ? 4 * a * sb : (2 + 3 * mask) * a * s * s_keys * b;
  // The MLP: its norm's input, the first linear's input, the dropout mask after it. (In an MoE
  // layer that input feeds the router, which keeps it in bf16.)
  x.replicated += (2 + 2 + mask) * sb * h;
  x.norm_outputs += 2 * sb * h;
  if (!m.is_moe_layer(layer)) {
    x.linear_inputs_replicated += 2 * sb * h;
    x.norm_outputs_linear += 2 * sb * h;
  }
  if (m.parallel_attention) {  // the MLP's norm reads the attention's input, kept once
    x.replicated -= 2 * sb * h;
    if (m.norms_per_layer == 1) {  // and one norm's output feeds both
      x.replicated -= 2 * sb * h;
      x.norm_outputs -= 2 * sb * h;
      if (!m.is_moe_layer(layer)) {
        x.linear_inputs_replicated -= 2 * sb * h;
        x.norm_outputs_linear -= 2 * sb * h;
      }
    }
  }
  if (m.norms_per_layer == 4) x.replicated += 2 * 2 * sb * h;  // the output norms' inputs
  if (eager && !fused_norm && !m.layer_norm) {
    // PyTorch's eager RMSNorm keeps its input in fp32 (for the square's and the product's
    // gradients) and its normalized bf16 output (for the weight's): 4 bytes a value more than
    // the bf16 input a fused one keeps. Recomputing `layernorm` runs the input norms again, not
    // the output norms of a layer of four.
    const int inputs = m.norms_per_layer == 1 ? 1 : 2, outputs = m.norms_per_layer == 4 ? 2 : 0;
    x.replicated += 4 * (inputs + outputs) * sb * h;
    x.norm_outputs += 4 * inputs * sb * h;
    if (m.qk_norm && !m.mla.active()) x.sharded += 4 * sb * (a + m.kv_heads) * m.head_dim;
    if (m.mla.active()) x.replicated += 4 * sb * (m.mla.q_lora_rank + m.mla.kv_lora_rank);
  }
  // An eager gated activation keeps silu's output too (the product's gradient reads it).
  const double eager_gate = eager && m.mlp == mlp_kind::gated ? 2 : 0;
  // Inside: the activation's input and the second linear's input (GeLU: 2 x 2sbf = 16sbh at
  // f = 4h); gated: gate and up outputs and their product (3 x 2sbf).
  const double per_width = m.mlp == mlp_kind::gated ? 6 : 4;
  if (!m.is_moe_layer(layer)) {
    x.sharded += (per_width + eager_gate) * sb * m.ffn;
    x.linear_inputs_sharded += 2 * sb * m.ffn;  // the second linear's
    x.mlp_insides = (per_width + eager_gate) * sb * m.ffn;
    x.mlp_second_input = 2 * sb * m.ffn;
    return x;
  }
  // An MoE layer: each token's copy to each of its top-k experts (their first linear's input and
  // their insides), the router's fp32 scores, the shared expert's insides.
  const moe_shape& e = m.moe;
  x.replicated += 2 * sb * h * e.top_k + 4 * sb * e.routed;
  x.sharded += (per_width + eager_gate) * sb * (e.top_k * e.expert_ffn + e.shared_ffn);
  x.linear_inputs_replicated += 2 * sb * h * e.top_k;  // the experts' first linears'
  x.linear_inputs_sharded += 2 * sb * (e.top_k * e.expert_ffn + e.shared_ffn);  // their second
  x.expert_activations = (2 + eager_gate) * sb * e.top_k * e.expert_ffn;
  return x;
}

/// What torchtitan's per-op checkpointing keeps of a dense gated layer per micro-batch, `s`
/// tokens of a sequence on one device (`job::recompute_ops`; its `_save_list`): the layer's
/// input, the outputs of every other `aten.mm` in call order — wq's, wv's, w1's and w2's (the
/// last whole before its reduce-scatter) — attention's output with its fp32 statistic per row
/// and head, and with sequence parallelism the two reduce-scatters' outputs. FP8's scaled
/// matmuls are not on the list: under FP8 none of the matmuls' outputs.
constexpr double op_checkpoint_bytes(const transformer& m, double s, const activation_layout& o) {
  const double sb = s * o.micro_batch, h = m.hidden, t = o.tp;
  const double rep = o.sequence_parallel ? t : 1;
  const double q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  double kept = 2 * sb * h / rep + 2 * sb * q / t + 4 * sb * m.heads / t;
  if (!o.fp8) kept += 2 * sb * (q + kv + m.ffn) / t + 2 * sb * h;
  if (o.sequence_parallel && t > 1) kept += 2 * (2 * sb * h / t);
  return kept;
}

/// The bytes layer `layer` keeps per micro-batch on one device of layout `o`: tensor parallelism
/// shards the sharded part (and with sequence parallelism the replicated part), context
/// parallelism the sequence; selective recomputation drops what its parts would keep (attention's
/// core: the scores; `layernorm`: the norms' outputs; `mla_up_proj`: Q, K and V; `moe_act`: the
/// experts' activation outputs; `mlp`: a dense MLP's insides), full recomputation keeps only the
/// layer's input (2sbh, sharded as the replicated part is); FP8 linears keep their inputs in
/// half the bytes.
constexpr double layer_activation_bytes(const transformer& m, int layer,
                                        const activation_layout& o) noexcept {
  const double s = o.seq / o.cp, t = o.tp;
  const double rep = o.sequence_parallel ? t : 1;
  if (o.policy == recompute::full) return 2 * s * o.micro_batch * m.hidden / rep;
  if (o.policy == recompute::selective && o.ops) return op_checkpoint_bytes(m, s, o);
  activation_bytes x = layer_activations(m, layer, s, o.seq, o.micro_batch, o.flash_attention,
                                         o.eager, o.fused_norm);
  if (o.policy == recompute::selective) {
    using enum perf::recompute_module;
    if (perf::has(o.modules, core_attn)) x.scores = 0;
    if (perf::has(o.modules, layernorm)) {
      x.replicated -= x.norm_outputs;
      x.linear_inputs_replicated -= x.norm_outputs_linear;
    }
    if (perf::has(o.modules, mla_up_proj)) x.sharded -= x.up_projections;
    if (perf::has(o.modules, moe_act)) {
      x.sharded -= x.expert_activations;
      x.linear_inputs_sharded -= x.expert_activations;
    }
    if (perf::has(o.modules, mlp)) {
      x.sharded -= x.mlp_insides;
      x.linear_inputs_sharded -= x.mlp_second_input;
    }
  }
  const double fp8_saves =
      o.fp8 ? (x.linear_inputs_replicated / rep + x.linear_inputs_sharded / t) / 2 : 0;
  return x.replicated / rep + x.sharded / t + x.scores / t - fp8_saves;
}

/// What `nvidia-smi` shows of a device beyond the bytes a job allocates at its peak: PyTorch's
/// caching allocator reserves more than it hands out — Megatron-Bridge's Moonlight-16B run
/// measured a 36.618 GB allocated peak with about 40 GB reserved (9.2 %) — and the CUDA context
/// with its kernels takes 1573 MiB of an A100 (BigScience's BLOOM training chronicles). Two
/// published measurements, one value each for every device.
inline constexpr double allocator_reserve = 40.0 / 36.618 - 1;
inline constexpr double cuda_context_bytes = 1573.0 * 1024 * 1024;

/// The bytes `nvidia-smi` would show for a device whose job allocates `allocated` at its peak.
constexpr double as_nvidia_smi(double allocated) noexcept {
  return allocated * (1 + allocator_reserve) + cuda_context_bytes;
}

/// The most a job may allocate at its peak on a device of `hbm` bytes: what is left once the
/// CUDA context and the caching allocator's reserve are counted — `as_nvidia_smi` undone, so a
/// job that allocates it shows the whole device in `nvidia-smi`. A plan fits when its peak is
/// within this (71.2 GiB of an A100 80GB's 79.35), not within the raw device: PyTorch runs out of
/// memory when its reserve, not its allocations, reaches the device.
constexpr double allocatable_bytes(double hbm) noexcept {
  return hbm > cuda_context_bytes ? (hbm - cuda_context_bytes) / (1 + allocator_reserve) : 0.0;
}

/// Bytes per parameter of the model states in mixed-precision training with Adam: 16-bit
/// weights, fp32 gradients (Megatron accumulates them in fp32), fp32 master weights and the two
/// moments (arXiv 2104.04473; Megatron's distributed optimizer shards those 12 bytes over the
/// data-parallel ranks).
struct state_bytes {
  double weights = 2, gradients = 4, optimizer = 12;
  /// 16-bit gradients a trainer keeps beside the accumulated ones between micro-batches
  /// (DeepSpeed's BF16_Optimizer), never sharded.
  double kept_gradients = 0;
};

/// What the data-parallel ranks shard of the model states, as Megatron-FSDP's
/// `--data-parallel-sharding-strategy` names it (ZeRO's stages 0-3): nothing, the optimizer
/// states (Megatron's distributed optimizer, ZeRO-1), the gradients too (ZeRO-2), and the
/// parameters too (FSDP, ZeRO-3).
enum class dp_sharding : std::uint8_t { no_shard, optim, optim_grads, optim_grads_params };

/// As Megatron spells them, in the enum's order: the one list the flags and files read.
inline constexpr std::array<std::string_view, 4> dp_sharding_names{
    "no_shard", "optim", "optim_grads", "optim_grads_params"};
constexpr std::string_view name_of(dp_sharding s) noexcept {
  return dp_sharding_names[static_cast<std::size_t>(s)];
}

/// Whether the data-parallel ranks shard the gradients too (ZeRO-2 and FSDP: Megatron-FSDP).
constexpr bool shards_gradients(dp_sharding s) noexcept { return s >= dp_sharding::optim_grads; }

/// The enumerator whose name (`names`, in the enum's order) is `name`, or none.
template <class Enum, std::size_t N>
constexpr std::optional<Enum> named(const std::array<std::string_view, N>& names,
                                    std::string_view name) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

/// The model states of `params` parameters on a device of `shards` data-parallel ranks that
/// shard what `what` says (1 shard: nothing is divided).
constexpr double model_state_bytes(double params, int shards, dp_sharding what = dp_sharding::optim,
                                   const state_bytes& b = {}) noexcept {
  const double n = shards > 1 ? shards : 1;
  const double optimizer = what == dp_sharding::no_shard ? b.optimizer : b.optimizer / n;
  const double gradients = shards_gradients(what) ? b.gradients / n : b.gradients;
  const double weights = what == dp_sharding::optim_grads_params ? b.weights / n : b.weights;
  return params * (weights + gradients + b.kept_gradients + optimizer);
}

}  // namespace weft::plan
