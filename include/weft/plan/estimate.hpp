// A planned job, estimated: each pipeline stage's costs from its layers' FLOPs and bytes on the
// cluster's devices and links, memory per rank in bytes, and the whole step — the pipeline
// simulated with the one simulator (contention priced), the data-parallel gradient reduction and
// the optimizer. docs/planning.md derives every term.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/link.hpp>
#include <weft/generators/registry.hpp>
#include <weft/perf/device.hpp>
#include <weft/perf/layer.hpp>
#include <weft/plan/breakdown.hpp>
#include <weft/plan/cluster.hpp>
#include <weft/plan/flops.hpp>
#include <weft/plan/job.hpp>
#include <weft/plan/memory.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/sim/xdc_preset.hpp>

namespace weft::plan {

/// One pipeline stage on one device, per micro-batch.
struct stage_estimate {
  chunk_cost<seconds> cost;     ///< its forward, backward, dW, and what a pair can hide
  double params = 0;            ///< parameters on one device but the routed experts' (tp shard)
  double expert_params = 0;     ///< the routed experts' on one device (tp and ep shards)
  double activation_bytes = 0;  ///< kept per micro-batch for the backward
  /// What one of its passes needs beyond what it keeps, for a moment (an eager loss's backward)
  double working_bytes = 0;
  /// What it holds through the step beside its model states (Scaling's output buffers)
  double held_bytes = 0;
  /// What recomputation makes again of one of its layers and holds until that layer's backward
  /// ends, beyond what that micro-batch has freed by then (`remade_tally`): a moment of its
  /// backward's, while the other micro-batches in flight keep theirs.
  double rematerialized_bytes = 0;
  /// Its forward and its backward (recomputation and the dW included) by part.
  time_split forward, backward;
};

/// The whole estimate.
struct estimate {
  std::vector<stage_estimate> stages;  ///< per pipeline stage, in model order
  schedule sched;
  program prog;
  cost_model cost;  ///< costs per chunk, transfers, contention
  timeline time;    ///< the pipeline's step, simulated
  step_metrics metrics;
  seconds pipeline{0}, grad_sync{0}, optimizer{0}, step{0};
  std::vector<double> memory_per_rank;  ///< bytes: model states and peak live activations
  /// bytes: parameters, gradients, optimizer states, and what the rank needs for a moment
  /// whatever its activations (sharded states gathered, a pass's working memory)
  std::vector<double> states_per_rank;
  /// Of `states_per_rank`, what a rank needs for a moment (sharded states gathered, a pass's
  /// working memory such as PyTorch's loss over whole logits); the rest, model states proper
  std::vector<double> buffers_per_rank;
  /// Bytes one micro-batch keeps for the backward on each chunk of the schedule's model.
  std::vector<double> chunk_activation_bytes;
  double model_flops = 0;  ///< one step, every device together
  double tokens_per_s = 0, mfu = 0, tflops_per_device = 0;
  std::vector<rank_breakdown> breakdown;  ///< per pipeline rank, where its step goes
};

/// Pipelines generated and lowered, by what makes them — the schedule's name and the
/// generator's arguments. A search estimates many jobs of one pipeline shape
/// (sizes that change the costs, not the schedule); each is then generated and checked once.
/// Not thread-safe: one per search.
class program_cache {
 public:
  using made = std::pair<schedule, program>;
  /// Bounded (a search's shapes are a few hundred, most small): past `most_pipelines` kept, or
  /// `most_ops` ops in all (about 100 bytes each), it starts again rather than grow with the
  /// pipelines' sizes.
  explicit program_cache(std::size_t most_pipelines = 512,
                         std::size_t most_ops = std::size_t{1} << 22)
      : most_pipelines_(most_pipelines), most_ops_(most_ops) {}
  /// Schedule `name` made with `a` (the registry's `generate`) and lowered, from the cache;
  /// valid until the next call.
  const made& get(const std::string& name, const generator_args& a) {
    const p2p_options& p = a.p2p;
    const overlap_options& v = a.overlap;
    key k{name, {a.ranks,           a.micro,
                 a.layers,          a.stages.bits,
                 a.transfers,       v.pair_forward_backward,
                 v.split_dw,        v.self_overlap,
                 v.pipeline_splits, v.multi_stream_all_to_all,
                 a.splits,          a.pieces,
                 p.megatron,        p.blocking,
                 p.overlap_p2p,     p.multi_stream,
                 p.log_allreduce,   p.async_log_allreduce,
                 a.chunks,          a.extra_warmup,
                 a.nanopipe}};
    auto at = made_.find(k);
    if (at != made_.end()) return at->second;
    schedule s = generate(name, a);
    program prog = lower(s);
    if (made_.size() >= most_pipelines_ || ops_ + prog.size() > most_ops_) {
      made_.clear();
      ops_ = 0;
    }
    ops_ += prog.size();
    return made_.emplace(std::move(k), made{std::move(s), std::move(prog)}).first->second;
  }
  std::size_t size() const noexcept { return made_.size(); }  ///< pipelines kept

 private:
  std::size_t most_pipelines_, most_ops_;
  using key = std::pair<std::string, std::array<int, 21>>;  // every argument, in order
  std::map<key, made> made_;
  std::size_t ops_ = 0;
};

/// What the estimate prices, each switch on by default; off, that part is left out — what it
/// adds to the agreement with published runs (the planning benchmark's ablation,
/// docs/planning.md).
struct estimate_options {
  /// A matmul's time from its shape: tiles and waves over the SMs, the memory's roof
  /// (perf/matmul.hpp). Off: every matmul at the device's sustained rate.
  bool matmul_shapes = true;
  /// The memory-bound kernels (norms, activations, dropouts, residuals, softmax without flash
  /// attention, rotary, the router's top-k and the tokens' permutation, the loss). Off: free.
  bool memory_bound = true;
  /// A pass takes at least its kernels' launches (`perf::launch_interval` each). Off: free.
  bool launches = true;
  /// Where pipelines already made are kept (a search's); none: each estimate makes its own.
  program_cache* programs = nullptr;
};

namespace detail {

/// The device a cluster's ranks compute on: the cluster's facts (`cluster::device`, one home
/// for its peak, efficiency and memory), with what only the per-kernel prices need from its
/// `chip` — SMs and tile, fp8, the memory's sustained share — and the attention curves of the
/// library `attention` (a job's `attention_kernel()`). No chip (a cluster file without
/// "device"): no tile model, the memory at its full bandwidth.
inline perf::device chip_of(const cluster& c,
                            perf::attention_library attention = perf::attention_library::flash) {
  perf::device d = c.chip;
  if (d.peak_bf16 == 0) {
    d.name = c.name;
    d.hbm_share = 1;
  }
  // Its flash-attention curves keep their shape and take the cluster's attention rate at their
  // longest (the built-in clusters' is theirs; a file's may state another, or another peak).
  if (!d.flash_forward.empty() && !d.flash_backward.empty()) {
    const double longest = perf::flash_pair_rate(d.flash_forward.last(), d.flash_backward.last());
    const double k = c.device.attention_flops() / longest;
    // The job's library's curves where published, at the same share of the cluster's rate.
    d = d.attending_with(attention);
    for (perf::curve* x : {&d.flash_forward, &d.flash_backward, &d.flash_forward_64,
                           &d.flash_backward_64, &d.flash_forward_256, &d.flash_backward_256})
      *x = x->scaled(k);
  }
  d.peak_bf16 = c.device.peak_flops;
  d.matmul_share = c.device.efficiency;
  d.hbm_bytes = c.hbm_bytes;
  d.hbm_bytes_per_s = c.device.memory_bytes_per_s;
  return d;
}

/// A pass's kernels priced: its time, its weights' gradients (the dW of a split backward) and
/// each recomputable part's (what selective recomputation runs again of it).
struct priced {
  seconds time{0}, weights{0};
  int kernels = 0;              ///< how many the host launches
  int elementwise_kernels = 0;  ///< of them, the memory-bound ones
  time_split parts;             ///< matmul, attention and elementwise
  std::array<seconds, perf::recompute_module_names.size()> by_part{};
  std::array<int, perf::recompute_module_names.size()> kernels_by_part{};
  /// The time and kernels of the parts in `s`.
  std::pair<seconds, int> of(perf::recompute_set s) const {
    std::pair<seconds, int> r{seconds(0), 0};
    for (std::size_t i = 1; i < by_part.size(); ++i)
      if (perf::has(s, static_cast<perf::recompute_module>(i))) {
        r.first += by_part[i];
        r.second += kernels_by_part[i];
      }
    return r;
  }
};

/// A matmul's time: by its shape, or at the sustained rate without shapes.
inline seconds gemm_seconds(const perf::device& d, const perf::gemm& g, const estimate_options& o) {
  return o.matmul_shapes ? perf::time_of(d, g).time : seconds(g.flops() / d.matmul_flops(g.type));
}

inline priced price(const std::vector<perf::kernel>& kernels, const perf::device& d,
                    double attention_flops, const estimate_options& o) {
  priced out;
  for (const perf::kernel& k : kernels) {
    seconds t{0};
    if (k.kind == perf::kernel_kind::matmul)
      t = gemm_seconds(d, k.shape, o);
    else if (k.kind != perf::kernel_kind::streamed || o.memory_bound)
      t = perf::time_of(d, k, attention_flops);
    out.time += t;
    ++out.kernels;
    if (k.weight) out.weights += t;
    const auto part =
        static_cast<std::size_t>(k.core ? perf::recompute_module::core_attn : k.module);
    out.by_part[part] += t;
    ++out.kernels_by_part[part];
    (k.core || k.kind == perf::kernel_kind::attention ? out.parts.attention
     : k.kind == perf::kernel_kind::matmul            ? out.parts.matmul
                                                      : out.parts.elementwise) += t;
    if (!k.core && k.kind == perf::kernel_kind::streamed) ++out.elementwise_kernels;
  }
  return out;
}

/// A pass of `kernels` kernels takes at least their launches: what those outlast its priced
/// time `t` by is the host's (`perf::launch_interval`), 0 when it is not launch-bound.
inline seconds launch_excess(seconds t, int kernels, const estimate_options& o) {
  const seconds floor = o.launches ? kernels * perf::launch_interval : seconds(0);
  return floor > t ? floor - t : seconds(0);
}

/// The LM head on `T` tokens and its loss: the vocabulary-parallel matmul, and the softmax
/// cross-entropy over its logits (read in bf16, the fp32 exponentials written and read back) —
/// or, `eager`, PyTorch's cross_entropy over the whole vocabulary's logits in fp32 on every
/// tensor-parallel rank (`perf::eager_loss_bytes`; the gather: `eager_loss_gather`).
inline perf::layer_kernels head_kernels(const transformer& m, double T, int tp, perf::dtype t,
                                        double accumulate_bytes = 0, bool eager = false) {
  perf::layer_kernels k;
  perf::detail::linear(k, "lm head", T, m.vocab / tp, m.hidden,
                       {.type = t, .accumulate_bytes = accumulate_bytes});
  const double logits = T * m.vocab / tp;
  if (!eager) {
    perf::detail::streamed(k, "cross-entropy", (2 + 4) * logits, (4 + 2) * logits);
    return k;
  }
  if (tp > 1) {  // the whole logits copied out of the gather; the backward's slice per shard
    const perf::eager_bytes g = perf::eager_gather_bytes;
    perf::detail::elementwise(k, "logits gather",
                              {g.forward, g.backward / tp, g.forward_kernels, g.backward_kernels},
                              T * m.vocab);
  }
  perf::detail::elementwise(k, "cross-entropy", perf::eager_loss_bytes, T * m.vocab);
  return k;
}

/// The MoE dispatch and combine of one layer on one device holding `T` tokens: every token's
/// copy to each of its top-k experts out and back over the expert group — a pairwise
/// all-to-all, Megatron's `alltoall` dispatcher. With the `flex` dispatcher (DeepEP's kernels,
/// DeepSeek-V3 report §3.2.2), a group across nodes sends a token once to each other node it is
/// routed to (over InfiniBand to the same in-node index, then over NVLink, 3.2 times faster,
/// beside it): the nodes its top-k experts fall on — top-k experts drawn from the group's,
/// on average (n - 1)(1 - P(a node gets none)) other nodes of n; with group-limited routing
/// whose groups fall within nodes (each node's experts whole groups), the `group_top_k` nodes its
/// groups are, (n - 1) / n of them other nodes. DeepEP dispatches in FP8 with DeepSeek's
/// blockwise recipe (§3.3.2); the combine stays bf16.
inline seconds dispatch_and_combine(const transformer& m, const job& j, const cluster& c,
                                    const link_model& link, double T) {
  const moe_shape& e = m.moe;
  const long long stride = j.expert_stride();
  // Values of a token on this device: tp's share of each (folded: each device its own tokens
  // whole, tp's share of them — the same bytes).
  const double per_token = m.hidden / j.tp;
  double leaving = e.top_k * (j.ep - 1.0) / j.ep;  // copies a token sends to other ranks
  const bool flex = j.dispatcher == moe_dispatcher::flex;
  if (flex && !inside_a_node(j.ep, stride, c.per_node) && stride * j.ep % c.per_node == 0 &&
      c.per_node % stride == 0) {
    const double nodes = static_cast<double>(stride * j.ep / c.per_node);
    const double experts_a_node = e.routed / nodes;
    const int chosen = e.group_top_k > 0 ? e.group_top_k : e.groups;
    if (e.groups > 0 && std::fmod(experts_a_node, e.routed / static_cast<double>(e.groups)) == 0) {
      leaving = std::min(static_cast<double>(chosen), nodes) * (nodes - 1) / nodes;
    } else {
      // The chance a node holds none of a token's top-k experts, drawn without replacement.
      double none = 1;
      for (int i = 0; i < e.top_k; ++i)
        none *= std::max(0.0, (e.routed - experts_a_node - i) / (e.routed - i));
      leaving = (nodes - 1) * (1 - none);
    }
  }
  const double dispatch_bytes = flex && j.fp8 == fp8_recipe::blockwise ? 1 : 2;
  const seconds steps = (j.ep - 1.0) * link.alpha;
  return 2.0 * steps + T * leaving * per_token * (dispatch_bytes + 2) * link.beta;
}

/// A layer's communication on one device for one micro-batch's forward: tensor parallelism's
/// collectives (sequence parallelism: an all-gather before and a reduce-scatter after attention
/// and the MLP; without it, an all-reduce after each), context parallelism's keys and values
/// (the part of its ring the scores do not hide, or their all-gather, exposed), the MoE dispatch
/// and combine over the expert group (which an overlapped forward/backward pair can hide).
struct layer_comm {
  seconds total{0}, recomputed{0}, hideable{0};
  seconds tp{0}, cp{0}, ep{0};  ///< `total` by the parallelism it serves
  seconds tp_mlp{0};            ///< of `tp`, a dense MLP's (what recomputing the MLP moves again)
  /// The backward's alone: sequence parallelism's inputs gathered again for the weight gradients
  seconds regather{0};
  /// The backward's tensor-parallel time: `tp` mirrored and `regather`, less what
  /// --tp-comm-overlap hides behind the backward's GEMMs (`overlap_tp_with_gemms`)
  seconds tp_backward{0};
};

/// A ring all-gather (or reduce-scatter: the same time) of `bytes` over job `j`'s
/// tensor-parallel group.
inline seconds tp_ring(const cluster& c, const job& j, double bytes) {
  return collective::ring_all_gather(collective_link(c, j.tp, 1, bytes), j.tp, bytes);
}

/// An eager loss's logits gathered whole over the tensor-parallel group in bf16 before the
/// loss — Llama's reference (fairscale's ColumnParallelLinear, `gather_output` by default) and
/// Aleph Alpha's Scaling (`parallel_output` off by default) — forward only: its backward keeps
/// its own shard of the gradient. Nothing without tensor parallelism.
inline seconds eager_loss_gather(const transformer& m, const job& j, const cluster& c, double T) {
  return j.loss_eager() && j.tp > 1 ? tp_ring(c, j, 2 * T * m.vocab) : seconds(0);
}

/// The bytes a dense linear gathers over tp of an activation of `act` bf16 bytes: in FP8 the
/// FP8 copy it reads — Transformer Engine casts a sequence-parallel shard before its all-gather
/// (layernorm_linear.py, linear.py; with userbuffers `fp8_buf`), half the bytes. The
/// reduce-scatters of the linears' outputs stay bf16.
inline double gathered_bytes(const job& j, double act) {
  return j.fp8 != fp8_recipe::none ? act / 2 : act;
}

inline layer_comm layer_comm_of(const transformer& m, const job& j, const cluster& c, int l) {
  layer_comm out;
  const double T = j.micro_batch_size * j.seq / j.cp, tp = j.tp;
  const double act = T * m.hidden * 2;  // one activation, bf16
  const auto gather = [&](double bytes) { return tp_ring(c, j, bytes); };
  const bool sp = j.sequence_parallel && j.tp > 1;
  const double gathered = gathered_bytes(j, act);
  const seconds block =
      sp ? gather(gathered) + tp_ring(c, j, act)  // the input gathered, the output scattered
         : collective::tensor_parallel_block(collective_link(c, j.tp, 1, act), j.tp, act, false);
  // An MoE block: Megatron's dispatcher gathers over the experts' tensor-parallel ranks (tp's
  // unless folded) what the all-to-all brought each — its tokens' top-k copies — and scatters
  // their outputs back; none where each expert is whole. Shared experts keep the dense layers'
  // tensor parallelism and its collectives.
  const int etp = j.etp();
  const double received = act * etp / tp * m.moe.top_k;
  const seconds moe_block =
      (etp > 1 ? collective::tensor_parallel_block(collective_link(c, etp, 1, received), etp,
                                                   received, j.sequence_parallel || etp < j.tp)
               : seconds(0)) +
      (m.moe.shared_ffn > 0 ? block : seconds(0));
  // With sequence parallelism a column-parallel linear keeps only its input's shard and gathers
  // the whole input again in the backward for its weight gradient (Megatron's
  // LinearWithGradAccumulationAndAsyncCommunication): one all-gather more for the attention, a
  // dense MLP and a shared expert. Megatron overlaps it with the input gradient's matmul; weft
  // prices it serial, as every tensor-parallel collective (Korthikanti et al.'s Table 4: the
  // backward no faster with sequence parallelism than without; docs/planning.md), unless the
  // job overlaps them with --tp-comm-overlap (`overlap_tp_with_gemms`).
  // Latent attention (multi_latent_attention.py) projects each device's own tokens down and
  // gathers what its column-parallel up projections read — the query's latent (or the hidden
  // states without one) and the keys' and values' latent — and the keys' rotary part, which
  // its backward does not gather again; its output is scattered at the model's width.
  seconds attention_block = block;
  if (sp) {
    double read = gathered;  // what the attention's column-parallel linears read, gathered
    if (m.mla.active()) {
      read = T * 2 * ((m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : m.hidden) + m.mla.kv_lora_rank);
      attention_block = gather(read + T * 2 * m.mla.qk_rope_head_dim) + gather(act);
    }
    out.regather = gather(read);
    if (!m.is_moe_layer(l) || m.moe.shared_ffn > 0) out.regather += gather(gathered);
  }
  // FP8 current scaling under sequence parallelism: a column-parallel linear's input and a
  // row-parallel one's output gradient are cast before they are gathered, with one scale on
  // every tensor-parallel rank — a scalar all-reduce (max) of the amax over the group that the
  // cast waits for (Transformer Engine's Float8CurrentScalingQuantizer with an
  // amax_reduction_group: linear.py, layernorm_linear.py, layernorm_mlp.py). Forward: the
  // attention's column-parallel inputs (latent attention's two up projections) and a dense or
  // shared MLP's fc1; backward: the output projection's and fc2's output gradients. The routed
  // experts' linears take no tensor-parallel group. (A selectively recomputed MLP's cast, and
  // its reduction, are not priced again.)
  seconds amax_forward{0}, amax_backward{0};
  if (sp && j.fp8 != fp8_recipe::none && j.fp8_current_scaling) {
    constexpr double scalar = 4;  // one fp32 amax
    const seconds amax =
        collective::ring_all_reduce(collective_link(c, j.tp, 1, scalar), j.tp, scalar);
    const double mlp = !m.is_moe_layer(l) || m.moe.shared_ffn > 0 ? 1 : 0;
    amax_forward = amax * ((m.mla.active() ? 2 : 1) + mlp);
    amax_backward = amax * (1 + mlp);
  }
  const seconds tp_comm = attention_block + (m.is_moe_layer(l) ? moe_block : block) + amax_forward;
  out.tp_backward = tp_comm - amax_forward + out.regather + amax_backward;
  out.total += tp_comm;
  out.recomputed += tp_comm;
  out.tp = tp_comm;
  if (!m.is_moe_layer(l)) out.tp_mlp = block;  // the dense MLP's
  if (j.cp > 1) {
    const double kv_width = m.mla.active() ? m.heads * (m.mla.qk_head_dim() + m.mla.v_head_dim)
                                           : 2 * m.kv_heads * m.head_dim;
    const double kv = 2 * T * kv_width / tp;      // this device's keys and values, bf16
    if (j.cp_comm_type == cp_comm::all_gather) {  // gathered before attention, exposed
      const double all = kv * j.cp;
      out.cp = collective::ring_all_gather(collective_link(c, j.cp, j.tp, all), j.cp, all);
    } else {  // a ring passes K and V round the group, hidden behind the scores
      const seconds ring = (j.cp - 1.0) * collective::p2p(group_link(c, j.cp, j.tp), kv);
      // The scores at the rate attention's kernel reaches over the seq / cp keys of each call
      // (perf/layer.hpp), as the layer's own attention is priced.
      const perf::device chip = chip_of(c, j.attention_kernel());
      const double qk_dim = m.mla.active() ? m.mla.qk_head_dim() : m.head_dim;
      const double rate = j.flash_attention && !chip.flash_forward.empty()
                              ? chip.flash_rate(false, j.seq / j.cp, qk_dim)
                              : c.device.attention_flops();
      const seconds causal = seconds(forward_flops(m, l, T, j.seq).scores / 2 / tp / rate);
      out.cp = ring > causal ? ring - causal : seconds(0);
    }
    out.total += out.cp;
    out.recomputed += out.cp;  // full recomputation moves the keys and values again
  }
  if (m.is_moe_layer(l) && j.ep > 1) {  // dispatch and combine over the expert group
    const link_model ep_link = group_link(c, j.ep, j.expert_stride());
    const seconds a2a = detail::dispatch_and_combine(m, j, c, ep_link, T);
    out.total += a2a;
    out.recomputed += a2a;
    out.hideable += a2a;
    out.ep = a2a;
  }
  return out;
}

/// A GEMM of `gemm` seconds and a collective of `comm` started together on one device: the GEMM
/// runs `slowdown` slower while the collective is in flight (the cluster's published
/// interference), at its own speed after.
inline seconds beside(seconds gemm, seconds comm, double slowdown) {
  return comm >= gemm * (1 + slowdown) ? comm : comm + gemm - comm / (1 + slowdown);
}

/// --tp-comm-overlap: Transformer Engine's userbuffers overlap each tensor-parallel collective
/// of a dense linear with a GEMM, with Transformer Engine's defaults (`initialize_ub`, which
/// Megatron uses without --tp-comm-overlap-cfg):
/// - a column-parallel linear (qkv, fc1) gathers its input by ring exchange in its forward —
///   tp steps, each GEMM of 1/tp of the tokens beside the next shard's transfer — and in its
///   backward gathers the input again beside the input gradient's GEMM and reduce-scatters that
///   gradient beside the weight gradient's (`bulk`);
/// - a row-parallel linear (proj, fc2) reduce-scatters its output pipelined in 4 splits, each
///   split's GEMM beside the previous split's reduce-scatter, and gathers its output's gradient
///   by ring exchange beside the input gradient's GEMM.
/// Only the layers Megatron names qkv, proj, fc1 and fc2 take it: latent attention's
/// projections and the routed experts keep their collectives serial. Replaces in `lc` the
/// serial time of the collectives it overlaps with what stays exposed: the collective past its
/// GEMM, the GEMMs' split into smaller tiles and their interference.
inline void overlap_tp_with_gemms(layer_comm& lc, const perf::layer_kernels& k,
                                  const transformer& m, const job& j, const cluster& c, int l,
                                  const perf::device& chip, const estimate_options& o) {
  if (j.tp < 2) return;
  const double act = j.micro_batch_size * j.seq / j.cp * m.hidden * 2, tp = j.tp;
  const double x = c.overlap.compute_slowdown;
  const seconds whole = tp_ring(c, j, act);                      // a reduce-scatter's, in bf16
  const seconds gather = tp_ring(c, j, gathered_bytes(j, act));  // as `layer_comm_of` prices
  const seconds step = gather / (tp - 1);  // one ring step: a shard to the next rank
  constexpr double splits = 4;             // the pipelined reduce-scatter's (TE's default)
  const double split_bytes = act / splits;
  const seconds split_rs = tp_ring(c, j, split_bytes);
  const auto gemm_of = [&](std::string_view name, bool backward, bool weight) {
    for (const perf::kernel& q : backward ? k.backward : k.forward)
      if (q.name == name && q.kind == perf::kernel_kind::matmul && q.weight == weight)
        return q.shape;
    // The layer's kernels (perf/layer.hpp) and these names must agree: never price a collective
    // against a GEMM that is not there.
    throw internal_error("overlap_tp_with_gemms: the layer has no matmul '" + std::string(name) +
                         "'");
  };
  const auto part_of = [&](perf::gemm g, double parts) {  // one of `parts` of its tokens
    g.m /= parts;
    return gemm_seconds(chip, g, o);
  };
  // The ring exchange: the GEMM in tp parts of its tokens, each but the last beside a step.
  const auto ring = [&](const perf::gemm& g) {
    const seconds part = part_of(g, tp);
    return (tp - 1) * beside(part, step, x) + part - gemm_seconds(chip, g, o);
  };
  seconds forward{0}, backward{0}, serial_forward{0}, serial_backward{0};
  const auto column = [&](std::string_view name) {
    forward += ring(gemm_of(name, false, false));
    const perf::gemm dx = gemm_of(name, true, false), dw = gemm_of(name, true, true);
    backward += beside(gemm_seconds(chip, dx, o), gather, x) - gemm_seconds(chip, dx, o);
    backward += beside(gemm_seconds(chip, dw, o), whole, x) - gemm_seconds(chip, dw, o);
    serial_forward += gather;
    serial_backward += whole + gather;  // the gradient's reduce-scatter, the input gathered again
  };
  const auto row = [&](std::string_view name) {
    const perf::gemm g = gemm_of(name, false, false);
    const seconds part = part_of(g, splits);
    forward +=
        part + (splits - 1) * beside(part, split_rs, x) + split_rs - gemm_seconds(chip, g, o);
    backward += ring(gemm_of(name, true, false));
    serial_forward += whole;
    serial_backward += gather;
  };
  if (!m.mla.active()) column("qkv");
  row("out projection");
  const seconds attention = forward;
  if (!m.is_moe_layer(l)) {
    column("fc1");
    row("fc2");
    lc.tp_mlp = forward - attention;  // what recomputing the MLP moves again
  } else if (m.moe.shared_ffn > 0) {
    column("shared up");
    row("shared down");
  }
  const seconds saved = serial_forward - forward;
  lc.tp -= saved;
  lc.total -= saved;
  lc.recomputed -= saved;
  lc.tp_backward -= serial_backward - backward;
}

/// What selective recomputation runs again of a stage: the parts it names (Megatron's
/// `--recompute-modules`; none without it) and the communication inside them — context
/// parallelism's ring inside attention's core, a dense MLP's tensor-parallel collectives.
struct selective_tally {
  perf::recompute_set parts = 0;
  bool ring = false;  ///< keys and values passed round a ring (not gathered before attention)
  seconds time{0}, comm{0};
  int kernels = 0;
  explicit selective_tally(const job& j)
      : parts(j.policy == recompute::selective && !j.recompute_ops ? j.recompute_modules
                                                                   : perf::recompute_set{0}),
        ring(j.cp_comm_type == cp_comm::p2p) {}
  void add(const priced& forward) {
    const auto [t, n] = forward.of(parts);
    time += t;
    kernels += n;
  }
  void add(const layer_comm& lc) {
    if (perf::has(parts, perf::recompute_module::core_attn) && ring) comm += lc.cp;
    if (perf::has(parts, perf::recompute_module::mlp)) comm += lc.tp_mlp;
  }
};

/// How job `j` keeps the `k`-th layer of a stage, the `on_rank`-th of its rank's (0-based, the
/// rank's stages in model order): its policy, but for full recomputation of some layers only —
/// Megatron's `block` method (the first N of each stage), torchtitan's every N-th of the rank
/// (its counter runs on through the rank's stages: the N-th, 2N-th, ...) — which keeps the
/// others whole.
inline recompute layer_policy(const job& j, int k, int on_rank) {
  if (j.policy != recompute::full) return j.policy;
  if (j.recompute_method == "block" && k >= j.recompute_num_layers) return recompute::none;
  if (j.recompute_every > 0 && (on_rank + 1) % j.recompute_every != 0) return recompute::none;
  return recompute::full;
}

/// Layer `l`'s parameters and its activations on one device, kept as `kept` says, added to
/// `out`; returns what recomputation makes again of it before its backward and holds until that
/// backward ends (`remade_tally`): the whole layer's, less its input, under full recomputation
/// (Megatron's and DeepSpeed's checkpointing run its forward again with gradients, as
/// torchtitan's per-op checkpointing runs its region); under selective recomputation each
/// module's part at its own backward, the largest of them.
inline double add_layer_sizes(stage_estimate& out, const transformer& m, const job& j, int l,
                              recompute kept) {
  const parameter_count p = layer_parameters(m, l);
  out.params += (p.total() - p.experts) / j.tp;
  out.expert_params += p.experts / j.etp() / j.ep;
  activation_layout layout{.seq = j.seq,
                           .micro_batch = static_cast<double>(j.micro_batch_size),
                           .tp = j.tp,
                           .cp = j.cp,
                           .sequence_parallel = j.sequence_parallel,
                           .policy = kept,
                           .modules = j.recompute_modules,
                           .ops = j.recompute_ops,
                           .flash_attention = j.flash_attention,
                           .fp8 = j.fp8 != fp8_recipe::none,
                           .eager = j.eager,
                           .fused_norm = j.fused_rms_norm};
  const double keeps = layer_activation_bytes(m, l, layout);
  out.activation_bytes += keeps;
  if (kept == recompute::none) return 0;
  const recompute policy = layout.policy;
  layout.policy = recompute::none;
  const double whole = layer_activation_bytes(m, l, layout);
  if (policy == recompute::full || j.recompute_ops) return whole - keeps;
  double most = 0;  // selective by modules: each recomputed at its consumer's backward
  layout.policy = recompute::selective;
  for (std::size_t b = 1; b < perf::recompute_module_names.size(); ++b) {
    const auto module = static_cast<perf::recompute_module>(b);
    if (!perf::has(j.recompute_modules, module)) continue;
    layout.modules = perf::bit(module);
    most = std::max(most, whole - layer_activation_bytes(m, l, layout));
  }
  return most;
}

/// What recomputation holds of a stage's layers for a moment beyond what the micro-batches in
/// flight keep (`stage_estimate::rematerialized_bytes`): layer by layer in the stage's order,
/// what it makes again when the layer's backward begins and the stage's bytes kept through the
/// layer (of a micro-batch).
struct remade_tally {
  std::vector<std::pair<double, double>> layers;
  /// The layer just added to `st` (its bytes read once they are added).
  void add(double remade, const stage_estimate& st) {
    layers.emplace_back(remade, st.activation_bytes);
  }
  /// The largest of each layer's part less what its micro-batch has freed by then: what the
  /// stage keeps after the layer (of `kept` in all) — the layers after it and the loss, whose
  /// backwards ran first — but `last` (the embedding's, whose backward runs after the layers').
  /// Block recomputation's first layers so need none while the layers after them keep more.
  double moment(double kept, double last) const {
    double most = 0;
    for (const auto& [remade, through] : layers)
      most = std::max(most, remade - (kept - through - last));
    return most;
  }
};

/// The embedding's lookup: it writes the activation (`shard` bytes, its sequence-parallel
/// shard); its gradient is added back.
inline perf::layer_kernels embedding_kernels(double shard) {
  perf::layer_kernels k;
  perf::detail::streamed(k, "embedding", shard, 2 * shard);
  return k;
}

/// What a stage runs again before its backward besides Megatron's selective modules: each
/// fully recomputed layer's forward, or what per-op checkpointing recomputes of a layer — their
/// kernels, at least their launches, and their collectives.
struct rerun_tally {
  seconds time{0}, comm{0};
  int kernels = 0;
  void add(seconds t, int n, seconds collectives) {
    time += t;
    kernels += n;
    comm += collectives;
  }
  seconds total(const estimate_options& o) const {
    return time + launch_excess(time, kernels, o) + comm;
  }
};

/// What torchtitan's per-op checkpointing (`job::recompute_ops`) runs again of a dense gated
/// layer whose forward priced `f` (`T` tokens on a device), and its kernels: every elementwise
/// kernel, and the matmuls whose outputs its policy does not save — wk, wo and w3 in bf16, every
/// one under FP8 (scaled matmuls are not on its list).
inline std::pair<seconds, int> op_checkpoint_again(const transformer& m, const job& j,
                                                   const perf::device& chip, const priced& f,
                                                   double T, const estimate_options& o) {
  const int matmuls = f.kernels - f.elementwise_kernels - 1;  // all but attention's
  if (j.fp8 != fp8_recipe::none)
    return {f.parts.elementwise + f.parts.matmul, f.elementwise_kernels + matmuls};
  const double tp = j.tp;
  const double q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  const seconds mm = gemm_seconds(chip, {T, kv / tp, m.hidden}, o) +
                     gemm_seconds(chip, {T, m.hidden, q / tp}, o) +
                     gemm_seconds(chip, {T, m.ffn / tp, m.hidden}, o);
  return {f.parts.elementwise + mm, f.elementwise_kernels + 3};
}

/// What selective recomputation runs again of a stage (`s`, nothing without it), at least its
/// kernels' launches.
inline seconds recomputed_parts(const selective_tally& s, const estimate_options& o) {
  if (s.parts == 0) return seconds(0);
  return s.time + launch_excess(s.time, s.kernels, o) + s.comm;
}

/// Of stage `st`'s parameters on one of `tp` devices, the embedding's, the LM head's and the
/// final norm's: never in FP8. Tied embeddings: the last stage keeps its own copy of the
/// embedding for the head (its gradient all-reduced with the first stage's).
inline double edge_params_of(const transformer& m, const layout_stage& st, int tp) {
  const edge_parameters e = edges(m);
  const double copy = m.tied_embeddings && !st.embedding ? m.vocab * m.hidden : 0;
  return ((st.embedding ? e.embedding : 0) + (st.loss ? e.head + e.final_norm + copy : 0)) / tp;
}

/// Bytes a weight's gradient costs to accumulate a micro-batch (`perf::layer_shard`): none with
/// gradient-accumulation fusion; without it the new 16-bit gradient read, the accumulated one
/// (fp32 or 16-bit, `states_of`) read and written. Where the gradients are sharded (FSDP) each
/// micro-batch's are reduce-scattered (priced with the data-parallel traffic) and what is added
/// is a 1/dp shard: left out.
inline double accumulate_bytes_per_weight(const job& j) {
  // DeepSpeed's BF16_Optimizer adds them into its fp32 buffer whatever Megatron's fusion says.
  const bool fused = j.gradient_accumulation_fusion && !j.deepspeed_bf16;
  if (fused || shards_gradients(j.sharding)) return 0;
  return 2 + 2 * states_of(j).gradients;
}

/// What one device of job `j` holds of a layer.
inline perf::layer_shard layer_shard_of(const job& j) {
  return {.micro_batch = static_cast<double>(j.micro_batch_size),
          .seq = j.seq,
          .cp = j.cp,
          .tp = j.tp,
          .ep = j.ep,
          .etp = j.etp(),
          .sequence_parallel = j.sequence_parallel,
          .flash_attention = j.flash_attention,
          .type = j.fp8 == fp8_recipe::none ? perf::dtype::bf16 : perf::dtype::fp8,
          .current_scaling = j.fp8 != fp8_recipe::none && j.fp8_current_scaling,
          .accumulate_bytes = accumulate_bytes_per_weight(j),
          .eager = j.eager,
          .fused_norm = j.fused_rms_norm};
}

/// The bytes Scaling's pipeline engine holds of the last stage's outputs (job `j` with
/// `--grad-all-reduce-fp32`, micro-batches of `T` tokens): the loss reads a micro-batch's
/// logits from the engine's output buffer and nothing takes them from it
/// (`parallel_module.py`: `get`, not `take`), so they stay until their buffer is written again —
/// bf16 and whole over tp (its head gathers them, `parallel_output` off), in two buffers on the
/// last stage (`pipeline_schedule/train.py`'s buffer count), the micro-batch's and the last's.
inline double scaling_output_buffers(const transformer& m, const job& j, double T) {
  if (!j.grad_all_reduce_fp32) return 0;
  return 2 * T * m.vocab * std::min(2, j.micro());
}

/// What the loss of one micro-batch of `T` tokens keeps on its stage, with the head's input
/// (`act` bytes): Megatron's vocabulary-parallel fp32 logits, its 1/tp shard; or an eager
/// loss's log_softmax output in fp32, the whole vocabulary's, which its backward needs two more
/// of for a moment (nll_loss's gradient and log_softmax's input gradient). Beside them, held
/// through the step, Scaling's output buffers (`scaling_output_buffers`).
inline void add_loss_memory(stage_estimate& out, const transformer& m, const job& j, double T,
                            double act) {
  const double buffers = scaling_output_buffers(m, j, T);
  if (!j.loss_eager()) {
    out.activation_bytes += 4 * T * m.vocab / j.tp + act;
    out.held_bytes = std::max(out.held_bytes, buffers);
    return;
  }
  out.activation_bytes += 4 * T * m.vocab + act;
  out.working_bytes = std::max(out.working_bytes, 8 * T * m.vocab);
  out.held_bytes = std::max(out.held_bytes, buffers);
}

/// Stage `st`'s costs and sizes for job `j` of model `m` on cluster `c`.
inline stage_estimate stage_costs(const transformer& m, const job& j, const cluster& c,
                                  const layout_stage& st, const estimate_options& o = {},
                                  int rank_layers_before = 0) {
  stage_estimate out;
  const double T = j.micro_batch_size * j.seq / j.cp;  // tokens a device holds
  const double tp = j.tp;
  const perf::device chip = chip_of(c, j.attention_kernel());
  const double attention_rate = c.device.attention_flops();
  const perf::layer_shard shard = layer_shard_of(j);
  const double act = T * m.hidden * 2;  // one activation, bf16
  // hideable_again: of the recomputed layers' forwards, what a pair may hide
  seconds forward{0}, backward{0}, weights{0}, comm{0}, hideable{0}, hideable_again{0};
  time_split comm_parts;  // tp, cp and ep: the same in the forward and, mirrored, the backward
  // What the backward's tensor-parallel collectives take beyond the forward's mirrored: the
  // inputs sequence parallelism gathers again, less what --tp-comm-overlap hides differently
  seconds backward_tp{0};
  rerun_tally rerun;       // what full recomputation or per-op checkpointing runs again
  seconds loss_gather{0};  // an eager loss's logits gathered: forward only
  int forward_kernels = 0, backward_kernels = 0;
  selective_tally selective{j};
  const auto add = [&](const perf::layer_kernels& k) {
    const priced f = price(k.forward, chip, attention_rate, o);
    const priced b = price(k.backward, chip, attention_rate, o);
    forward += f.time;
    backward += b.time;
    out.forward += f.parts;
    out.backward += b.parts;
    weights += b.weights;
    selective.add(f);
    forward_kernels += f.kernels;
    backward_kernels += b.kernels;
    return f;
  };
  remade_tally remade;  // what recomputation holds of a layer for a moment
  // Layer `l`, the `k`-th the stage runs (its decoder layers, then its MTP blocks).
  const auto add_layer = [&](int l, int k) {
    const perf::layer_kernels kernels = perf::layer_kernels_of(m, l, shard);
    const priced f = add(kernels);
    layer_comm lc = layer_comm_of(m, j, c, l);
    if (j.tp_comm_overlap) overlap_tp_with_gemms(lc, kernels, m, j, c, l, chip, o);
    const recompute kept = layer_policy(j, k, rank_layers_before + k);
    if (kept == recompute::full) {  // its forward runs again before its backward
      rerun.add(f.time, f.kernels, lc.recomputed);
      hideable_again += lc.hideable;
    }
    if (kept == recompute::selective && j.recompute_ops) {  // and its all-gathers again
      const auto [again, n] = op_checkpoint_again(m, j, chip, f, T, o);
      const double gathered = gathered_bytes(j, act);  // a gather's bytes, a reduce-scatter act
      rerun.add(again, n, lc.tp * (gathered / (gathered + act)));
    }
    comm += lc.total;
    backward_tp += lc.tp_backward - lc.tp;
    comm_parts += time_split{.tp = lc.tp, .cp = lc.cp, .ep = lc.ep};
    selective.add(lc);
    hideable += lc.hideable;
    remade.add(add_layer_sizes(out, m, j, l, kept), out);
  };
  for (int k = 0; k < st.layers; ++k) add_layer(st.first_layer + k, k);
  out.params += edge_params_of(m, st, j.tp);  // the embedding, or the head and final norm
  const double embedding_kept = st.embedding ? act / (j.sequence_parallel ? tp : 1) : 0;
  if (st.embedding) {  // its backward runs after the layers'
    out.activation_bytes += embedding_kept;
    add(embedding_kernels(embedding_kept));
  }
  const auto add_head = [&] {  // the LM head and its loss
    add(head_kernels(m, T, j.tp, perf::dtype::bf16, shard.accumulate_bytes,
                     j.loss_eager()));  // no recipe runs the head in FP8
    add_loss_memory(out, m, j, T, act);
    loss_gather += eager_loss_gather(m, j, c, T);
  };
  for (int k = 0; k < st.mtp; ++k) {  // its projection, its block (as the last layer), its head
    perf::layer_kernels proj;
    perf::detail::linear(proj, "mtp projection", T, m.hidden / tp, 2 * m.hidden,
                         perf::linears_of(shard));
    add(proj);
    add_layer(m.layers - 1, st.layers + k);
    add_head();
    out.params +=
        (edges(m).mtp / std::max(m.mtp_layers, 1) - layer_parameters(m, m.layers - 1).total()) / tp;
  }
  if (st.loss) add_head();
  // Backward: its kernels, its communication mirrored, what recomputation runs again first.
  forward += (out.forward.launch = launch_excess(forward, forward_kernels, o));
  backward += (out.backward.launch = launch_excess(backward, backward_kernels, o));
  const seconds again = j.policy == recompute::full || j.recompute_ops
                            ? rerun.total(o)
                            : recomputed_parts(selective, o);
  out.cost.F = forward + comm + loss_gather;
  out.forward.tp += loss_gather;
  out.cost.B = backward + comm + backward_tp + again;
  out.forward += comm_parts;
  out.backward += comm_parts;
  out.backward.tp += backward_tp;
  out.backward.recompute = again;
  out.cost.W = weights;  // the weights' gradients
  out.cost.comm_F = hideable;
  out.cost.comm_B = hideable + hideable_again;
  out.rematerialized_bytes = remade.moment(out.activation_bytes, embedding_kept);
  return out;
}

/// The chunks per rank job `j` runs with generator `g` (its own count, or `--chunks`, or as many
/// as `--pipeline-layout` gives each rank); `config_error` when they disagree.
inline int chunks_per_rank(const transformer& m, const job& j, const generator_info& g) {
  const std::string name(g.name);
  int per_rank = g.chunks_per_rank > 0 ? g.chunks_per_rank : j.chunks;
  if (g.chunks_per_rank > 0 && j.chunks != 1 && j.chunks != g.chunks_per_rank)
    throw config_error("--schedule " + name + " makes " + std::to_string(g.chunks_per_rank) +
                       " chunks per rank, not --chunks " + std::to_string(j.chunks));
  if (!j.layout.empty()) {  // the layout says how many stages each rank holds
    const int given = parse_pipeline_layout(j.layout, j.pp, m.layers, m.mtp_layers).chunks;
    const int runs = g.chunks_per_rank > 0 ? per_rank / (g.bidirectional ? 2 : 1) : given;
    if (given != runs)
      throw config_error("--pipeline-layout gives each rank " + std::to_string(given) +
                         " stage(s); --schedule " + name + " runs " + std::to_string(runs));
    if (g.chunks_per_rank == 0) per_rank = given;
  }
  return per_rank;
}

/// How job `j`'s schedule issues its transfers: as Megatron's code does where it has the
/// schedule (1F1B and the interleaved one: batched calls the host waits for, or with
/// `--overlap-p2p-communication` the interleaved code's one transfer in flight), else as
/// PyTorch's runtime does (the default lowering).
inline p2p_options p2p_of(const job& j) {
  p2p_options p;
  if (j.runtime != pipeline_runtime::megatron) return p;
  if (j.schedule == "1f1b") p.blocking = true;
  if (j.schedule == "interleaved") (j.overlap_p2p_comm ? p.megatron : p.blocking) = true;
  return p;
}

/// Prices the pipeline's transfers in `cost`: a device's activation (its sequence-parallel
/// shard) to the next stage. Consecutive pipeline ranks are tp x cp x dp devices apart, so a
/// node holds per_node / that many of them: a transfer inside a node takes the node's links, one
/// between nodes its network (the cost model's sites). Over data centres (docs/cross-dc.md) the
/// pipeline ranks split evenly over them; a transfer inside one takes the link between
/// consecutive ranks (inside a node while they share one, else between nodes: one class for all
/// of a centre's transfers), one between two the centres' link, at the cross-DC scenario's share
/// of a port (`crossing_slowdown`).
inline void price_transfers(cost_model& cost, const transformer& m, const job& j,
                            const cluster& c) {
  const double whole =
      pipeline_transfer_bytes({.micro_batch_size = static_cast<double>(j.micro_batch_size),
                               .seq = j.seq,
                               .hidden = m.hidden,
                               .tp = j.tp,
                               .cp = j.cp,
                               .sequence_parallel = j.sequence_parallel});
  // Megatron-LM's scatter/gather, in the schedules its code runs: a device sends its 1/tp, the
  // receivers all-gather the rest over their tensor-parallel group (with sequence parallelism
  // the shard is already 1/tp).
  const bool scatter =
      j.scatter_gather_transfers && !j.sequence_parallel && j.tp > 1 && p2p_of(j).lowers();
  const double bytes = scatter ? whole / j.tp : whole;
  const seconds gather = scatter ? tp_ring(c, j, whole) : seconds(0);
  const auto p2p = [&](const link_model& l) { return collective::p2p(l, bytes) + gather; };
  const long long apart = static_cast<long long>(j.tp) * j.cp * j.dp;
  cost.contention = c.overlap;
  if (c.centres.sites <= 1) {
    const seconds near = p2p(c.intra);
    for (kind k : {kind::send, kind::recv}) cost.set(k, phase::F, near).set(k, phase::B, near);
    cost.site_ranks = apart < c.per_node ? static_cast<int>(c.per_node / apart) : 1;
    cost.far_p2p = p2p(c.inter);
    cost.p2p_latency = c.intra.alpha;
    cost.far_p2p_latency = c.inter.alpha;
    return;
  }
  if (j.pp % c.centres.sites != 0)
    throw config_error("the pipeline's " + std::to_string(j.pp) +
                       " ranks do not split evenly over the cluster's " +
                       std::to_string(c.centres.sites) + " data centres");
  const link_model inside = apart < c.per_node ? c.intra : c.inter;
  const seconds near = p2p(inside);
  for (kind k : {kind::send, kind::recv}) cost.set(k, phase::F, near).set(k, phase::B, near);
  const double ratio = crossing_slowdown(c.centres.convergence_ratio, c.centres.sites, j.pp);
  const link_model far = link_model::cross_dc(c.centres.km, ratio, c.inter);
  // Priced with shared links, the centres' uplink is a resource of its own (ports wide, in a
  // pipeline rank's): a crossing moves at its port's speed over it, as alone it did over `far`.
  cost.contention.uplink_ports = 1 / ratio;
  const bool uplink = cost.contention.shared_links;
  cost.site_ranks = j.pp / c.centres.sites;
  cost.far_p2p = p2p(uplink ? link_model::cross_dc(c.centres.km, 1, c.inter) : far);
  cost.p2p_latency = inside.alpha;
  cost.far_p2p_latency = far.alpha;
}

/// The bytes Megatron's optimizer step moves per parameter of a device's shard of the optimizer
/// states, kernel by kernel (mixed precision; megatron/core/optimizer): 16-bit gradients (fp16's,
/// or --grad-reduce-in-bf16) are first copied into fp32 main gradients
/// (`_copy_model_grads_to_main_grads`: `.float()`, 2 read and 4 written; Megatron-FSDP, whose
/// buffers the optimizer reads as they are, skips it); fp16's loss scaler unscales and checks
/// each (`_unscale_main_grads_and_check_for_nan`: `_amp_foreach_non_finite_check_and_unscale_`,
/// 4 read and 4 written); the gradients' norm for clipping (`--clip-grad`, on by default) reads
/// each fp32 gradient (4); Adam reads the fp32 master weight, gradient and both moments and
/// writes the weight and moments (16 + 12); the master weights are copied to the 16-bit model
/// weights (4 read, 2 written). 38 bytes with fp32 gradients, 44 with 16-bit ones, 52 with
/// fp16's.
inline double optimizer_bytes_per_parameter(const job& j) noexcept {
  const double gradients = states_of(j).gradients;
  const bool copied = gradients < 4 && !shards_gradients(j.sharding);  // not Megatron-FSDP's
  const double to_fp32 = copied ? gradients + 4 : 0, unscale = j.fp16 ? 4 + 4 : 0;
  return to_fp32 + unscale + 4 + (16 + 12) + (4 + 2);
}

/// Megatron's data-parallel bucket when none is given: `max(40000000, 1000000 * dp_size)`
/// parameters (`DistributedDataParallelConfig.bucket_size`: larger data-parallel groups need
/// larger buckets to stay bandwidth-bound).
inline double ddp_bucket_parameters(long long dp_ranks) {
  return std::max(40e6, 1e6 * static_cast<double>(dp_ranks));
}

/// Per pipeline rank, where its data-parallel collectives can hide in the simulated step: the
/// wait before its first compute (the warm-up) and that first compute op, which the parameters'
/// all-gather of the next step can overlap (`--overlap-param-gather`); its last compute op and
/// the wait after it (the cool-down), which the gradients' reduce-scatter can
/// (`--overlap-grad-reduce`).
struct dp_windows {
  std::vector<seconds> head, first, last, tail;
  std::vector<seconds> busy;  ///< all its compute (what FSDP's collectives run beside)
};

inline dp_windows dp_windows_of(const program& p, const timeline& t) {
  const auto R = static_cast<std::size_t>(p.ranks());
  dp_windows w{std::vector<seconds>(R, t.makespan), std::vector<seconds>(R, seconds(0)),
               std::vector<seconds>(R, seconds(0)), std::vector<seconds>(R, t.makespan),
               std::vector<seconds>(R, seconds(0))};
  std::vector<seconds> last_end(R, seconds(-1));  // a rank without compute: all of it idle
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (stream_of(p.at(i).k) != stream_class::compute || !t.ran(i)) continue;
    const std::size_t r = p.rank[i];
    w.busy[r] += t.duration_of(i);
    if (t.start[i] < w.head[r]) {
      w.head[r] = t.start[i];
      w.first[r] = t.duration_of(i);
    }
    if (t.finish[i] > last_end[r]) {
      last_end[r] = t.finish[i];
      w.last[r] = t.duration_of(i);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    w.tail[r] = last_end[r] >= seconds(0) ? t.makespan - last_end[r] : t.makespan;
  return w;
}

/// What a data-parallel collective of `comm` in `buckets` equal buckets leaves exposed when
/// Megatron overlaps it with a compute op of `compute` and an `idle` wait beside it. The
/// gradients' buckets are ready one after another as the rank's last backward runs and each is
/// reduced as soon as it is ready and the one before is done; the last is ready only as the
/// backward ends, so at least a bucket's worth runs after it, in the cool-down's wait or
/// exposed (the parameters' gather is the mirror: each bucket before the forward that needs it,
/// the first before any). While the collective runs beside compute, the compute is slower by
/// the cluster's interference fact (`compute_slowdown`).
inline seconds overlapped_exposure(seconds comm, double buckets, seconds idle, seconds compute,
                                   double compute_slowdown) {
  const double n = std::max(buckets, 1.0);
  const seconds beside_compute = compute * ((n - 1) / n);  // until the last bucket is ready
  const seconds after = std::max(comm / n, comm - beside_compute);
  // The compute beside the rest takes 1 + s as long while it is (the simulator's
  // interference): it is longer by that time's s / (1 + s), never more than the rest itself.
  const double s = compute_slowdown;
  const seconds slowed = (comm - after) * (s / (1 + s));
  return std::max(seconds(0), after + slowed - idle);
}

/// A rank's data-parallel collectives for the `dense` and `expert` parameters it holds (`edge` of
/// them the embedding's and head's): the gradients reduce-scattered in fp32 (bf16 with
/// --grad-reduce-in-bf16) and the parameters all-gathered in bf16 (the layers' in FP8 with
/// --fp8-param-gather) over the
/// data-parallel ranks (the experts' over theirs), each at the bus bandwidth its size reaches
/// (inside a node; across nodes the NICs'); FSDP gathers the parameters twice for every
/// micro-batch, before each layer's forward and again before its backward, reduce-scatters the
/// gradients after every micro-batch's backward, and gathers none after the step —
/// Megatron-FSDP's `optim_grads_params` ("gradient reduction occurs on every backward
/// propagation"; each module's parameters released after its forward), and torchtitan's FSDP2
/// without a pipeline (with one, it keeps them gathered between micro-batches: fewer).
/// --grad-all-reduce-fp32 all-reduces the whole gradients in fp32 instead (Scaling's ZeRO-1).
struct dp_traffic {
  seconds reduce{0}, gather{0};
};
inline dp_traffic dp_traffic_of(const job& j, const cluster& c, double dense, double expert,
                                double edge = 0) {
  const long long dp_ranks = static_cast<long long>(j.dp) * j.cp;
  const int d = static_cast<int>(dp_ranks), ed = static_cast<int>(j.expert_dp());
  // The data-parallel ranks are tp devices apart (the experts' etp x ep): inside a node while
  // they fit, across nodes otherwise.
  const auto dp_link = [&](double bytes) { return collective_link(c, dp_ranks, j.tp, bytes); };
  const auto edp_link = [&](double bytes) {
    return collective_link(c, j.expert_dp(), static_cast<long long>(j.etp()) * j.ep, bytes);
  };
  const bool fsdp = j.sharding == dp_sharding::optim_grads_params;
  const double micro = fsdp ? static_cast<double>(j.micro()) : 1, gathers = fsdp ? 2 * micro : 1;
  const state_bytes b = states_of(j), edges = states_of(j, false);
  const double grads = dense * b.gradients, experts = expert * b.gradients;
  const double weights = (dense - edge) * b.weights + edge * edges.weights;
  const seconds gather =
      gathers * (collective::ring_all_gather(dp_link(weights), d, weights) +
                 collective::ring_all_gather(edp_link(expert * b.weights), ed, expert * b.weights));
  if (j.grad_all_reduce_fp32) {  // Scaling: the whole gradients all-reduced in fp32
    const double fp32 = state_bytes{}.gradients;  // an fp32 gradient's bytes
    const double whole = dense * fp32, expert_whole = expert * fp32;
    return {collective::ring_all_reduce(dp_link(whole), d, whole) +
                collective::ring_all_reduce(edp_link(expert_whole), ed, expert_whole),
            gather};
  }
  return {micro * (collective::ring_reduce_scatter(dp_link(grads), d, grads) +
                   collective::ring_reduce_scatter(edp_link(experts), ed, experts)),
          gather};
}

/// The copies around Scaling's fp32 all-reduce (--grad-all-reduce-fp32), per parameter of
/// 16-bit gradients, whole on every rank (optimizer/allreduce.py, skipped without data
/// parallelism): the bucket flattened (2 read, 2 written), divided by the data-parallel size in
/// place (2 + 2), cast to fp32 for the all-reduce (2 + 4) and back (4 + 2), and copied into
/// each gradient (2 + 2).
inline constexpr double scaling_bucket_bytes = 4 + 4 + 6 + 6 + 4;
/// Scaling's bucket: at most this many gradients flattened at once (`allreduce_bucket_size`,
/// optimizer_config.py), held in 16 bits and again in fp32 while it is reduced.
inline constexpr double scaling_bucket_parameters = 5e8;
inline constexpr double scaling_bucket_held_bytes = 2 + 4;

/// Scaling's optimizer step (optimizer.py, parameter_group.py), bytes per parameter: of the
/// rank's whole 16-bit gradients, unscaled in place (2 + 2) and read for their norm (2) — set
/// to None after, no zeroing; of its shard of the optimizer states, the fp32 gradient made with
/// `zeros_like` (4) and filled from the 16-bit one (2 + 4), PyTorch's AdamW as its foreach
/// kernels run it (weight decay 8, lerp of the first moment 12, the second's mul 8 and
/// addcmul 12, sqrt 8, div 8, add of eps 8, addcdiv into the weight 16: 80), and the updated
/// master weight copied to the 16-bit partition (4 + 2).
struct scaling_step_bytes {
  static constexpr double whole = 2 + 2 + 2;
  static constexpr double shard = 4 + 6 + (8 + 12 + 8 + 12 + 8 + 8 + 8 + 16) + 6;
};

/// The optimizer step of a rank holding `dense` and `expert` parameters: Adam on its shard of
/// the optimizer states (all of them when unsharded) and the zeroing of its gradient buffer
/// (sharded with the gradients), memory-bound kernels at the memory's sustained bandwidth;
/// Scaling's (--grad-all-reduce-fp32) as `scaling_step_bytes` and `scaling_bucket_bytes` say.
inline seconds optimizer_time(const job& j, const cluster& c, double dense, double expert) {
  const long long dp_ranks = static_cast<long long>(j.dp) * j.cp;
  const auto shard_of = [&](bool split) {
    return dense / static_cast<double>(split ? dp_ranks : 1) +
           expert / static_cast<double>(split ? j.expert_dp() : 1);
  };
  const double rate = chip_of(c).memory_bytes_per_s();
  if (j.grad_all_reduce_fp32)  // Scaling's step, and the copies around its all-reduce
    return seconds((scaling_step_bytes::shard * shard_of(true) +
                    (scaling_step_bytes::whole + (dp_ranks > 1 ? scaling_bucket_bytes : 0.0)) *
                        (dense + expert)) /
                   rate);
  // Its gradient buffer, whole unless the gradients are sharded, is zeroed for the next step
  // in its own type (`zero_grad_buffer`).
  const double bytes =
      optimizer_bytes_per_parameter(j) * shard_of(j.sharding != dp_sharding::no_shard) +
      states_of(j).gradients * shard_of(shards_gradients(j.sharding));
  return seconds(bytes / rate);
}

/// Per pipeline rank, what its stages hold: parameters (dense and experts') and layers.
struct rank_holdings {
  std::vector<double> dense, expert, layers;
  std::vector<double> edge;     ///< of `dense`, the embedding's, head's and final norm's
  std::vector<double> working;  ///< the largest of its stages' `stage_moment_bytes`
  /// Of `edge`, a tied embedding's parameters whose gradient it all-reduces with another rank:
  /// the first stage's embedding and the last stage's copy of it for the head, on two ranks.
  std::vector<double> tied;
};

/// The gradient all-reduce of a tied embedding of `params` parameters a device held by the
/// first and the last pipeline rank: after the backward, before the optimizer, the two copies'
/// gradients are summed (Megatron's `_allreduce_word_embedding_grads`, DeepSpeed's
/// `ReduceTiedGrads`) in the gradients' type, by the two ranks (pp - 1) x tp x cp x dp devices
/// apart — over NVLink when the whole job fits in a node, else across nodes.
inline seconds tied_embedding_sync(const job& j, const cluster& c, double params) {
  if (params <= 0) return seconds(0);
  const double bytes = params * states_of(j).gradients;
  const long long apart = static_cast<long long>(j.pp - 1) * j.tp * j.cp * j.dp;
  const link_model l = j.devices() <= c.per_node ? collective_link(c, 2, 1, bytes)
                                                 : collective_link(c, 2, apart, bytes);
  return collective::ring_all_reduce(l, 2, bytes);
}

/// The most elements one parameter tensor of stage `ls` of model `m` has on a device of tensor
/// parallelism `tp`: the vocabulary's (its 1/tp rows) where the stage holds the embedding or the
/// head, else its layers' largest linear — the fused QKV (or latent attention's up projections),
/// a dense MLP's fused gate and up projection, an expert's (each its own tensor, as DeepSpeed's
/// MoE holds them) or the shared experts'.
inline double largest_parameter(const transformer& m, const layout_stage& ls, int tp) {
  double most = ls.embedding || ls.loss ? m.vocab * m.hidden / tp : 0;
  if (ls.layers + ls.mtp == 0) return most;
  const double gated = m.mlp == mlp_kind::gated ? 2 : 1, h = m.hidden;
  if (m.mla.active()) {
    const mla_shape& a = m.mla;
    const double q_in = a.q_lora_rank > 0 ? a.q_lora_rank : h;
    most = std::max({most, q_in * m.heads * a.qk_head_dim() / tp,
                     a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp});
  } else {
    most = std::max(most, (m.heads + 2.0 * m.kv_heads) * m.head_dim * h / tp);
  }
  most = std::max(most, gated * m.ffn * h / tp);
  if (m.moe.active())
    most = std::max({most, gated * m.moe.expert_ffn * h, gated * m.moe.shared_ffn * h / tp});
  return most;
}

/// What stage `st` (laid out as `ls`) needs beyond its model states and what its micro-batches
/// keep: what it holds through the step, and the largest of its moments — its passes' working
/// memory, what recomputation makes again of a layer, and DeepSpeed's BF16_Optimizer's copy: it
/// adds each parameter's 16-bit gradient into its fp32 one after every backward through an fp32
/// copy of it (`hp_grad.add_(lp.grad.to(hp_grad.dtype))`), the largest parameter's 4 bytes an
/// element at once, when that backward's micro-batch has freed what it kept.
inline double stage_moment_bytes(const stage_estimate& st, const layout_stage& ls,
                                 const transformer& m, const job& j) {
  double moment = std::max(st.working_bytes, st.rematerialized_bytes);
  if (j.deepspeed_bf16)
    moment = std::max(moment, 4 * largest_parameter(m, ls, j.tp) - st.activation_bytes);
  return st.held_bytes + moment;
}

/// What each pipeline rank of `out` (its stages and schedule set) holds: the parameters of its
/// chunks' stages (a DualPipe's second copy of a stage counted again), and which of them are a
/// tied embedding's copies.
inline rank_holdings holdings_of(const estimate& out, const transformer& m, const job& j,
                                 const pipeline_layout& layout) {
  const model_desc& md = out.sched.model;
  rank_holdings held;
  held.dense.assign(static_cast<std::size_t>(j.pp), 0);
  held.expert = held.layers = held.edge = held.working = held.tied = held.dense;
  std::vector<bool> holds_copy(held.dense.size(), false);  // the embedding, or the head's copy
  for (int ch = 0; ch < md.chunks(); ++ch) {
    const auto r = static_cast<std::size_t>(md.rank_of(ch));
    const std::size_t s = static_cast<std::size_t>(ch) % out.stages.size();
    const stage_estimate& st = out.stages[s];
    const layout_stage& ls = layout.stages[s];
    held.dense[r] += st.params;
    held.expert[r] += st.expert_params;
    held.edge[r] += edge_params_of(m, ls, j.tp);
    held.layers[r] += ls.layers + ls.mtp;
    held.working[r] = std::max(held.working[r], stage_moment_bytes(st, ls, m, j));
    if (ls.embedding || ls.loss) holds_copy[r] = true;
  }
  // Tied copies on more than one rank (1F1B's and the interleaved schedule's first and last, a
  // DualPipe's two ends; a V's one rank holds both) are summed after the backward.
  if (m.tied_embeddings && std::count(holds_copy.begin(), holds_copy.end(), true) > 1)
    for (std::size_t r = 0; r < holds_copy.size(); ++r)
      if (holds_copy[r]) held.tied[r] = m.vocab * m.hidden / j.tp;
  return held;
}

/// The data-parallel side of `out` (its stages and schedule set): per rank, the model states
/// and the memory with the peak live activations, the exposed gradient reduction (the slowest
/// rank's) and the optimizer step (the largest shard's).
inline void add_data_parallel(estimate& out, const job& j, const cluster& c,
                              const rank_holdings& held) {
  const dp_windows windows = dp_windows_of(out.prog, out.time);
  const buffer<double> live = peak_live_weight(
      out.sched, [&](int ch) { return out.chunk_activation_bytes[static_cast<std::size_t>(ch)]; });
  const long long dp_ranks = static_cast<long long>(j.dp) * j.cp;
  const int dense_shards = static_cast<int>(dp_ranks);
  const int expert_shards = static_cast<int>(j.expert_dp());
  const bool fsdp = j.sharding == dp_sharding::optim_grads_params;
  // What sharded states need whole for a moment, per layer of the rank (the average of its
  // stages'): sharded parameters gathered in bf16 for the layer computing and the next one
  // prefetched; sharded gradients a layer's fp32 bucket waiting for its reduce-scatter.
  const state_bytes per = states_of(j);
  const double transient_per_param =
      dense_shards <= 1
          ? 0.0  // one data-parallel rank: nothing to gather or reduce
          : (fsdp ? 2 * per.weights : 0.0) + (shards_gradients(j.sharding) ? per.gradients : 0.0);
  seconds slowest_sync{0}, slowest_optimizer{0};
  for (std::size_t r = 0; r < held.dense.size(); ++r) {
    const double dense = held.dense[r], expert = held.expert[r];
    const double layers = std::max(1.0, held.layers[r]);
    const double edge = held.edge[r];
    const state_bytes b = states_of(j), edges = states_of(j, false);
    // Scaling's all-reduce holds a bucket of gradients flattened in 16 bits and in fp32.
    const double bucket =
        j.grad_all_reduce_fp32 && dp_ranks > 1
            ? scaling_bucket_held_bytes * std::min(dense + expert, scaling_bucket_parameters)
            : 0.0;
    const double buffers =
        transient_per_param * (dense + expert) / layers + held.working[r] + bucket;
    out.buffers_per_rank.push_back(buffers);
    out.states_per_rank.push_back(model_state_bytes(dense - edge, dense_shards, j.sharding, b) +
                                  model_state_bytes(edge, dense_shards, j.sharding, edges) +
                                  model_state_bytes(expert, expert_shards, j.sharding, b) +
                                  buffers);
    out.memory_per_rank.push_back(out.states_per_rank.back() + live[r]);
    const auto [reduce, gather] = dp_traffic_of(j, c, dense, expert, edge);
    seconds exposed = reduce + gather;
    const double s = c.overlap.compute_slowdown;
    if (fsdp) {  // FSDP overlaps both, a layer ahead, beside the rank's compute and in its
                 // waits (the pipeline's bubbles) until its last compute ends; a layer's worth
                 // of one micro-batch is left for its tail, or what the step is too short to
                 // cover — so more micro-batches never shorten the step
      const seconds until_last = out.time.makespan - windows.tail[r];
      exposed = overlapped_exposure(exposed, layers * static_cast<double>(j.micro()),
                                    windows.tail[r], until_last, s);
    } else {  // Megatron's buckets, each launched as soon as it can be: its dense and expert
              // parameters in buffers of their own
      const double bucket = ddp_bucket_parameters(dp_ranks);
      const double buckets = std::ceil(dense / bucket) + std::ceil(expert / bucket);
      if (j.sharding == dp_sharding::no_shard) {  // one all-reduce, reduce and gather together
        if (j.overlap_grad_reduce)
          exposed =
              overlapped_exposure(reduce + gather, buckets, windows.tail[r], windows.last[r], s);
      } else {
        if (j.overlap_grad_reduce)
          exposed +=
              overlapped_exposure(reduce, buckets, windows.tail[r], windows.last[r], s) - reduce;
        if (j.overlap_param_gather)
          exposed +=
              overlapped_exposure(gather, buckets, windows.head[r], windows.first[r], s) - gather;
      }
    }
    exposed += tied_embedding_sync(j, c, held.tied[r]);
    slowest_sync = std::max(slowest_sync, exposed);
    slowest_optimizer = std::max(slowest_optimizer, optimizer_time(j, c, dense, expert));
  }
  out.grad_sync = slowest_sync;
  out.optimizer = slowest_optimizer;
}

/// Per pipeline rank, where its step goes (plan/breakdown.hpp): each chunk's passes times the
/// micro-batches the schedule runs through it, then the simulated pipeline's waits.
inline void add_breakdown(estimate& out) {
  const model_desc& md = out.sched.model;
  std::vector<int> passes(static_cast<std::size_t>(md.chunks()), 0);  // forwards per chunk
  for (const op& o : out.sched.ops)
    if (o.ph == phase::F && stream_of(o.k) == stream_class::compute) ++passes[o.chunk];
  out.breakdown.assign(static_cast<std::size_t>(md.ranks), {});
  std::vector<int> chunks_of(out.breakdown.size(), 0);
  for (int ch = 0; ch < md.chunks(); ++ch) {
    const auto r = static_cast<std::size_t>(md.rank_of(ch));
    const stage_estimate& st = out.stages[static_cast<std::size_t>(ch) % out.stages.size()];
    const auto n = static_cast<double>(passes[static_cast<std::size_t>(ch)]);
    rank_breakdown& b = out.breakdown[r];
    b.work += (st.forward + st.backward) * n;
    b.F += st.cost.F;
    b.B += st.cost.B;
    b.W += st.cost.W;
    ++chunks_of[r];
  }
  for (std::size_t r = 0; r < out.breakdown.size(); ++r) {
    rank_breakdown& b = out.breakdown[r];
    const rank_metrics& rm = out.metrics.ranks[r];
    const double k = 1.0 / std::max(chunks_of[r], 1);
    b.F *= k;
    b.B *= k;
    b.W *= k;
    b.hidden = std::max(seconds(0), b.work.total() - rm.busy);
    b.slowed = std::max(seconds(0), rm.busy - b.work.total());
    b.transfers = std::min(rm.exposed_comm, rm.idle);
    b.bubble = rm.idle - b.transfers;
    b.grad_sync = out.grad_sync;
    b.optimizer = out.optimizer;
    b.step = out.step;
  }
}

}  // namespace detail

/// Estimates job `j` of model `m` on cluster `c`: checks the job (`config_error` naming what
/// does not split), costs each stage, simulates the pipeline with schedule `j.schedule` and
/// the cluster's contention facts, adds the gradient reduction and the optimizer.
inline estimate estimate_job(const transformer& m, const job& given, const cluster& c,
                             const estimate_options& o = {}) {
  const job j = with_megatron_forms(m, given);
  check_cluster(c);
  check_job(m, j);
  if (j.fp8 != fp8_recipe::none && !detail::chip_of(c).has_fp8())
    throw config_error("--fp8 " + std::string(fp8_names[static_cast<std::size_t>(j.fp8)]) +
                       ": the " + std::string(c.name) +
                       " cluster's devices have no FP8 units (their facts give no FP8 peak)");
  // Megatron's combined 1F1B is its interleaved schedule with one more warm-up micro-batch,
  // without a pipeline too (schedules.py): the generator that has the extra warm-up.
  const std::string schedule = j.overlap_moe_ep_comm ? "interleaved" : j.schedule;
  const generator_info* g = find_generator(schedule);
  if (!g) (void)generate(schedule, {});  // the registry's error, naming the known ones
  if (j.tp_comm_overlap && g->splits_backward)
    throw config_error(
        "--tp-comm-overlap hides the backward's reduce-scatter behind the weight gradient's GEMM, "
        "which --schedule " +
        schedule +
        " runs apart (its dW deferred); Megatron's 1f1b and interleaved keep them together");
  const int per_rank = detail::chunks_per_rank(m, j, *g);
  job staged = j;
  staged.chunks = g->bidirectional ? per_rank / 2 : per_rank;
  const pipeline_layout layout = stages_of(m, staged);

  estimate out;
  generator_args a;
  a.ranks = j.pp;
  a.micro = j.micro();
  a.chunks = per_rank;
  a.transfers = true;
  a.p2p = detail::p2p_of(j);
  a.extra_warmup = j.overlap_moe_ep_comm;
  if (o.programs) {
    const program_cache::made& made = o.programs->get(schedule, a);
    out.sched = made.first;
    out.prog = made.second;
  } else {
    out.sched = generate(schedule, a);
    out.prog = lower(out.sched);
  }
  const model_desc& md = out.sched.model;
  // Each stage on its rank (the schedule's placement), after the rank's earlier stages' layers.
  std::vector<int> layers_on(static_cast<std::size_t>(j.pp), 0);
  for (std::size_t s = 0; s < layout.stages.size(); ++s) {
    const layout_stage& st = layout.stages[s];
    int& before = layers_on[static_cast<std::size_t>(md.rank_of(static_cast<int>(s)))];
    out.stages.push_back(detail::stage_costs(m, j, c, st, o, before));
    before += st.layers + st.mtp;
  }
  const auto stage_of = [&](int chunk) {
    return static_cast<std::size_t>(chunk) % out.stages.size();  // DualPipe's second copy
  };
  for (int ch = 0; ch < md.chunks(); ++ch) out.cost.chunks.push_back(out.stages[stage_of(ch)].cost);
  detail::price_transfers(out.cost, m, j, c);
  out.time = simulate(out.prog, out.cost);
  out.metrics = measure(out.prog, out.time);
  out.pipeline = out.time.makespan;

  // Per rank: its stages' parameters (and their states), and its peak live activations.
  for (int ch = 0; ch < md.chunks(); ++ch)
    out.chunk_activation_bytes.push_back(out.stages[stage_of(ch)].activation_bytes);
  detail::add_data_parallel(out, j, c, detail::holdings_of(out, m, j, layout));
  out.step = out.pipeline + out.grad_sync + out.optimizer;
  detail::add_breakdown(out);
  // The ranges of the model, the job and the cluster keep every term finite; should a
  // combination still overflow, it is refused rather than printed as inf or NaN.
  if (!(std::isfinite(out.step.count()) && out.step.count() > 0))
    throw config_error(
        "the estimated step is not a finite time: the model's, the job's and the "
        "cluster's sizes together are beyond what weft plans (docs/limits.md)");

  const double tokens = static_cast<double>(j.batch()) * j.seq;
  out.model_flops = model_flops(m, tokens, j.seq);
  out.tokens_per_s = tokens / out.step.count();
  out.tflops_per_device = out.model_flops / out.step.count() / j.devices() / 1e12;
  // Against the peak of the precision the linears run in: FP8's where they run in FP8, so that
  // MFU stays a share of what the device could do (NVIDIA's FP8 peak is twice its bf16 one).
  const double peak =
      j.fp8 != fp8_recipe::none ? detail::chip_of(c).peak(perf::dtype::fp8) : c.device.peak_flops;
  out.mfu = out.model_flops / (out.step.count() * j.devices() * peak);
  return out;
}

}  // namespace weft::plan
