// The cross-data-centre scenario of MindSpeed's pp-cross-dc-comm-overlap note: llama2-70B with
// TP 8, PP 8, DP 1 over two data centres 960 km apart, interleaved 1F1B at 1, 2 or 5 chunks per
// rank. Costs come from public facts — the model's FLOPs and activation sizes, a device's
// throughput, link latencies and bandwidths — with one parameter set for every row of the
// note's table; nothing is fitted to it (docs/cross-dc.md compares).
#pragma once

#include <weft/core/link.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/device.hpp>

namespace weft {

/// The facts the scenario is priced from: a dense model trained with Megatron's interleaved
/// schedule over data centres. The model, the run and the machines have no defaults here: they
/// are read from a model, a job and a cluster (`plan::xdc_facts_of`; the note's run is
/// presets/llama2-70b-xdc: llama2-70B, Touvron et al. 2023, on Ascend 910B servers), so each
/// number has one home; only the precision (bf16) is assumed.
struct xdc_facts {
  // The model, as a pipeline rank sees it.
  int layers = 0;
  double hidden = 0;  ///< the activation's width
  /// One layer's forward FLOPs per device for one micro-batch (`plan::forward_flops` over the
  /// tensor-parallel group): its linears, whose weight gradients cost as much again, and the
  /// causal half of the scores and weighted sum (flash attention skips the masked half).
  double linear_flops = 0, causal_flops = 0;
  double seq = 0;  ///< tokens a sequence
  int micro_batch_size = 0;
  // The run (the note's: tp 8, pp 8, dp 1, sequence parallelism, so Megatron sends a pipeline
  // activation of seq / tp tokens per device).
  int tp = 0, pp = 0, dp = 0;
  int chunks = 1;  ///< virtual pipeline size (the note's table's VP)
  /// MindSpeed's NanoPipe (the table's nanopipe column): its interleaved schedule at any VP,
  /// with weight gradients deferred into the bubbles (`interleaved_params::nanopipe`).
  bool nanopipe = false;
  int micro = 0;  ///< micro-batches per step
  bool sequence_parallel = false;
  double bytes_per_value = 2;  ///< bf16 activations
  device_facts device{};
  link_model intra{};  ///< inside a server (HCCS)
  link_model inter{};  ///< between servers (a device's RoCE port)
  // The data centres: the pipeline ranks split evenly over `sites`, `km` apart; every device's
  // port converges `ratio` to 1 onto the links between the sites.
  double km = 0;
  double ratio = 1;
  int sites = 1;

  constexpr int devices() const noexcept { return tp * pp * dp; }
  constexpr int layers_per_chunk() const noexcept { return layers / (pp * chunks); }
};

/// Per device, the FLOPs of one layer's linears in a forward for one micro-batch.
constexpr double xdc_linear_flops(const xdc_facts& f) noexcept { return f.linear_flops; }

/// Per device, one layer's forward FLOPs for one micro-batch: its linears and the causal half
/// of the scores and weighted sum.
constexpr double xdc_layer_flops(const xdc_facts& f) noexcept {
  return f.linear_flops + f.causal_flops;
}

/// The bytes one device sends per pipeline transfer: its activation (or gradient) shard.
constexpr double xdc_p2p_bytes(const xdc_facts& f) noexcept {
  return pipeline_transfer_bytes({.micro_batch_size = static_cast<double>(f.micro_batch_size),
                                  .seq = f.seq,
                                  .hidden = f.hidden,
                                  .tp = f.tp,
                                  .sequence_parallel = f.sequence_parallel,
                                  .bytes_per_value = f.bytes_per_value});
}

/// How much slower than its port a device crosses between data centres: a transfer between two
/// stages moves a pipeline rank's shards at once (its tp x dp x cp devices), and those share
/// their site's ports converged `convergence` to 1 onto the links between the sites, so each
/// gets convergence x sites / pp less than its port — never more than the port itself (the
/// note's 128 becomes 32 at 8 ranks over 2 sites). The one rule for the scenario and for a
/// planned job (plan/estimate.hpp).
constexpr double crossing_slowdown(double convergence, int sites, int pp) noexcept {
  const double r = convergence * sites / static_cast<double>(pp);
  return r > 1 ? r : 1;
}

/// The link between the sites as one device sees it (`crossing_slowdown`); latency 5 ms per
/// 1000 km on top of the inter-node link's (link_model::cross_dc).
constexpr link_model xdc_link(const xdc_facts& f) noexcept {
  return link_model::cross_dc(f.km, crossing_slowdown(f.ratio, f.sites, f.pp), f.inter);
}

/// The published contention facts (`contention_facts::published()`) with the sites' uplink as a
/// resource of its own: its sites' ports converged `ratio` to 1, in a pipeline rank's ports
/// (1 / `crossing_slowdown`) — 1/32 for the note's run. A
/// transfer alone between the sites gets what `xdc_link` gives it; two at once in one
/// direction share it.
constexpr contention_facts xdc_contention(const xdc_facts& f) noexcept {
  contention_facts c = contention_facts::published();
  c.uplink_ports = 1 / crossing_slowdown(f.ratio, f.sites, f.pp);
  return c;
}

/// One layer's tensor-parallel communication in a forward: with sequence parallelism an
/// all-gather before attention and before the MLP and a reduce-scatter after each (without it,
/// two all-reduces), inside a machine; Megatron does not hide them.
constexpr seconds xdc_tp_comm(const xdc_facts& f) noexcept {
  const double full = f.seq * f.micro_batch_size * f.hidden * f.bytes_per_value;
  return 2.0 * collective::tensor_parallel_block(f.intra, f.tp, full, f.sequence_parallel);
}

/// The cost table of one chunk (its layers as one block): a layer's forward from its FLOPs at
/// the device's sustained rate plus its TP communication, its backward twice the compute plus
/// the mirrored communication (no recompute: the activations of the deepest warm-up fit in
/// 64 GB, docs/cross-dc.md). Split (NanoPipe), the dW half is the linears' weight gradients
/// alone — their inputs gathered again on a stream of their own, hidden behind the GEMMs
/// (MindSpeed's WeightGradStore.pop) — and dX the rest with all the communication; transfers inside
/// a site on the inter-node link, between sites on `xdc_link`; the loss all-reduce over dp ranks
/// between the sites. Under `contention` with an uplink resource, a transfer between the sites
/// moves at its port's speed over that resource instead, which slows it as `xdc_link` does when it
/// crosses alone.
constexpr cost_model xdc_cost_model(const xdc_facts& f,
                                    const contention_facts& contention = {}) noexcept {
  const seconds compute(xdc_layer_flops(f) / f.device.sustained_flops());
  const seconds weights(xdc_linear_flops(f) / f.device.sustained_flops());
  const double n = f.layers_per_chunk();
  cost_model c;
  c.set(kind::block, phase::F, n * (compute + xdc_tp_comm(f)))
      .set(kind::block, phase::B, n * (2.0 * compute + xdc_tp_comm(f)))
      .set(kind::block, phase::dX, n * (2.0 * compute - weights + xdc_tp_comm(f)))
      .set(kind::block, phase::dW, n * weights);
  for (phase ph : {phase::F, phase::B, phase::dX})
    c.tp_comm[static_cast<int>(kind::block)][static_cast<int>(ph)] = n * xdc_tp_comm(f);
  const seconds near = collective::p2p(f.inter, xdc_p2p_bytes(f));
  for (kind k : {kind::send, kind::recv}) c.set(k, phase::F, near).set(k, phase::B, near);
  c.site_ranks = f.pp / f.sites;
  const bool uplink = contention.shared_links && contention.uplink_ports > 0;
  c.far_p2p = collective::p2p(uplink ? link_model::cross_dc(f.km, 1, f.inter) : xdc_link(f),
                              xdc_p2p_bytes(f));
  c.p2p_latency = f.inter.alpha;
  c.far_p2p_latency = xdc_link(f).alpha;
  c.set(kind::all_reduce, phase::F, collective::ring_all_reduce(xdc_link(f), f.dp, 4));
  c.contention = contention;
  return c;
}

/// The model FLOPs of one step on one device (forward and backward, 3 x the forward).
constexpr double xdc_step_flops(const xdc_facts& f) noexcept {
  return 3.0 * xdc_layer_flops(f) * f.layers_per_chunk() * f.chunks * f.micro;
}

/// One step of the scenario with MindSpeed's switches. Without them, Megatron: its interleaved
/// schedule with `overlap_p2p_comm` at VP > 1; at VP 1 its 1F1B, where it turns that overlap off
/// (blocking transfers). With `overlap_p2p`, MindSpeed's schedule: Megatron's interleaved code
/// at any VP (MindSpeed lets VP 1 through). With NanoPipe, MindSpeed's interleaved code at any VP
/// too: NanoPipe asks for a virtual pipeline stage size (`--num-layers-per-virtual-pipeline-
/// stage`), which at VP 1 gives Megatron a virtual pipeline of one chunk, so its interleaved
/// schedule with `overlap_p2p_comm` on.
constexpr schedule xdc_schedule(const xdc_facts& f, p2p_options switches) {
  switches.megatron = true;
  if (f.chunks == 1 && !switches.overlap_p2p && !f.nanopipe) {
    switches.blocking = true;
    return one_f_one_b({.ranks = f.pp, .micro = f.micro, .p2p = switches});
  }
  return interleaved({.ranks = f.pp,
                      .micro = f.micro,
                      .chunks = f.chunks,
                      .p2p = switches,
                      .nanopipe = f.nanopipe});
}

}  // namespace weft
