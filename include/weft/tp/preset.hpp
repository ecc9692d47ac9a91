// The 2D tensor-parallel scenario of MindSpeed's tp-2d note: a llama3-405B layer at tp 16,
// Megatron's 1D tensor parallelism (16 x 1) against the grid 8 x 2, each linear's schedule
// simulated with costs from public facts — the layer's shapes and FLOPs, a device's throughput,
// link latencies and bandwidths, and how a collective library carries out a collective over a group
// that spans machines. One parameter set for every configuration; nothing is fitted to the note's
// figures (docs/tp-2d.md compares).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <weft/core/link.hpp>
#include <weft/perf/flops.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/device.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/sim/tp2d_facts.hpp>
#include <weft/tp/grid.hpp>
#include <weft/tp/schedule.hpp>

namespace weft {

/// A group of `count` ranks `stride` apart from rank `first`, as a mesh sees it: how many
/// machines it spans and how many members each holds (the groups here spread evenly).
struct group_span {
  int members = 1, nodes = 1, per_node = 1;
};
constexpr group_span span_of_group(const node_mesh& mesh, int first, int count, int stride) {
  int nodes = 0, last = -1;
  for (int i = 0; i < count; ++i) {
    const int node = (first + i * stride) / mesh.per_node;
    if (node != last) ++nodes;
    last = node;
  }
  return {count, nodes, count / std::max(nodes, 1)};
}

/// An all-gather (or a reduce-scatter, the same traffic reversed) of `total` bytes per rank over
/// a group, as a collective library runs it: a ring inside one machine; across machines with one
/// member each a ring on the slower link; across machines with several members each the two
/// levels — a ring among the members that share a place in their machines over the slow link,
/// then a ring inside each machine over the fast one, every member now holding its machines'
/// share. `ring_only`: a flat ring over all members, each step as slow as the slowest link it
/// crosses (what a ring of point-to-point steps, tp_overlap::ag_matmul, is).
constexpr seconds gather_time(const node_mesh& mesh, const group_span& g, double total,
                              bool ring_only = false) {
  if (g.members <= 1) return seconds(0);
  if (g.nodes <= 1) return collective::ring_all_gather(mesh.intra, g.members, total);
  if (g.per_node <= 1 || ring_only || !mesh.hierarchical)
    return collective::ring_all_gather(mesh.inter, g.members, total);
  const double block = total / g.members;
  return collective::ring_all_gather(mesh.inter, g.nodes, block * g.nodes) +
         collective::ring_all_gather(mesh.intra, g.per_node, total);
}

/// One tensor-parallel linear of a layer: [rows, in] x [in, out], its input rows all-gathered
/// over `gather` and its output rows reduce-scattered over `scatter` (tp/layers.hpp's layouts).
struct tp_linear_facts {
  std::string name;
  double in = 0, out = 0;
  group_span gather, scatter;
};

/// The cost table of one linear for `rows` tokens: the matmul from its FLOPs (forward
/// 2 rows in out / n, backward twice that, dX and dW half each); the forward all-gather of
/// [rows / |gather|, in / |scatter|] per member, the reduce-scatter of [rows, out / |gather|]
/// (its latency is what every piece pays again); backward, the output gradient gathered over
/// `scatter`, the input gradient scattered over `gather`. With a ring (ag_matmul, fused) the
/// gather is a flat ring of point-to-point steps.
constexpr cost_model tp_linear_costs(const tp_linear_facts& l, double rows, const node_mesh& mesh,
                                     const device_facts& device, double value_bytes, tp_overlap o) {
  const double G = l.gather.members, S = l.scatter.members;
  const double flops = perf::matmul_flops(rows, l.in / S, l.out / G);  // perf/flops.hpp
  const double rate = device.sustained_flops();
  cost_model c;
  c.set(kind::block, phase::F, seconds(flops / rate))
      .set(kind::block, phase::B, seconds(2 * flops / rate))
      .set(kind::block, phase::dX, seconds(flops / rate))
      .set(kind::block, phase::dW, seconds(flops / rate));
  const bool ring = o == tp_overlap::ag_matmul || o == tp_overlap::fused;
  const double x_bytes = rows * (l.in / S) * value_bytes;   // the gathered input, per rank
  const double y_bytes = rows * (l.out / G) * value_bytes;  // the partial output, per rank
  c.set(kind::all_gather, phase::F, gather_time(mesh, l.gather, x_bytes, ring));
  c.set(kind::reduce_scatter, phase::F, gather_time(mesh, l.scatter, y_bytes));
  const link_model& slow = l.scatter.nodes > 1 ? mesh.inter : mesh.intra;
  c.fixed[static_cast<int>(kind::reduce_scatter)][static_cast<int>(phase::F)] =
      (S - 1) * slow.alpha;
  c.set(kind::all_gather, phase::B, gather_time(mesh, l.scatter, y_bytes));
  c.set(kind::reduce_scatter, phase::B, gather_time(mesh, l.gather, x_bytes));
  return c;
}

/// A layer's four linears on the grid (rank 0's groups: TP-X contiguous, TP-Y strided), in the
/// order they run: QKV and fc1 gather over X and scatter over Y, the projection and fc2 the
/// reverse, so the layer gives back its input's layout. fc1 holds SwiGLU's gate and up (2 F).
inline std::vector<tp_linear_facts> tp_layer_linears(const tp_layer_facts& f, const tp::grid& g) {
  const group_span x = span_of_group(f.mesh, g.base, g.tp_x, 1);
  const group_span y = span_of_group(f.mesh, g.base, g.tp_y, g.tp_x);
  const double h = f.hidden;
  return {{"qkv", h, h + 2 * f.kv_width(), x, y},
          {"proj", h, h, y, x},
          {"fc1", h, 2 * f.ffn, x, y},
          {"fc2", f.ffn, h, y, x}};
}

/// What a layer's forward and backward cost beside its linears, per rank: causal flash attention
/// over the rank's heads / tp_x and query rows / tp_y (scores and weighted sum, the causal
/// half: 2 s^2 h / n forward, twice that backward), and the keys and values all-gathered over
/// TP-Y before it (their gradients reduce-scattered after it). Norms and SwiGLU's product are
/// elementwise and the same for every grid; left out.
struct tp_glue {
  seconds attention{0}, kv_gather{0};
  constexpr seconds total() const noexcept { return 3.0 * attention + 2.0 * kv_gather; }
};
inline tp_glue tp_layer_glue(const tp_layer_facts& f, const tp::grid& g) {
  const double n = g.size(), s = f.tokens();
  tp_glue out;
  // The causal half of the scores (perf/flops.hpp; heads x head dim = hidden).
  out.attention = seconds(perf::causal_score_flops(s, f.seq, 1, f.hidden, f.hidden) / n /
                          f.device.sustained_flops());
  const group_span y = span_of_group(f.mesh, g.base, g.tp_y, g.tp_x);
  out.kv_gather = gather_time(f.mesh, y, s * 2 * f.kv_width() / g.tp_x * f.bytes_per_value);
  return out;
}

/// One linear's simulated forward and backward under overlap `o`.
struct tp_linear_time {
  std::string name;
  seconds time{0};
  seconds compute{0};  ///< its matmuls alone
};
struct tp_layer_time {
  std::vector<tp_linear_time> linears;
  tp_glue glue;
  seconds total{0};
};

inline tp_layer_time simulate_tp_layer(const tp_layer_facts& f, const tp::grid& g, tp_overlap o) {
  tp_layer_time out;
  out.glue = tp_layer_glue(f, g);
  out.total = out.glue.total();
  for (const tp_linear_facts& l : tp_layer_linears(f, g)) {
    const schedule s =
        tp::linear_schedule(o, tp::linear_groups{l.gather.members, l.scatter.members});
    cost_model c = tp_linear_costs(l, f.tokens(), f.mesh, f.device, f.bytes_per_value, o);
    c.contention = f.contention;
    c.contention.collectives = l.gather.nodes > 1 ? link_class::inter_node : link_class::intra_node;
    c.contention.reduce_scatters =
        l.scatter.nodes > 1 ? link_class::inter_node : link_class::intra_node;
    const seconds t = simulate(lower(s), c).makespan;
    out.linears.push_back({l.name, t, c.of(kind::block, phase::F) + c.of(kind::block, phase::B)});
    out.total += t;
  }
  return out;
}

}  // namespace weft
