// What ops cost in simulated time: a table per (kind, phase), filled by hand, from FLOPs and a
// device's throughput, or from measured kernel times; communication from the alpha-beta model
// of links and collectives (core/link.hpp).
#pragma once

#include <cstddef>

#include <weft/core/kinds.hpp>
#include <weft/core/link.hpp>
#include <weft/schedule/model.hpp>

namespace weft {

/// Time of every (kind, phase), in any unit (the simulator reports in the same unit).
struct cost_model {
  double time[kind_count][phase_count] = {};
  /// An overlapped whole-block forward/backward pair (DualPipe's F&B); < 0: F + B.
  double fb_pair = -1;

  constexpr double of(kind k, phase ph) const noexcept {
    return time[static_cast<int>(k)][static_cast<int>(ph)];
  }
  constexpr cost_model& set(kind k, phase ph, double t) noexcept {
    time[static_cast<int>(k)][static_cast<int>(ph)] = t;
    return *this;
  }
  /// A compute op from its FLOPs and the device's sustained FLOP/s.
  constexpr cost_model& set_flops(kind k, phase ph, double flops, double flops_per_s) noexcept {
    return set(k, ph, flops / flops_per_s);
  }
  /// MoE all-to-alls (dispatch, combine) over an expert-parallel group of `ep` ranks moving
  /// `a2a_bytes` per rank, and pipeline transfers of `p2p_bytes`, on `l`.
  constexpr cost_model& set_comm(link_model l, int ep, double a2a_bytes,
                                 double p2p_bytes) noexcept {
    const double a2a = collective::pairwise_all_to_all(l, ep, a2a_bytes);
    for (kind k : {kind::dispatch, kind::combine}) set(k, phase::F, a2a).set(k, phase::B, a2a);
    const double p2p = collective::p2p(l, p2p_bytes);
    for (kind k : {kind::send, kind::recv}) set(k, phase::F, p2p).set(k, phase::B, p2p);
    return *this;
  }
  /// The same with every compute time (and the pair's) multiplied by `f`: the cost of a chunk
  /// that holds `f` of what the table was written for.
  constexpr cost_model scaled_compute(double f) const noexcept {
    cost_model c = *this;
    for (int k = 0; k < kind_count; ++k)
      if (stream_of(static_cast<kind>(k)) == stream_class::compute)
        for (int ph = 0; ph < phase_count; ++ph) c.time[k][ph] *= f;
    if (c.fb_pair >= 0) c.fb_pair *= f;
    return c;
  }
  constexpr double pair() const noexcept {
    return fb_pair >= 0 ? fb_pair : of(kind::block, phase::F) + of(kind::block, phase::B);
  }

  /// Whole-chunk costs in the DualPipe paper's terms: F forward, B full backward (dX + dW), W its
  /// dW part, FB an overlapped forward and backward (< 0: F + B), P2P one pipeline transfer,
  /// A2A one all-to-all (dispatch or combine, either direction). A chunk of MoE sub-stages splits
  /// F, B and W over its layers, and each layer's share between attention and the routed experts
  /// (half each), the shared expert costing an eighth of the layer on top.
  static constexpr cost_model pipeline(double F, double B, double W, double FB = -1, double P2P = 0,
                                       double A2A = 0, int layers = 1) noexcept {
    cost_model c;
    c.fb_pair = FB;
    c.set(kind::block, phase::F, F / layers)
        .set(kind::block, phase::B, B / layers)
        .set(kind::block, phase::dX, (B - W) / layers)
        .set(kind::block, phase::dW, W / layers);
    for (kind k : {kind::attn, kind::mlp})
      c.set(k, phase::F, F / layers / 2)
          .set(k, phase::B, B / layers / 2)
          .set(k, phase::dX, (B - W) / layers / 2)
          .set(k, phase::dW, W / layers / 2);
    c.set(kind::shared, phase::F, F / layers / 8)
        .set(kind::shared, phase::B, B / layers / 8)
        .set(kind::shared, phase::dX, (B - W) / layers / 8)
        .set(kind::shared, phase::dW, W / layers / 8);
    for (kind k : {kind::dispatch, kind::combine}) c.set(k, phase::F, A2A).set(k, phase::B, A2A);
    for (kind k : {kind::send, kind::recv}) c.set(k, phase::F, P2P).set(k, phase::B, P2P);
    return c;
  }

  /// A DeepSeek-V3-like MoE layer, in units of one attention forward: attention and routed
  /// experts 1 forward, 2 backward (dX 1, dW 1); the shared expert half of that; each
  /// all-to-all 0.5, no longer than the compute it is paired with; a pipeline transfer 0.2.
  static constexpr cost_model deepseek_v3_like() noexcept {
    cost_model c = pipeline(2, 4, 2, -1, 0.2, 0.5);
    c.set(kind::shared, phase::F, 0.5)
        .set(kind::shared, phase::B, 1)
        .set(kind::shared, phase::dX, 0.5)
        .set(kind::shared, phase::dW, 0.5);
    return c;
  }
};

}  // namespace weft
