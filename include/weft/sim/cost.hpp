// What ops cost in simulated time: a table per (kind, phase), filled by hand, from FLOPs and a
// device's throughput, or from measured kernel times; communication from the alpha-beta model
// of links and collectives (core/link.hpp).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/core/kinds.hpp>
#include <weft/core/link.hpp>
#include <weft/core/op.hpp>
#include <weft/core/time.hpp>
#include <weft/schedule/model.hpp>

namespace weft {

/// Whole-chunk costs in the DualPipe paper's terms, named: `{.F = 1, .B = 2, .W = 1}`.
template <time_type T>
struct pipeline_costs {
  T F{0};          ///< forward
  T B{0};          ///< full backward (dX + dW)
  T W{0};          ///< B's dW part
  T FB{-1};        ///< an overlapped forward and backward; < 0: F + B
  T P2P{0};        ///< one pipeline transfer
  T A2A{0};        ///< one all-to-all (dispatch or combine, either direction)
  int layers = 1;  ///< MoE layers a chunk holds (sub-stage costs are per layer)
};

/// The class of link a communication uses: ports of one class on a device are shared by the
/// transfers that use them; ports of two classes are not.
enum class link_class : std::uint8_t { intra_node, inter_node };

/// What concurrent ops take from each other (docs/metrics.md, "Overlap has a price"). By
/// default nothing: every op takes its own cost whatever runs beside it, and the simulator is
/// the plain one.
struct contention_facts {
  /// Communication moves its volume over the resources on its path — the device's egress and
  /// ingress port of its link class, and between data centres the sites' uplink — which
  /// concurrent transfers share max-min fairly (recomputed whenever a flow starts or ends). Its
  /// fixed part (latency, launch: `basic_cost_model::parts_of(...).fixed`) is not shared.
  bool shared_links = false;
  /// Interference: while a device has communication in flight, its compute runs this much
  /// slower (takes 1 + x as long). Published: compute overlapped with communication runs 18.9 %
  /// slower on average, up to 40 %, on A100/H100/MI250 (arXiv 2507.03114).
  double compute_slowdown = 0;
  /// And its communication while it computes (the reverse; 0 unless a source says otherwise).
  double comm_slowdown = 0;
  /// The capacity of the uplink from one site to another, in device ports' worth: how many
  /// transfers at full rate cross at once (a site's ports divided by the interconnect's
  /// convergence ratio). 0: no uplink resource (the port is the narrowest part).
  double uplink_ports = 0;
  /// The link class of all-to-alls, of pipeline transfers and of tensor-parallel collectives:
  /// `collectives` for a linear's gather group (the forward's all-gathers, the backward's
  /// reduce-scatters, all-reduces and the communication inside ops), `reduce_scatters` for its
  /// scatter group (the forward's reduce-scatters, the backward's all-gathers), which a 2D grid
  /// puts on other links than its gather group (docs/tp-2d.md).
  link_class a2a = link_class::inter_node, p2p = link_class::inter_node,
             collectives = link_class::intra_node, reduce_scatters = link_class::intra_node;

  /// The link class a communication op of kind `k` in phase `ph` uses.
  constexpr link_class class_of(kind k, phase ph) const noexcept {
    const bool forward = ph == phase::F;
    if (k == kind::reduce_scatter) return forward ? reduce_scatters : collectives;
    if (k == kind::all_gather) return forward ? collectives : reduce_scatters;
    if (is_collective(k)) return collectives;
    return is_p2p(k) ? p2p : a2a;
  }

  constexpr bool active() const noexcept {
    return shared_links || compute_slowdown > 0 || comm_slowdown > 0;
  }

  /// The published facts, one set for every device and scenario (`--contention on`): links
  /// shared; compute 18.9 % slower while its device communicates, the average that arXiv
  /// 2507.03114 measured over A100, H100, MI250 and MI210 (no public figure exists for Ascend's
  /// HCCL beside its matmuls: its communication runs on engines of its own but shares HBM, so
  /// we take the cross-vendor average there too); communication not slowed by compute, for
  /// which no source gives a number. Scenarios add their own resources (a site's uplink).
  static constexpr contention_facts published() noexcept {
    return {.shared_links = true, .compute_slowdown = 0.189};
  }
};

/// One chunk's whole-block costs when chunks differ (`basic_cost_model::chunks`): a planned job's
/// first stage with the embedding, its last with the LM head and the loss, uneven layers.
template <time_type T>
struct chunk_cost {
  T F{0}, B{0}, W{0};  ///< forward, full backward, the backward's dW part
  /// Of F and of B, the communication inside (all-to-alls, tensor-parallel collectives) that
  /// the other half of an overlapped forward/backward pair hides behind its compute.
  T comm_F{0}, comm_B{0};
  constexpr T of(phase ph) const noexcept {
    switch (ph) {
      case phase::F:
        return F;
      case phase::B:
        return B;
      case phase::dX:
        return B - W;
      case phase::dW:
        return W;
    }
    return T{0};
  }
};

/// Time of every (kind, phase), in seconds (`cost_model`) or unit-free (`unit_cost_model`);
/// the simulator reports in the same type.
template <time_type T>
struct basic_cost_model {
  using duration = T;

  /// Per (kind, phase): the time of a layer's whole sub-stage for one micro-batch.
  T time[kind_count][phase_count] = {};
  /// The part of `time` that does not shrink when an op does a share of its layer's work
  /// (AMPipe splits, pipe-experts pieces): a link's latency, kernel launches, the casts and adds
  /// a split brings. 0: every share costs its fraction.
  T fixed[kind_count][phase_count] = {};
  /// The part of `time` that is tensor-parallel communication inside the op (sequence
  /// parallelism's all-gathers and reduce-scatters around attention and the experts), a volume
  /// on the `collectives` link class. Only contention sees it: there an op moves `tp_first` of
  /// it, computes (or moves its own volume), then moves the rest. 0: none.
  T tp_comm[kind_count][phase_count] = {};
  /// Of `tp_comm`, the part that runs before the op's own work (an all-gather before
  /// attention; the reduce-scatter before the combine's all-to-all); the rest runs after it.
  T tp_first[kind_count][phase_count] = {};
  /// The share of attention's time spent on causal scores: split s of D pays its fraction of it
  /// in proportion (2s + 1) / D, since its queries see s + 1/2 chunks of keys on average.
  double causal_share = 0;
  /// An overlapped whole-block forward/backward pair (DualPipe's F&B); < 0: F + B.
  T fb_pair{-1};
  /// Sites (data centres): pipeline ranks [0, site_ranks) are the first, the next site_ranks
  /// the second, and so on; 0: one site. A transfer between two sites costs `far_p2p` (both
  /// phases) instead of the send/recv time.
  int site_ranks = 0;
  T far_p2p{0};
  /// A transfer's rendezvous: a receive posted after its send reaches the sender this much
  /// later (its clear-to-send crosses the link), inside a site and between sites. 0: at once.
  T p2p_latency{0}, far_p2p_latency{0};
  /// What concurrent ops take from each other; inactive by default.
  contention_facts contention{};
  /// Per chunk (model order), when chunks differ: a whole-block op of chunk c costs
  /// `chunks[c]` instead of the table's block time, and an overlapped pair of a forward and a
  /// backward its halves' compute plus the communication neither hides (`pair_of`). Empty:
  /// every chunk costs the table's. Its size must be the model's chunk count (`check_chunks`).
  buffer<chunk_cost<T>> chunks;

  /// When a transfer can start, given when its send and its receive (`recv`) arrived.
  constexpr T transfer_start(const op& recv, const model_desc& m, T send_at,
                             T recv_at) const noexcept {
    const T at = recv_at + (crosses_sites(recv, m) ? far_p2p_latency : p2p_latency);
    return send_at > at ? send_at : at;
  }

  constexpr bool crosses_sites(int rank_a, int rank_b) const noexcept {
    return site_ranks > 0 && rank_a / site_ranks != rank_b / site_ranks;
  }
  /// Does transfer `t` of model `m` go between two sites?
  constexpr bool crosses_sites(const op& t, const model_desc& m) const noexcept {
    const int peer = m.transfer_peer_chunk(t.k, t.ph, t.mb, t.chunk);
    return peer >= 0 && crosses_sites(m.rank_of(t.chunk), m.rank_of(peer));
  }

  constexpr T of(kind k, phase ph) const noexcept {
    return time[static_cast<int>(k)][static_cast<int>(ph)];
  }
  /// What op `o` of model `m` costs: `of(kind, phase)` when it is its layer's whole sub-stage;
  /// for one of n splits (or pieces, or a tensor-parallel linear's collectives: a ring step, a
  /// piece's reduce-scatter) its share of the part that shrinks plus the fixed part.
  /// Transfers carry whole chunks and cost the same at any split; between sites `far_p2p`.
  constexpr T of(const op& o, const model_desc& m) const noexcept {
    if (o.k == kind::block && o.chunk < chunks.size()) return chunks[o.chunk].of(o.ph);
    const T t = of(o.k, o.ph);
    if (is_p2p(o.k)) return crosses_sites(o, m) ? far_p2p : t;
    const int n = m.shares_of(o.k, o.ph);
    if (n <= 1) return t;
    const T f = fixed[static_cast<int>(o.k)][static_cast<int>(o.ph)];
    double share = 1.0 / n;
    if (o.k == kind::attn)
      share *= (1 - causal_share) + causal_share * (2.0 * o.split + 1) / m.splits;
    return (t - f) * share + f;
  }
  /// Op `o`'s cost in the parts the contended simulator drains separately.
  struct parts {
    T whole;     ///< `of(o, m)`
    T fixed;     ///< not a volume moving over a link (latency, launch); at most `whole`
    T tp_comm;   ///< tensor-parallel communication inside the op
    T tp_first;  ///< of `tp_comm`, the part that runs before the op's own work
  };
  /// `fixed`: a transfer's link latency, else the (kind, phase)'s `fixed`. `tp_comm`: the
  /// (kind, phase)'s, shared evenly by the op's splits and pieces (a gather's volume follows the
  /// tokens, not the causal keys), never more than the op's varying part.
  constexpr parts parts_of(const op& o, const model_desc& m) const noexcept {
    const int k = static_cast<int>(o.k), ph = static_cast<int>(o.ph);
    parts r{of(o, m), T{0}, T{0}, T{0}};
    T f = is_p2p(o.k) ? (crosses_sites(o, m) ? far_p2p_latency : p2p_latency) : fixed[k][ph];
    if (f > r.whole) f = r.whole;
    r.fixed = f < T{0} ? T{0} : f;
    if (is_p2p(o.k) || (o.k == kind::block && o.chunk < chunks.size())) return r;
    if (!(tp_comm[k][ph] > T{0})) return r;
    const int n = m.shares_of(o.k, o.ph);
    const T part = n > 1 ? tp_comm[k][ph] / n : tp_comm[k][ph];
    const T most = r.whole - fixed[k][ph];
    r.tp_comm = part < most ? part : (most > T{0} ? most : T{0});
    if (!(r.tp_comm > T{0}) || !(tp_first[k][ph] > T{0})) return r;
    r.tp_first = tp_first[k][ph] < tp_comm[k][ph] ? r.tp_comm * (tp_first[k][ph] / tp_comm[k][ph])
                                                  : r.tp_comm;
    return r;
  }
  constexpr basic_cost_model& set(kind k, phase ph, T t) noexcept {
    time[static_cast<int>(k)][static_cast<int>(ph)] = t;
    return *this;
  }
  /// A compute op from its FLOPs and the device's sustained FLOP/s.
  constexpr basic_cost_model& set_flops(kind k, phase ph, double flops, double flops_per_s) noexcept
      requires std::same_as<T, seconds> {
    return set(k, ph, seconds(flops / flops_per_s));
  }
  /// MoE all-to-alls (dispatch, combine) over an expert-parallel group of `ep` ranks moving
  /// `a2a_bytes` per rank, and pipeline transfers of `p2p_bytes`, on `l`.
  constexpr basic_cost_model& set_comm(
      link_model l, int ep, double a2a_bytes,
      double p2p_bytes) noexcept requires std::same_as<T, seconds> {
    const seconds a2a = collective::pairwise_all_to_all(l, ep, a2a_bytes);
    for (kind k : {kind::dispatch, kind::combine}) set(k, phase::F, a2a).set(k, phase::B, a2a);
    const seconds p2p = collective::p2p(l, p2p_bytes);
    for (kind k : {kind::send, kind::recv}) set(k, phase::F, p2p).set(k, phase::B, p2p);
    return *this;
  }
  /// The same with every compute time (and the pair's) multiplied by `f`: the cost of a chunk
  /// that holds `f` of what the table was written for.
  constexpr basic_cost_model scaled_compute(double f) const {
    basic_cost_model c = *this;
    for (int k = 0; k < kind_count; ++k)
      if (stream_of(static_cast<kind>(k)) == stream_class::compute)
        for (int ph = 0; ph < phase_count; ++ph) {
          c.time[k][ph] *= f;
          c.fixed[k][ph] *= f;
          c.tp_comm[k][ph] *= f;
          c.tp_first[k][ph] *= f;
        }
    if (c.fb_pair >= T{0}) c.fb_pair *= f;
    for (chunk_cost<T>& x : c.chunks) {  // their communication scales with the layers too
      x.F *= f;
      x.B *= f;
      x.W *= f;
      x.comm_F *= f;
      x.comm_B *= f;
    }
    return c;
  }
  /// Costs stated for a rank's share of the model (the tool's `--cost`, the Python module's
  /// `simulate`), per chunk of `m`: a rank with V chunks holds V of them; DualPipe's chunks are
  /// whole stages (it holds the model twice).
  constexpr basic_cost_model per_chunk_of(const model_desc& m) const {
    return scaled_compute(m.bidirectional ? 1.0 : 1.0 / m.chunks_per_rank);
  }
  constexpr T pair() const noexcept {
    return fb_pair >= T{0} ? fb_pair : of(kind::block, phase::F) + of(kind::block, phase::B);
  }
  /// An overlapped pair of forward `f` and backward `b`: `pair()`, or with costs per chunk each
  /// half's compute, plus whatever of each half's communication the other's compute cannot hide
  /// (never shorter than either half alone), with the interference of what it hides: compute
  /// runs 1 + `contention.compute_slowdown` times as long while communication is in flight
  /// beside it, as the rate simulator runs it (sim/contended.hpp) — so a pair is never longer
  /// than its halves run one after the other. (DeepSeek gives DualPipe's communication 20 of an
  /// H800's 132 SMs, its report §3.2.2.)
  constexpr T pair_of(const op& f, const op& b) const noexcept {
    if (chunks.empty()) return pair();
    const chunk_cost<T> x = f.chunk < chunks.size() ? chunks[f.chunk] : chunk_cost<T>{};
    const chunk_cost<T> y = b.chunk < chunks.size() ? chunks[b.chunk] : chunk_cost<T>{};
    const T compute_f = x.F - x.comm_F, compute_b = y.B - y.comm_B;
    // Communication `m` beside compute `c` slowed s-fold while it runs: the compute does
    // m / (1 + s) of its work meanwhile and the rest at full rate, unless the communication
    // outlasts it.
    const double s = contention.compute_slowdown;
    const auto side = [s](T m, T c) { return m >= c * (1 + s) ? m : c + m * (s / (1 + s)); };
    return side(x.comm_F, compute_b) + side(y.comm_B, compute_f);
  }
  /// Throws `config_error` unless the costs per chunk (if any) match `m`'s chunks and each is
  /// whole: no part negative, dW within the backward, communication within its half.
  constexpr void check_chunks(const model_desc& m) const {
    if (chunks.empty()) return;
    if (chunks.size() != static_cast<std::size_t>(m.chunks()))
      throw config_error("cost model: costs for " + std::to_string(chunks.size()) +
                         " chunks, the model has " + std::to_string(m.chunks()));
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const chunk_cost<T>& x = chunks[c];
      const bool whole = x.F >= T{0} && x.B >= T{0} && x.W >= T{0} && x.comm_F >= T{0} &&
                         x.comm_B >= T{0} && !(x.W > x.B) && !(x.comm_F > x.F) && !(x.comm_B > x.B);
      if (!whole)
        throw config_error("cost model: chunk " + std::to_string(c) +
                           "'s costs need 0 <= W <= B, 0 <= comm_F <= F and 0 <= comm_B <= B");
    }
  }
  /// A uniform table no dearer than any chunk: per phase (and for the pair) the cheapest
  /// chunk's cost. What bounds and estimates that assume equal chunks may use: a run under it
  /// is never longer.
  constexpr basic_cost_model floor() const {
    basic_cost_model c = *this;
    if (chunks.empty()) return c;
    c.chunks = {};
    for (phase ph : {phase::F, phase::B, phase::dX, phase::dW}) {
      T least = chunks[0].of(ph);
      for (const chunk_cost<T>& x : chunks) least = x.of(ph) < least ? x.of(ph) : least;
      c.set(kind::block, ph, least);
    }
    // Every pair is at least either half alone and at least its two halves' compute.
    T compute_f = chunks[0].F - chunks[0].comm_F, compute_b = chunks[0].B - chunks[0].comm_B;
    for (const chunk_cost<T>& x : chunks) {
      compute_f = x.F - x.comm_F < compute_f ? x.F - x.comm_F : compute_f;
      compute_b = x.B - x.comm_B < compute_b ? x.B - x.comm_B : compute_b;
    }
    T least = compute_f + compute_b;
    for (const phase ph : {phase::F, phase::B})
      least = c.of(kind::block, ph) > least ? c.of(kind::block, ph) : least;
    c.fb_pair = least;
    return c;
  }

  /// A table from whole-chunk costs. A chunk of MoE sub-stages splits F, B and W over its
  /// layers, and each layer's share between attention and the routed experts (half each), the
  /// shared expert costing an eighth of the layer on top.
  static constexpr basic_cost_model pipeline(const pipeline_costs<T>& p) noexcept {
    basic_cost_model c;
    c.fb_pair = p.FB;
    const double n = p.layers;
    const auto per_layer = [&](kind k, double share) {
      c.set(k, phase::F, p.F / n * share)
          .set(k, phase::B, p.B / n * share)
          .set(k, phase::dX, (p.B - p.W) / n * share)
          .set(k, phase::dW, p.W / n * share);
    };
    per_layer(kind::block, 1);
    per_layer(kind::attn, 0.5);
    per_layer(kind::mlp, 0.5);
    per_layer(kind::shared, 0.125);
    for (kind k : {kind::dispatch, kind::combine})
      c.set(k, phase::F, p.A2A).set(k, phase::B, p.A2A);
    for (kind k : {kind::send, kind::recv}) c.set(k, phase::F, p.P2P).set(k, phase::B, p.P2P);
    return c;
  }

  /// The same table in seconds, each unit standing for `per_unit`: the one way from formula
  /// work to real time.
  constexpr basic_cost_model<seconds> at(seconds per_unit) const requires std::same_as<T, units> {
    basic_cost_model<seconds> c;
    for (int k = 0; k < kind_count; ++k)
      for (int ph = 0; ph < phase_count; ++ph) {
        c.time[k][ph] = time[k][ph].at(per_unit);
        c.fixed[k][ph] = fixed[k][ph].at(per_unit);
        c.tp_comm[k][ph] = tp_comm[k][ph].at(per_unit);
        c.tp_first[k][ph] = tp_first[k][ph].at(per_unit);
      }
    c.causal_share = causal_share;
    c.fb_pair = fb_pair >= T{0} ? fb_pair.at(per_unit) : seconds(-1);
    c.site_ranks = site_ranks;
    c.far_p2p = far_p2p.at(per_unit);
    c.p2p_latency = p2p_latency.at(per_unit);
    c.far_p2p_latency = far_p2p_latency.at(per_unit);
    c.contention = contention;
    for (const chunk_cost<units>& x : chunks)
      c.chunks.push_back({x.F.at(per_unit), x.B.at(per_unit), x.W.at(per_unit),
                          x.comm_F.at(per_unit), x.comm_B.at(per_unit)});
    return c;
  }

  /// A DeepSeek-V3-like MoE layer, in units of one attention forward: attention and routed
  /// experts 1 forward, 2 backward (dX 1, dW 1); the shared expert half of that; each
  /// all-to-all 0.5, no longer than the compute it is paired with; a pipeline transfer 0.2.
  static constexpr basic_cost_model deepseek_v3_like() noexcept requires std::same_as<T, units> {
    basic_cost_model c = pipeline({.F = 2, .B = 4, .W = 2, .P2P = 0.2, .A2A = 0.5});
    c.set(kind::shared, phase::F, 0.5)
        .set(kind::shared, phase::B, 1)
        .set(kind::shared, phase::dX, 0.5)
        .set(kind::shared, phase::dW, 0.5);
    return c;
  }
};

/// Costs in seconds: what a device or a calibrated run gives.
using cost_model = basic_cost_model<seconds>;
/// Unit-free costs, for formula work (the DualPipe paper's F = 1, B = 2, W = 1).
using unit_cost_model = basic_cost_model<units>;

}  // namespace weft
