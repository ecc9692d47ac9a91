// The AMPipe scenario of MindSpeed's ampipe note ("双机16P"): a MoE layer's costs on a device mesh,
// derived from public facts — the layer's FLOPs, a device's throughput, its memory bandwidth,
// link bandwidths — with one parameter set for every configuration, and the schedule each of
// AMPipe's switches gives. Nothing is fitted to the note's table (docs/ampipe.md compares).
#pragma once

#include <cmath>
#include <vector>

#include <weft/core/link.hpp>
#include <weft/generators/ampipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/perf/flops.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/device.hpp>

namespace weft {

/// A MoE transformer on a device mesh. The model, the run and the machines have no defaults
/// here: they are read from a model, a job and a cluster (`plan::moe_mesh_facts_of`; the note's
/// run is presets/ampipe-16p: 2 machines x 8 Ascend 910B devices, sequence 128k, GPT-3 175B's
/// width, 2 layers of 4 experts top-2, ep 2, tp 8, cp 2), so each number has one home; only the
/// precisions (bf16 activations, fp32 partial sums) are assumed.
struct moe_mesh_facts {
  double seq = 0;  ///< tokens per micro-batch
  double hidden = 0;
  double ffn = 0;  ///< each routed expert's inner width
  int layers = 0;
  int experts = 0, top_k = 0;
  int tp = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;
  bool full_recompute = false;  ///< each layer's forward runs again in its backward
  double bytes_per_value = 2;   ///< bf16 activations
  double accum_bytes = 4;       ///< fp32 gradient partials (what AMPipe's chunks sum)
  /// A device (sim/device.hpp): its peak, the share of it sustained, its HBM bandwidth.
  double peak_flops = 0;
  double efficiency = 0;
  double memory_bytes_per_s = 0;
  /// The links tensor parallelism and expert parallelism run over (the note's: inside a
  /// machine over HCCS, across the two machines on one 200 Gb/s RoCE port per device).
  link_model tp_link{};
  link_model ep_link{};

  /// Tokens one device holds between TP regions (sequence-parallel shard of its CP slice).
  constexpr double local_tokens() const noexcept { return seq / cp / (sequence_parallel ? tp : 1); }
};

/// Per-device work and costs of one layer (forward), for the docs and the tests.
struct moe_mesh_layer {
  double attention_flops = 0;  ///< QKV, projection, router
  double causal_flops = 0;     ///< causal scores and their weighted sum
  double expert_flops = 0;     ///< the routed experts' matmuls
  seconds attention{0}, causal{0}, experts{0};
  seconds sp_comm{0};     ///< attention's all-gather and reduce-scatter (or all-reduce)
  seconds all_to_all{0};  ///< one all-to-all over the expert-parallel group
  seconds mlp_gather{0};  ///< the experts' all-gather (sequence parallelism), or reduce-scatter
  seconds chunk_sum{0};   ///< one chunk's full-size dK/dV partials cast and added (AMPipe)
};

constexpr moe_mesh_layer layer_costs(const moe_mesh_facts& f) noexcept {
  moe_mesh_layer c;
  const double h = f.hidden, tokens = f.seq / f.cp, rate = f.peak_flops * f.efficiency;
  // The FLOPs' one home (perf/flops.hpp): QKV, the projection and the router; the causal half
  // of the scores (heads x head dim = h); top-k experts of two matrices each.
  using perf::matmul_flops;
  c.attention_flops = (matmul_flops(tokens, h, 3 * h) + matmul_flops(tokens, h, h) +
                       matmul_flops(tokens, h, f.experts)) /
                      f.tp;
  c.causal_flops = perf::causal_score_flops(tokens, f.seq, 1, h, h) / f.tp;
  c.expert_flops = f.top_k * 2 * matmul_flops(tokens, h, f.ffn) / f.tp;
  c.attention = seconds(c.attention_flops / rate);
  c.causal = seconds(c.causal_flops / rate);
  c.experts = seconds(c.expert_flops / rate);
  const double activations = tokens * h * f.bytes_per_value;  // one CP slice, all of TP's
  c.sp_comm = collective::tensor_parallel_block(f.tp_link, f.tp, activations, f.sequence_parallel);
  c.all_to_all = collective::pairwise_all_to_all(
      f.ep_link, f.ep, f.local_tokens() * f.top_k * h * f.bytes_per_value);
  c.mlp_gather = f.sequence_parallel
                     ? collective::ring_all_gather(f.tp_link, f.tp, activations * f.top_k)
                     : seconds(0);
  // dK and dV of every token (this rank's heads), read, added to and written back.
  c.chunk_sum = seconds(3 * tokens * 2 * h / f.tp * f.accum_bytes / f.memory_bytes_per_s);
  return c;
}

/// The cost table: per (kind, phase) a layer's whole sub-stage; splits and pieces take their
/// share (cost.hpp), latencies and the chunk sums stay whole. attn holds attention, its norms,
/// the router and the sequence-parallel all-gather/reduce-scatter around it; dispatch holds the
/// all-to-all and the experts' all-gather, combine the reduce-scatter and the all-to-all (the
/// order they run in); mlp the experts. A backward recomputes its forward first under full
/// recompute, so it costs its forward (communication included) on top.
constexpr cost_model ampipe_cost_model(const moe_mesh_facts& f) noexcept {
  const moe_mesh_layer l = layer_costs(f);
  const double again = f.full_recompute ? 1 : 0;
  cost_model c;
  const seconds attn_f = l.attention + l.causal + l.sp_comm;
  const seconds attn_b = 2.0 * (l.attention + l.causal) + l.sp_comm + again * attn_f;
  c.set(kind::attn, phase::F, attn_f).set(kind::attn, phase::B, attn_b);
  c.causal_share = l.causal / attn_f;
  c.set(kind::mlp, phase::F, l.experts).set(kind::mlp, phase::B, (2 + again) * l.experts);
  const seconds a2a_f = l.all_to_all + l.mlp_gather;
  for (kind k : {kind::dispatch, kind::combine})
    c.set(k, phase::F, a2a_f).set(k, phase::B, (1 + again) * a2a_f);
  // What does not shrink with a chunk: link latencies; a chunk's dK/dV sum in the backward.
  const seconds latency = (f.ep - 1.0) * f.ep_link.alpha +
                          (f.sequence_parallel ? (f.tp - 1.0) * f.tp_link.alpha : seconds(0));
  for (kind k : {kind::dispatch, kind::combine}) {
    c.fixed[static_cast<int>(k)][static_cast<int>(phase::F)] = latency;
    c.fixed[static_cast<int>(k)][static_cast<int>(phase::B)] = (1 + again) * latency;
  }
  c.fixed[static_cast<int>(kind::attn)][static_cast<int>(phase::B)] = l.chunk_sum;
  // What of it is tensor-parallel communication (on the machine's links): only contention sees
  // it, as a volume that shares those links: attention's all-gather before it and its
  // reduce-scatter after (half each), the experts' all-gather after the dispatch's all-to-all
  // and their reduce-scatter before the combine's.
  const auto tp_comm = [&](kind k, phase ph, seconds t, double first) {
    c.tp_comm[static_cast<int>(k)][static_cast<int>(ph)] = t;
    c.tp_first[static_cast<int>(k)][static_cast<int>(ph)] = first * t;
  };
  tp_comm(kind::attn, phase::F, l.sp_comm, 0.5);
  tp_comm(kind::attn, phase::B, (1 + again) * l.sp_comm, 0.5);
  for (phase ph : {phase::F, phase::B}) {
    const double n = ph == phase::F ? 1 : 1 + again;
    tp_comm(kind::dispatch, ph, n * l.mlp_gather, 0);
    tp_comm(kind::combine, ph, n * l.mlp_gather, 1);
  }
  return c;
}

/// The model FLOPs of one micro-batch on one device, as Megatron-LM counts them for its TFLOP/s:
/// forward and backward, 3 x the forward, the recomputed forward not counted.
constexpr double step_flops(const moe_mesh_facts& f) noexcept {
  const moe_mesh_layer l = layer_costs(f);
  return f.layers * 3 * (l.attention_flops + l.causal_flops + l.expert_flops);
}

/// AMPipe's switches on the scenario: the configuration the rules check.
constexpr ampipe_config scenario_config(const moe_mesh_facts& f, ampipe_config switches) noexcept {
  switches.seq = static_cast<long long>(f.seq);
  switches.tp = f.tp;
  switches.cp = f.cp;
  switches.sequence_parallel = f.sequence_parallel;
  switches.local_experts = f.experts / f.ep;
  return switches;
}

/// One training step of the scenario (pp 1: a micro-batch's forward, then its backward) with
/// AMPipe's switches laid out; throws `config_error` for a configuration the rules refuse.
inline schedule ampipe_schedule(const moe_mesh_facts& f, const ampipe_config& switches,
                                ampipe_layout* layout = nullptr) {
  const ampipe_layout lay = resolve(scenario_config(f, switches));
  if (layout) *layout = lay;
  return one_f_one_b({.ranks = 1,
                      .micro = 1,
                      .layers = f.layers,
                      .stages = stage_set::moe(),
                      .overlap = lay.overlap,
                      .splits = lay.splits,
                      .pieces = lay.pieces});
}

}  // namespace weft
