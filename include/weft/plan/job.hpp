// A training job as Megatron's flags state it — the parallel sizes, batch and sequence,
// recomputation, the schedule and its chunks, an optional pipeline layout — checked against
// the model it trains: every impossible split is one error naming the numbers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/op.hpp>
#include <weft/perf/attention_library.hpp>
#include <weft/perf/recompute.hpp>
#include <weft/plan/layout.hpp>
#include <weft/plan/memory.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan {

struct job {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;  ///< --tp --pp --dp --cp --ep
  int micro_batch_size = 1;                    ///< --micro-batch-size (sequences)
  int global_batch_size = 0;           ///< --global-batch-size; 0: one micro-batch per dp rank
  double seq = 4096;                   ///< --seq-length
  recompute policy = recompute::none;  ///< --recompute none|selective|full
  /// --recompute-modules: what selective recomputation runs again (Megatron's default,
  /// attention's core)
  perf::recompute_set recompute_modules = perf::default_recompute_modules;
  /// --recompute-method, --recompute-num-layers (Megatron's, with full recomputation): empty,
  /// or `uniform` with 1 — every layer on its own, what weft's full recomputation prices — or
  /// `block` with N: only the first N layers of each (virtual) stage, the rest kept whole
  std::string recompute_method;
  int recompute_num_layers = 0;
  /// torchtitan's `selective_ac_option` N: full recomputation of every N-th layer of a stage
  /// (its N-th, 2N-th, ...), the rest kept whole; 0: every layer (with --recompute full)
  int recompute_every = 0;
  /// torchtitan's `selective_ac_option = "op"` (with --recompute selective): each layer keeps
  /// its input and what the policy saves — the output of every other bf16 matmul in call order
  /// (of wq, wk, wv, wo, w1, w3, w2: wq, wv, w1 and w2; FP8's scaled matmuls none), attention's
  /// output and statistic, the reduce-scatters' outputs — and runs the rest again before its
  /// backward (its elementwise kernels, wk, wo and w3, the all-gathers). Llama's dense block.
  bool recompute_ops = false;
  bool sequence_parallel = false;  ///< --sequence-parallel
  std::string schedule = "1f1b";   ///< --schedule: any generator
  int chunks = 1;                  ///< --chunks: model chunks per rank (virtual stages)
  /// --num-layers-per-virtual-pipeline-stage (Megatron's): 0, or the layers a chunk holds —
  /// `chunks` becomes layers / (pp x this) (`with_megatron_forms`)
  int layers_per_virtual_stage = 0;
  /// --expert-tensor-parallel-size: 0, or the experts' tensor parallelism, which must be tp's
  int expert_tp = 0;
  /// --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers (Megatron's): 0,
  /// or the layers of the first and the last stage, the rest split evenly (`with_megatron_forms`
  /// writes the layout)
  int decoder_first = 0, decoder_last = 0;
  /// --fp8-format, --fp8-recipe (Megatron's): empty, or its FP8 flags (`megatron_fp8`)
  std::string fp8_format, fp8_recipe_name;
  std::string layout;  ///< --pipeline-layout; empty: an even split
  /// What the data-parallel ranks shard (`--data-parallel-sharding-strategy`; the distributed
  /// optimizer's `optim` by default, `--no-distributed-optimizer` nothing).
  dp_sharding sharding = dp_sharding::optim;
  bool flash_attention = true;
  /// --attention-backend: whose fused attention the job's code calls, which sets the measured
  /// rates it is priced at (`attention_kernel`); Megatron's default, Transformer Engine's choice
  perf::attention_library attention = perf::attention_library::transformer_engine;
  bool overlap_grad_reduce = false;  ///< the gradient reduction overlapped with the backward
  /// --overlap-param-gather: the distributed optimizer's parameter all-gather overlapped with the
  /// next step's forward
  bool overlap_param_gather = false;
  fp8_recipe fp8 = fp8_recipe::none;  ///< --fp8: the layers' linears in FP8 (memory.hpp)
  /// Megatron's --fp8-recipe tensorwise (Transformer Engine's current scaling; torchao's
  /// tensorwise and rowwise): each cast tensor's scale from its own amax, one more read of it —
  /// Megatron's default, delayed scaling, takes it from earlier steps' history
  bool fp8_current_scaling = false;
  cp_comm cp_comm_type = cp_comm::p2p;  ///< --cp-comm-type: how CP moves keys and values
  moe_dispatcher dispatcher = moe_dispatcher::alltoall;  ///< --moe-token-dispatcher-type
  pipeline_runtime runtime = pipeline_runtime::pytorch;  ///< --pipeline-runtime
  bool overlap_p2p_comm = false;  ///< --overlap-p2p-communication (Megatron's interleaved)
  /// --scatter-gather-tensors-in-pipeline: Megatron-LM until 2022 (Narayanan et al. 2021
  /// §4.1; gone from Megatron Core): without sequence parallelism each of a tensor-parallel
  /// group's devices sends its 1/tp of the activation, and the receivers all-gather it.
  bool scatter_gather_transfers = false;
  /// --grad-reduce-in-bf16: Megatron's main gradients kept and reduce-scattered in bf16 (16
  /// bits: with `fp16`, in fp16 — Megatron's --fp16 without --accumulate-allreduce-grads-in-fp32)
  bool grad_reduce_in_bf16 = false;
  /// --fp16: 16-bit floats with loss scaling — bf16's tensor-core rate and bytes, and the
  /// scaler's unscale and check of every main gradient before the optimizer's step
  bool fp16 = false;
  /// --fp8-param-gather: the layers' weights kept and all-gathered in FP8 (needs --fp8)
  bool fp8_param_gather = false;
  /// --overlap-moe-expert-parallel-comm: Megatron's combined 1F1B — one more warm-up
  /// micro-batch, then each steady-phase forward runs beside another micro-batch's backward,
  /// the all-to-alls of each behind the other's compute (the interleaved schedule, or none)
  bool overlap_moe_ep_comm = false;
  /// --delay-wgrad-compute: the experts' weight gradients held back to run beside the
  /// dispatch's backward all-to-all (needs the overlap; a pair's compute hides either way)
  bool delay_wgrad_compute = false;
  /// --tp-comm-overlap: Transformer Engine's userbuffers overlap the dense linears'
  /// tensor-parallel collectives with their GEMMs (needs sequence parallelism)
  bool tp_comm_overlap = false;
  /// false: --no-gradient-accumulation-fusion — each micro-batch's weight gradients added to
  /// the accumulated ones in a pass of their own (PyTorch's autograd does so; Megatron's fused
  /// wgrad GEMM adds in place by default)
  bool gradient_accumulation_fusion = true;
  /// --eager: PyTorch's eager operations for the RMSNorms, a gated activation and rotary
  /// embeddings, each op a kernel and more kept for the backward (trainers written as Llama's
  /// reference or Hugging Face's Llama are); false: fused, as Megatron and torch.compile run
  /// them
  bool eager = false;
  /// --eager-loss: the loss as PyTorch's eager operations compute it (`perf::eager_loss_bytes`):
  /// the logits gathered whole over tp, cast to fp32, PyTorch's cross_entropy keeping its fp32
  /// log-probabilities — as Llama's reference and Aleph Alpha's Scaling do, where Megatron's
  /// loss stays vocabulary-parallel. --eager implies it.
  bool eager_loss = false;
  /// --fused-rms-norm: with --eager, the RMSNorms one fused kernel all the same (apex's
  /// FusedRMSNorm, FlashAttention's RMSNorm kernel), the rest eager
  bool fused_rms_norm = false;
  /// --grad-all-reduce-fp32: ZeRO-1 as Aleph Alpha's Scaling runs it (optimizer/allreduce.py):
  /// each parameter's gradient kept in 16 bits, after the backward the gradients all-reduced
  /// whole, each bucket flattened and cast to fp32 for it and back, then each rank's updated
  /// shard of the parameters all-gathered — where Megatron's distributed optimizer
  /// reduce-scatters the gradients in their own type. Implies --grad-reduce-in-bf16's 16-bit
  /// gradients. Scaling's trainer with it: its 1F1B pipeline engine (check_scaling_all_reduce)
  /// and the last stage's logits it keeps (`scaling_output_buffers`).
  bool grad_all_reduce_fp32 = false;
  /// --deepspeed-bf16-optimizer: DeepSpeed's BF16_Optimizer as Megatron-DeepSpeed's bf16 runs
  /// use it (runtime/bf16_optimizer.py, BLOOM's): each micro-batch's 16-bit gradients added
  /// into fp32 ones whole on every rank, a pass of their own (`update_hp_grads`), and kept
  /// until the next backward begins (`clear_lp_grads=False`); after the backward the fp32
  /// gradients all-reduced whole in bf16 — the bytes the distributed optimizer's fp32
  /// reduce-scatter moves — the optimizer's states sharded (its own ZeRO-1) and the updated
  /// parameters all-gathered. With DeepSpeed's pipeline engine: 1F1B
  /// (check_deepspeed_bf16).
  bool deepspeed_bf16 = false;

  constexpr long long devices() const noexcept { return static_cast<long long>(tp) * pp * dp * cp; }
  /// The loss as PyTorch's eager operations compute it (--eager-loss, or --eager).
  constexpr bool loss_eager() const noexcept { return eager || eager_loss; }
  /// Priced as a PyTorch trainer of its own runs it, not as Megatron-LM's code: its eager
  /// operations, Scaling's gradient all-reduce, DeepSpeed's BF16 optimizer, or torchtitan's
  /// per-op checkpointing and PyTorch's attention.
  constexpr bool own_trainer() const noexcept {
    return loss_eager() || grad_all_reduce_fp32 || deepspeed_bf16 || recompute_ops ||
           attention == perf::attention_library::sdpa;
  }
  /// The library whose rates price its attention: as given, but a trainer of its own (its
  /// eager operations, Scaling's, DeepSpeed's, torchtitan's per-op checkpointing) calls
  /// PyTorch's scaled_dot_product_attention (or the flash-attn package's FlashAttention-2, the
  /// same kernel) where Megatron-LM's would leave the choice to Transformer Engine.
  constexpr perf::attention_library attention_kernel() const noexcept {
    return attention == perf::attention_library::transformer_engine && own_trainer()
               ? perf::attention_library::sdpa
               : attention;
  }
  /// What makes it so, as an error's opening: the flag and what Megatron-LM does instead.
  std::string own_trainer_reason() const {
    if (loss_eager())
      return std::string(eager ? "--eager" : "--eager-loss") +
             " prices PyTorch's eager operations, which Megatron-LM's fused kernels replace";
    if (deepspeed_bf16)
      return "--deepspeed-bf16-optimizer prices DeepSpeed's BF16_Optimizer, which keeps the "
             "16-bit gradients Megatron-LM's distributed optimizer frees";
    if (grad_all_reduce_fp32)
      return "--grad-all-reduce-fp32 prices Scaling's ZeRO-1, where Megatron-LM's distributed "
             "optimizer reduce-scatters the gradients";
    if (recompute_ops)
      return "--recompute-ops prices torchtitan's per-op checkpointing, which Megatron-LM does "
             "not run";
    return "--attention-backend sdpa prices PyTorch's scaled_dot_product_attention, where "
           "Megatron-LM calls Transformer Engine's";
  }
  /// The experts' tensor parallelism: --expert-tensor-parallel-size, else tp's.
  constexpr int etp() const noexcept { return expert_tp > 0 ? expert_tp : tp; }
  /// The ranks each expert's data parallelism spans: what tp x dp x cp leave of ep x etp
  /// (Megatron's parallel folding; dp x cp / ep where the experts take tp's sharding).
  constexpr long long expert_dp() const noexcept {
    return static_cast<long long>(tp) * dp * cp / (static_cast<long long>(ep) * etp());
  }
  /// How many devices apart consecutive ranks of an expert-parallel group are: the experts'
  /// tensor parallelism (Megatron orders expert ranks etp, ep, then expert data parallelism;
  /// context parallelism falls in the last two).
  constexpr long long expert_stride() const noexcept { return etp(); }
  /// Micro-batches per step and pipeline.
  constexpr int micro() const noexcept {
    return global_batch_size > 0 ? static_cast<int>(global_batch_size /
                                                    (static_cast<long long>(micro_batch_size) * dp))
                                 : 1;
  }
  /// Sequences per step (`check_job` keeps it within an int).
  constexpr long long batch() const noexcept {
    return global_batch_size > 0 ? global_batch_size
                                 : static_cast<long long>(micro_batch_size) * dp;
  }
};

/// The set `names` name (Megatron's `--recompute-modules`); `where` names the flag or key in
/// errors. Megatron's modules weft does not price are refused by name.
inline perf::recompute_set recompute_modules_of(const std::vector<std::string>& names,
                                                const std::string& where) {
  perf::recompute_set s = 0;
  for (const std::string& n : names) {
    if (const auto m = perf::recompute_module_named(n)) {
      s |= perf::bit(*m);
      continue;
    }
    if (n == "moe" || n == "shared_experts" || n == "experts" || n == "router")
      throw config_error(where + ": weft does not price recomputing '" + n +
                         "' (an MoE layer's own parts, with their all-to-alls); it prices "
                         "core_attn, layernorm, mla_up_proj, moe_act and mlp");
    throw config_error(where + ": '" + excerpt(n) +
                       "' is not a module; Megatron's are core_attn, layernorm, mla_up_proj, "
                       "moe_act, mlp, moe, shared_experts");
  }
  return s;
}

/// The most of each size a job may ask for: the flags' ranges, the job file's, `check_sizes`'s.
namespace job_limits {
inline constexpr int tp = 1 << 16, pp = 1 << 16, dp = 1 << 20, cp = 1 << 16, ep = 1 << 16;
inline constexpr int micro_batch_size = 1 << 16, global_batch_size = 1 << 30;
inline constexpr int seq = 1 << 24;            ///< tokens
inline constexpr long long devices = 1 << 24;  ///< tp x pp x dp x cp
}  // namespace job_limits

namespace detail {
inline std::string num(long long x) { return std::to_string(x); }
}  // namespace detail

/// What each pipeline stage holds: the layout's stages, or (none given) the decoder layers split
/// evenly over pp x chunks stages, the embedding in the first, the MTP layers and the loss in
/// the last. Throws `config_error` when the layers do not split as asked.
inline pipeline_layout stages_of(const transformer& m, const job& j) {
  if (j.pp < 1 || j.chunks < 1)
    throw config_error("--pp and --chunks must be at least 1, got " + detail::num(j.pp) + " and " +
                       detail::num(j.chunks));
  if (!j.layout.empty()) {
    pipeline_layout l = parse_pipeline_layout(j.layout, j.pp, m.layers, m.mtp_layers);
    if (l.chunks != j.chunks && j.chunks != 1)
      throw config_error("--pipeline-layout: " + detail::num(l.chunks) +
                         " chunks per rank, --chunks says " + detail::num(j.chunks));
    return l;
  }
  const long long stages = static_cast<long long>(j.pp) * j.chunks;
  if (m.layers % stages != 0)
    throw config_error("the model's " + detail::num(m.layers) +
                       " layers do not split evenly over " + detail::num(j.pp) +
                       " pipeline ranks x " + detail::num(j.chunks) +
                       " chunks; give --pipeline-layout for an uneven split");
  pipeline_layout l;
  l.pp = j.pp;
  l.chunks = j.chunks;
  const int per = static_cast<int>(m.layers / stages);
  for (long long s = 0; s < stages; ++s)
    l.stages.push_back({.embedding = s == 0,
                        .loss = s == stages - 1,
                        .first_layer = static_cast<int>(s) * per,
                        .layers = per,
                        .mtp = s == stages - 1 ? m.mtp_layers : 0});
  return l;
}

/// Throws `config_error` naming the numbers when `j`'s sizes cannot train `m`, whatever the
/// schedule and layout: heads or key/value heads not divisible by tp, experts not divisible by
/// ep, ep larger than the data-parallel ranks it is carved from, a global batch not a multiple of
/// micro-batch x dp or of more micro-batches than a schedule takes, a sequence context
/// parallelism cannot halve, sizes out of range. Every entry point of the planner calls it first.
inline void check_sizes(const transformer& m, const job& j) {
  using detail::num;
  namespace L = job_limits;
  struct size {
    const char* flag;
    int value, most;
  };
  for (const size& s :
       {size{"--tp", j.tp, L::tp}, size{"--pp", j.pp, L::pp}, size{"--dp", j.dp, L::dp},
        size{"--cp", j.cp, L::cp}, size{"--ep", j.ep, L::ep},
        size{"--micro-batch-size", j.micro_batch_size, L::micro_batch_size},
        size{"--chunks", j.chunks, limits::chunks}}) {
    if (s.value < 1)
      throw config_error(std::string(s.flag) + " must be at least 1, got " + num(s.value));
    if (s.value > s.most)
      throw config_error(std::string(s.flag) + " must be at most " + num(s.most) + ", got " +
                         num(s.value));
  }
  // Each at most 2^20, so the product (at most 2^68) is taken in a double, not a long long.
  const double devices = static_cast<double>(j.tp) * j.pp * j.dp * j.cp;
  if (devices > static_cast<double>(L::devices))
    throw config_error("tp x pp x dp x cp = " + shown(devices) +
                       " devices is more than weft plans for (" + num(L::devices) + ")");
  if (!(j.seq >= 1 && j.seq <= L::seq))
    throw config_error("--seq-length must be in [1, " + num(L::seq) + "]");
  if (j.seq != static_cast<double>(static_cast<long long>(j.seq)))
    throw config_error("--seq-length must be a whole number of tokens");
  if (m.heads % j.tp != 0)
    throw config_error("the model's " + num(m.heads) + " attention heads do not split over --tp " +
                       num(j.tp));
  if (!m.mla.active() && m.kv_heads % j.tp != 0)
    throw config_error("the model's " + num(m.kv_heads) +
                       " key/value heads do not split over --tp " + num(j.tp));
  if (j.ep > 1 && !m.moe.active())
    throw config_error("--ep " + num(j.ep) + " needs a model with experts");
  if (m.moe.active() && m.moe.routed % j.ep != 0)
    throw config_error("the model's " + num(m.moe.routed) + " experts do not split over --ep " +
                       num(j.ep));
  if (j.tp_comm_overlap && (!j.sequence_parallel || j.tp < 2))
    throw config_error(
        "--tp-comm-overlap overlaps tensor parallelism's gathers and scatters with the GEMMs: it "
        "needs --tp above 1 and --sequence-parallel (Megatron: 'Tensor parallel "
        "communication/GEMM overlap can happen only when sequence parallelism is enabled')");
  if (j.expert_tp != 0 && j.expert_tp != j.tp) {
    if (j.expert_tp > j.tp || j.tp % j.expert_tp != 0)
      throw config_error("--expert-tensor-parallel-size " + num(j.expert_tp) +
                         ": weft prices expert tensor parallelism that divides --tp " + num(j.tp));
    if (!j.sequence_parallel)
      throw config_error("--expert-tensor-parallel-size " + num(j.expert_tp) +
                         " below --tp needs --sequence-parallel (Megatron's rule for MoE with "
                         "tensor parallelism)");
    const long long ranks = static_cast<long long>(j.tp) * j.dp * j.cp;
    if (ranks % (static_cast<long long>(j.ep) * j.expert_tp) != 0)
      throw config_error("--ep " + num(j.ep) + " x --expert-tensor-parallel-size " +
                         num(j.expert_tp) + " must divide tp x dp x cp (" + num(ranks) +
                         "), which the experts fold over");
  } else if ((static_cast<long long>(j.dp) * j.cp) % j.ep != 0) {
    throw config_error("--ep " + num(j.ep) + " must divide the data-parallel ranks (dp x cp = " +
                       num(static_cast<long long>(j.dp) * j.cp) +
                       ") it is carved from (or fold it over the tensor-parallel ranks too, with "
                       "--expert-tensor-parallel-size below --tp)");
  }
  if (j.dispatcher == moe_dispatcher::flex && m.moe.active() &&
      static_cast<long long>(j.ep) * j.etp() == 1)
    throw config_error(
        "--moe-token-dispatcher-type flex dispatches over the experts' tensor- and "
        "expert-parallel ranks: it needs --ep x --expert-tensor-parallel-size above 1 (Megatron: "
        "'DeepEP dispatcher requires TPxEP > 1')");
  if (static_cast<long long>(j.micro_batch_size) * j.dp > (1LL << 30))
    throw config_error(
        "--micro-batch-size x --dp = " + num(static_cast<long long>(j.micro_batch_size) * j.dp) +
        " sequences a step is more than weft plans for (2^30)");
  if (j.global_batch_size > L::global_batch_size)
    throw config_error("--global-batch-size must be at most " + num(L::global_batch_size));
  if (j.global_batch_size < 0 ||
      (j.global_batch_size > 0 &&
       j.global_batch_size % (static_cast<long long>(j.micro_batch_size) * j.dp) != 0))
    throw config_error("--global-batch-size " + num(j.global_batch_size) +
                       " is not a multiple of --micro-batch-size x --dp (" +
                       num(static_cast<long long>(j.micro_batch_size) * j.dp) + ")");
  if (j.micro() > limits::micro)
    throw config_error(
        "--global-batch-size " + num(j.global_batch_size) + " over --micro-batch-size x --dp (" +
        num(static_cast<long long>(j.micro_batch_size) * j.dp) + ") is " + num(j.micro()) +
        " micro-batches a step; a schedule takes at most " + num(limits::micro));
  if (j.cp > 1 && static_cast<long long>(j.seq) % (2LL * j.cp) != 0)
    throw config_error("--seq-length " + num(static_cast<long long>(j.seq)) +
                       " must be a multiple of 2 x --cp (" + num(2LL * j.cp) +
                       ") for context parallelism's balanced halves");
}

/// Megatron's uneven first and last stages as a layout of model `m` on `pp` ranks: `first`
/// layers (and the embedding) on the first, `last` (and the MTP layers and the loss) on the
/// last, the rest split evenly over the stages without a count (0: none given for that end).
inline std::string first_last_layout(const transformer& m, int pp, int first, int last) {
  const std::string where = "--decoder-first/last-pipeline-num-layers";
  if (pp < 2) throw config_error(where + " needs --pp 2 or more");
  const int shared = pp - 2 + (first > 0 ? 0 : 1) + (last > 0 ? 0 : 1);
  const int rest = m.layers - first - last;
  if (shared == 0 ? rest != 0 : rest < shared || rest % shared != 0)
    throw config_error(where + ": the model's " + detail::num(m.layers) + " layers less " +
                       detail::num(first) + " first and " + detail::num(last) +
                       " last do not split evenly over the other " + detail::num(shared) +
                       " stages");
  const int each = shared > 0 ? rest / shared : 0;
  const auto stage = [](int n) { return "t*" + std::to_string(n); };
  std::string l = "E" + stage(first > 0 ? first : each) + "|";
  if (pp > 2) l += "(" + stage(each) + "|)*" + std::to_string(pp - 2) + ",";
  l += stage(last > 0 ? last : each);
  for (int k = 0; k < m.mtp_layers; ++k) l += "m";
  return l + "L";
}

/// Megatron's FP8 flags as weft's recipe: `--fp8-format e4m3|hybrid` turns FP8 on, with
/// `--fp8-recipe` delayed or tensorwise (per-tensor scales: the format's recipe) or blockwise
/// (DeepSeek's tiles); MX formats (`mxfp8`, Blackwell's) are not priced.
inline fp8_recipe megatron_fp8(const std::string& format, const std::string& recipe) {
  if (format.empty())
    throw config_error("--fp8-recipe " + excerpt(recipe) +
                       " needs --fp8-format e4m3 or hybrid (Megatron turns FP8 on with the "
                       "format)");
  if (format != "e4m3" && format != "hybrid")
    throw config_error("--fp8-format must be e4m3 or hybrid, got '" + excerpt(format) + "'");
  if (recipe.empty() || recipe == "delayed" || recipe == "tensorwise")
    return format == "e4m3" ? fp8_recipe::e4m3 : fp8_recipe::hybrid;
  if (recipe == "blockwise") return fp8_recipe::blockwise;
  if (recipe == "mxfp8")
    throw config_error("--fp8-recipe mxfp8: MX formats (Blackwell's) are not priced");
  throw config_error("--fp8-recipe must be delayed, tensorwise, blockwise or mxfp8, got '" +
                     excerpt(recipe) + "'");
}

/// Job `j` with Megatron's forms that need the model written as weft's:
/// `--num-layers-per-virtual-pipeline-stage` as chunks per rank (layers / (pp x it), which must
/// divide evenly), the first and last stages' layer counts as a layout.
inline job with_megatron_forms(const transformer& m, job j) {
  if (j.layers_per_virtual_stage > 0) {
    if (j.chunks != 1)
      throw config_error(
          "--num-layers-per-virtual-pipeline-stage and --chunks (Megatron's "
          "--num-virtual-stages-per-pipeline-rank) say the same thing: give one");
    const long long per_stage = static_cast<long long>(j.pp) * j.layers_per_virtual_stage;
    if (m.layers % per_stage != 0)
      throw config_error("--num-layers-per-virtual-pipeline-stage " +
                         detail::num(j.layers_per_virtual_stage) + ": the model's " +
                         detail::num(m.layers) + " layers do not split into " + detail::num(j.pp) +
                         " pipeline ranks of chunks of that many");
    j.chunks = static_cast<int>(m.layers / per_stage);
    j.layers_per_virtual_stage = 0;
  }
  if (j.decoder_first > 0 || j.decoder_last > 0) {
    if (!j.layout.empty() || j.chunks != 1)
      throw config_error(
          "--decoder-first/last-pipeline-num-layers: weft writes them as a layout of one chunk "
          "a rank; give --pipeline-layout for more chunks, or instead of a layout of your own");
    j.layout = first_last_layout(m, j.pp, j.decoder_first, j.decoder_last);
    j.decoder_first = j.decoder_last = 0;
  }
  if (!j.fp8_format.empty() || !j.fp8_recipe_name.empty()) {
    if (j.fp8 != fp8_recipe::none)
      throw config_error("give weft's --fp8 or Megatron's --fp8-format, not both");
    j.fp8 = megatron_fp8(j.fp8_format, j.fp8_recipe_name);
    j.fp8_current_scaling = j.fp8_recipe_name == "tensorwise";
    j.fp8_format.clear();
    j.fp8_recipe_name.clear();
  }
  return j;
}

/// Job `j` on `devices` devices, Megatron's world size: dp is what tp x pp x cp leave of them
/// (`weft plan --devices`); a count they do not divide is refused.
inline job with_world_size(job j, long long devices) {
  const long long model_parallel = static_cast<long long>(j.tp) * j.pp * j.cp;
  if (devices >= model_parallel && devices / model_parallel > job_limits::dp)
    throw config_error("--devices " + detail::num(devices) + " leaves dp " +
                       detail::num(devices / model_parallel) + ", more than " +
                       detail::num(job_limits::dp));
  if (devices < 1 || devices % model_parallel != 0)
    throw config_error("--devices " + detail::num(devices) + " does not split into tp " +
                       detail::num(j.tp) + " x pp " + detail::num(j.pp) + " x cp " +
                       detail::num(j.cp) + " (" + detail::num(model_parallel) +
                       ") data-parallel replicas");
  j.dp = static_cast<int>(devices / model_parallel);
  return j;
}

/// Whether job `j` recomputes the first `recompute_num_layers` layers of each stage only
/// (Megatron's `--recompute-granularity full --recompute-method block`).
inline bool block_recompute(const job& j) {
  return j.policy == recompute::full && j.recompute_method == "block";
}

/// What a Megatron launch script leaves unsaid (`as_megatron_runs`).
struct megatron_silence {
  bool runtime = true;      ///< no --pipeline-runtime
  bool schedule = true;     ///< no --schedule
  bool p2p_overlap = true;  ///< no --no-overlap-p2p-communication
};

/// The virtual stages a rank holds in job `j` of model `m` as Megatron counts them: a layout's,
/// layers / (pp x layers per virtual stage), or the chunks given (1 where a layout does not
/// parse: its own error comes later).
inline int virtual_stages(const transformer& m, const job& j) {
  if (!j.layout.empty()) try {
      return parse_pipeline_layout(j.layout, j.pp, m.layers, m.mtp_layers).chunks;
    } catch (const config_error&) {
      return 1;
    }
  if (j.layers_per_virtual_stage > 0 && j.pp > 0)
    return std::max(1, m.layers / (j.pp * j.layers_per_virtual_stage));
  return j.chunks;
}

/// Job `j` of model `m` from a launch script, where it is silent as Megatron runs it: Megatron's
/// code runs the pipeline; more than one virtual stage a rank is its interleaved schedule, which
/// Megatron's code runs with one transfer in flight unless told not to (arguments.py:
/// --no-overlap-p2p-communication, overlap_p2p_comm on by default; off without virtual stages).
inline job as_megatron_runs(const transformer& m, job j, megatron_silence silent) {
  if (silent.runtime) j.runtime = pipeline_runtime::megatron;
  if (silent.schedule && j.pp > 1 && virtual_stages(m, j) > 1) j.schedule = "interleaved";
  if (j.schedule == "interleaved" && j.runtime == pipeline_runtime::megatron && silent.p2p_overlap)
    j.overlap_p2p_comm = true;
  return j;
}

/// The bytes a parameter's states take in job `j`: its gradients in bf16 with
/// --grad-reduce-in-bf16 (or Scaling's, --grad-all-reduce-fp32), the layers' weights in FP8 with
/// --fp8-param-gather (`layers` false: the embedding's, the head's and the final norm's, which stay
/// bf16), and with --deepspeed-bf16-optimizer the 16-bit gradients it keeps besides.
constexpr state_bytes states_of(const job& j, bool layers = true) noexcept {
  state_bytes b;
  if (j.grad_reduce_in_bf16 || j.grad_all_reduce_fp32) b.gradients = 2;
  if (j.fp8_param_gather && layers) b.weights = 1;
  if (j.deepspeed_bf16) b.kept_gradients = 2;  // the 16-bit ones beside the fp32 accumulator
  return b;
}

/// Whether Scaling's pipeline engine runs job `j`'s schedule: 1F1B, its one
/// (`core/nn/pipeline_schedule/train.py`, DeepSpeed's TrainSchedule ported), or no pipeline.
inline bool scaling_engine_runs(const job& j) { return j.pp == 1 || j.schedule == "1f1b"; }

/// What Scaling's ZeRO-1 (--grad-all-reduce-fp32) runs with, as config errors: the optimizer's
/// states sharded and nothing else, its all-reduce after the backward, neither context nor
/// expert parallelism, which its trainer does not have, and its pipeline engine's one schedule
/// (`scaling_engine_runs`).
inline void check_scaling_all_reduce(const job& j) {
  if (!j.grad_all_reduce_fp32) return;
  if (j.sharding != dp_sharding::optim)
    throw config_error(
        "--grad-all-reduce-fp32 all-reduces the gradients of a sharded optimizer (ZeRO-1): it "
        "needs the distributed optimizer's sharding (--data-parallel-sharding-strategy optim, "
        "the default), not " +
        std::string(name_of(j.sharding)) +
        (j.sharding == dp_sharding::no_shard ? " (--no-distributed-optimizer)" : ""));
  if (j.overlap_grad_reduce)
    throw config_error(
        "--grad-all-reduce-fp32 all-reduces the gradients after the backward, as Scaling "
        "does: it does not combine with --overlap-grad-reduce");
  if (j.cp > 1 || j.ep > 1)
    throw config_error(
        "--grad-all-reduce-fp32 is Scaling's trainer, which has neither context nor expert "
        "parallelism: it needs --cp 1 and --ep 1, not --cp " +
        std::to_string(j.cp) + " and --ep " + std::to_string(j.ep));
  if (!scaling_engine_runs(j))
    throw config_error(
        "--grad-all-reduce-fp32 is Scaling's trainer, whose pipeline engine runs 1F1B: it needs "
        "--schedule 1f1b, not --schedule " +
        j.schedule);
}

/// What DeepSpeed's BF16_Optimizer (--deepspeed-bf16-optimizer) runs with, as config errors:
/// bf16 (its fp16 optimizer is another), gradients accumulated in fp32, the optimizer's states
/// sharded and nothing else, its all-reduce after the backward, neither context nor expert
/// parallelism (Megatron-DeepSpeed's dense GPT), and DeepSpeed's pipeline engine's one schedule,
/// 1F1B (its TrainSchedule; `scaling_engine_runs`, which Scaling's port shares).
inline void check_deepspeed_bf16(const job& j) {
  if (!j.deepspeed_bf16) return;
  const auto refuse = [](const std::string& what) {
    throw config_error("--deepspeed-bf16-optimizer is DeepSpeed's BF16_Optimizer: " + what);
  };
  if (j.fp16) refuse("it trains in bf16: drop --fp16");
  if (j.grad_reduce_in_bf16 || j.grad_all_reduce_fp32)
    refuse(
        "it accumulates the gradients in fp32 itself; drop " +
        std::string(j.grad_all_reduce_fp32 ? "--grad-all-reduce-fp32" : "--grad-reduce-in-bf16"));
  if (j.sharding != dp_sharding::optim)
    refuse(
        "it shards the optimizer's states (its own ZeRO-1): it needs "
        "--data-parallel-sharding-strategy optim, the default, not " +
        std::string(name_of(j.sharding)) +
        (j.sharding == dp_sharding::no_shard ? " (--no-distributed-optimizer)" : ""));
  if (j.overlap_grad_reduce)
    refuse("it all-reduces the gradients after the backward: drop --overlap-grad-reduce");
  if (j.cp > 1 || j.ep > 1)
    refuse(
        "Megatron-DeepSpeed's GPT has neither context nor expert parallelism: it needs --cp 1 "
        "and --ep 1, not --cp " +
        std::to_string(j.cp) + " and --ep " + std::to_string(j.ep));
  if (!scaling_engine_runs(j))
    refuse("DeepSpeed's pipeline engine runs 1F1B: it needs --schedule 1f1b, not --schedule " +
           j.schedule);
}

/// torchtitan's per-op checkpointing (`job::recompute_ops`) is selective recomputation of its
/// own, and saves every other `aten.mm`'s output in call order: priced for Llama's dense block
/// (wq, wk, wv, wo, then w1, w3, w2), whose order weft knows, with flash attention. Refused for
/// other layers — an MoE's, latent attention, an ungated MLP, and biased linears (which
/// dispatch as `addmm`, not on its list and not counted) — and without flash attention.
inline void check_recompute_ops(const transformer& m, const job& j) {
  if (!j.recompute_ops) return;
  if (j.policy != recompute::selective || j.recompute_modules != perf::default_recompute_modules)
    throw config_error(
        "torchtitan's per-op checkpointing (selective_ac_option 'op') is selective recomputation "
        "of its own: --recompute selective, without --recompute-modules");
  if (j.tp > 1 && !j.sequence_parallel)
    throw config_error(
        "torchtitan's per-op checkpointing with tensor parallelism: torchtitan shards the norms "
        "too (give --sequence-parallel), so its reduce-scatters' outputs are what it saves");
  const bool biased = m.linear_bias || m.qkv_bias || m.attention_bias || m.mlp_bias;
  const char* what = m.moe.active()             ? " experts"
                     : m.mla.active()           ? " latent attention"
                     : m.mlp != mlp_kind::gated ? " MLP"
                     : biased                   ? " biased linears (addmm, not on its list)"
                     : !j.flash_attention       ? " attention without flash (its scores kept)"
                                                : nullptr;
  if (what == nullptr) return;
  throw config_error(
      "per-op checkpointing (torchtitan's selective_ac_option 'op', --recompute-ops) saves every "
      "other matmul's output in call order: weft prices it for a dense gated layer (Llama's: wq, "
      "wk, wv, wo, w1, w3, w2) with flash attention, not this model's" +
      std::string(what) + "; recompute every N-th layer whole, or all or none");
}

/// Megatron's rules for --overlap-moe-expert-parallel-comm and --delay-wgrad-compute
/// (transformer_config.py), as config errors.
inline void check_combined_1f1b(const transformer& m, const job& j) {
  if (j.delay_wgrad_compute && !j.overlap_moe_ep_comm)
    throw config_error(
        "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm (Megatron: "
        "'overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute')");
  if (!j.overlap_moe_ep_comm) return;
  const auto refuse = [](const std::string& why) {
    throw config_error("--overlap-moe-expert-parallel-comm " + why);
  };
  if (m.moe.routed == 0 || j.ep < 2)
    refuse(
        "hides the experts' all-to-alls: it needs an MoE model and --ep > 1 (Megatron: "
        "'only supported with expert model parallelism')");
  if (j.pp > 1 && (j.schedule != "interleaved" || virtual_stages(m, j) < 2))
    refuse(
        "runs Megatron's interleaved schedule: with --pp > 1 it needs --schedule "
        "interleaved and more than one virtual stage a rank (Megatron: "
        "'virtual_pipeline_model_parallel_size must be specified when "
        "pipeline_model_parallel_size > 1'); the job has --schedule " +
        j.schedule + " and " + std::to_string(virtual_stages(m, j)) + " a rank");
  if (j.runtime != pipeline_runtime::megatron)
    refuse("is Megatron's code: it needs --pipeline-runtime megatron");
  if (j.pp == 1 && j.schedule != "1f1b")
    refuse("without a pipeline runs Megatron's own steps (--schedule 1f1b), not " + j.schedule);
  if (j.policy == recompute::full || !j.recompute_method.empty() || j.recompute_every != 0)
    refuse(
        "does not combine with full recomputation or a recompute method (Megatron: "
        "'disable full recomputation when enabling overlap_moe_expert_parallel_comm')");
  if (m.mtp_layers > 1)
    refuse("takes at most one MTP layer (Megatron: 'MTP supports at most one layer')");
}

/// `check_sizes`, and the layers split over the stages as the job's layout (or an even split)
/// places them.
inline void check_job(const transformer& m, const job& j) {
  check_sizes(m, j);
  if (j.fp8_current_scaling && !scales_per_tensor(j.fp8))
    throw config_error(
        "FP8 current scaling (--fp8-recipe tensorwise) scales whole tensors: it needs --fp8 "
        "e4m3 or hybrid");
  if (j.fp8_param_gather && j.fp8 == fp8_recipe::none)
    throw config_error(
        "--fp8-param-gather keeps the weights in FP8 for FP8 linears: it needs --fp8 (or "
        "Megatron's --fp8-format)");
  if (j.fp8_param_gather && j.sharding == dp_sharding::no_shard)
    throw config_error(
        "--fp8-param-gather gathers sharded weights: it needs the distributed optimizer or "
        "FSDP (Megatron's rule)");
  if (j.fused_rms_norm && !j.eager)
    throw config_error(
        "--fused-rms-norm keeps the RMSNorms fused among PyTorch's eager operations: it needs "
        "--eager (without it every norm is one fused kernel already)");
  check_scaling_all_reduce(j);
  check_deepspeed_bf16(j);
  check_combined_1f1b(m, j);
  check_recompute_ops(m, j);
  if (j.layers_per_virtual_stage != 0 || j.decoder_first != 0 || j.decoder_last != 0 ||
      !j.fp8_format.empty() || !j.fp8_recipe_name.empty())
    throw config_error(
        "Megatron's --num-layers-per-virtual-pipeline-stage, "
        "--decoder-first/last-pipeline-num-layers and --fp8-format/--fp8-recipe are read with "
        "the model "
        "(plan::with_megatron_forms)");
  if (!j.recompute_method.empty() || j.recompute_num_layers != 0) {
    if (j.policy != recompute::full)
      throw config_error(
          "--recompute-method and --recompute-num-layers say how full recomputation runs: they "
          "need --recompute-granularity full");
    if (j.recompute_method != "uniform" && j.recompute_method != "block")
      throw config_error("--recompute-method must be uniform or block, got '" +
                         excerpt(j.recompute_method) + "'");
    if (j.recompute_method == "block" && j.recompute_num_layers < 1)
      throw config_error(
          "--recompute-method block recomputes the first --recompute-num-layers layers of "
          "each stage: give it (1 or more)");
    if (j.recompute_method == "uniform" && j.recompute_num_layers > 1)
      throw config_error(
          "--recompute-num-layers " + detail::num(j.recompute_num_layers) +
          " with --recompute-method uniform: weft prices each layer recomputed on its own, "
          "keeping every layer's input (--recompute-num-layers 1)");
  }
  if (j.recompute_every != 0 &&
      (j.policy != recompute::full || !j.recompute_method.empty() || j.recompute_every < 1))
    throw config_error(
        "recomputing every N-th layer (torchtitan's selective_ac_option N) is full "
        "recomputation of those layers, N at least 1, without --recompute-method");
  if (j.recompute_modules != perf::default_recompute_modules && j.policy != recompute::selective)
    throw config_error(
        "--recompute-modules names what selective recomputation runs again: it needs "
        "--recompute selective (Megatron's --recompute-granularity selective)");
  if (perf::has(j.recompute_modules, perf::recompute_module::mla_up_proj) && !m.mla.active())
    throw config_error(
        "--recompute-modules mla_up_proj: the model has no multi-latent attention to recompute "
        "the up projections of");
  if (j.overlap_param_gather && (j.sharding == dp_sharding::no_shard || !j.overlap_grad_reduce))
    throw config_error(
        "--overlap-param-gather needs the distributed optimizer and --overlap-grad-reduce "
        "(Megatron: '--overlap-param-gather only supported with distributed optimizer', "
        "'--overlap-grad-reduce should be turned on when using --overlap-param-gather')");
  if (j.overlap_p2p_comm && j.runtime != pipeline_runtime::megatron)
    throw config_error(
        "--overlap-p2p-communication is Megatron's: it needs --pipeline-runtime megatron "
        "(PyTorch's runtime already waits for a transfer only where its data is needed)");
  if (j.scatter_gather_transfers && j.runtime != pipeline_runtime::megatron)
    throw config_error(
        "--scatter-gather-tensors-in-pipeline is Megatron-LM's (until 2022): it needs "
        "--pipeline-runtime megatron");
  (void)stages_of(m, j);
}

}  // namespace weft::plan
