// The machines a job runs on, from public spec sheets: a device's peak and memory, how many
// share a node, the links inside a node and between nodes, and what overlap costs it. Built in
// for four devices (`find_cluster`); plan/cluster_file.hpp reads one's own from JSON.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/core/link.hpp>
#include <weft/perf/collectives.hpp>
#include <weft/perf/device.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/device.hpp>

namespace weft::plan {

struct cluster {
  std::string_view name;
  device_facts device;   ///< peak dense bf16 FLOP/s, HBM bandwidth (efficiency: see below)
  double hbm_bytes = 0;  ///< the memory CUDA gives a process on a device (its "total capacity")
  int per_node = 8;      ///< devices per node
  link_model intra;      ///< device to device inside a node, one direction
  link_model inter;      ///< a device's share of its node's network, one direction
  contention_facts overlap = contention_facts::published();
  /// Data centres (MindSpeed's pp-cross-dc-comm-overlap note): the devices split evenly over
  /// `sites` centres `km` apart, every device's inter-node port converging `convergence_ratio` to 1
  /// onto the links between them. One site: none of it.
  struct data_centres {
    int sites = 1;
    double km = 0, convergence_ratio = 1;
  } centres{};
  /// What NCCL's ring collectives (all-gather, reduce-scatter, all-reduce) reach: nccl-tests'
  /// bus bandwidth inside a node, and per NIC between nodes. 0: the links' own bandwidth.
  struct collective_fabric {
    double nvlink_busbw = 0;  ///< bytes/s inside a node
    double nic_busbw = 0;     ///< bytes/s over one NIC; 0: `inter`'s (a device's share)
    int nics_per_node = 0;    ///< 0: one a device (a rail-optimized node)
  } fabric{};
  /// The device as the per-kernel prices see it (perf/device.hpp: its SMs, tiles, fp8, memory's
  /// sustained share); a cluster file's has none (`peak_bf16` 0), and the estimate makes one of
  /// `device`'s facts.
  perf::device chip{};
};

namespace detail {
// Per direction: NVLink's and HCCS's published figures are the sum of both directions.
constexpr link_model gb_per_s(double alpha_us, double bytes_per_s) noexcept {
  return link_model::with_bandwidth(seconds(alpha_us / 1e6), bytes_per_s);  // as files read it
}
}  // namespace detail

/// The sustained share of peak a device's large bf16 matmuls reach, measured (Bekman's
/// "maximum achievable matmul FLOPS" table, stas00/ml-engineering, compute/accelerator): A100
/// SXM 271.2 of 312 TFLOP/s, H100 SXM 794.5 of 989. The H800 has the H100's compute and no
/// published figure of its own: the H100's. One value per device, for every op it computes.
/// (The values' one home is the devices' own facts, perf/device.hpp.)
inline constexpr double a100_matmul_share = perf::a100_sxm.matmul_share,
                        h100_matmul_share = perf::h100_sxm.matmul_share;
/// And attention's (causal flash attention, head dim 128, forward and backward) at the longest
/// sequence measured, from the devices' curves (perf/device.hpp): A100 189 of 312 TFLOP/s
/// (FlashAttention-2); H100 FlashAttention-3's 616 forward and 561 backward, combined as a
/// step's time is — their FLOPs 1 : 2.5, as both papers count them — by the harmonic mean.
/// (The per-kernel prices read the curves at each kernel's length.)
inline constexpr double a100_attention_share = perf::a100_sxm.flash_forward.last() / 312e12,
                        h100_attention_share =
                            perf::flash_pair_rate(perf::h100_sxm.flash_forward.last(),
                                                  perf::h100_sxm.flash_backward.last()) /
                            989e12;

/// The built-in clusters (docs/planning.md gives the sources):
/// - a100-80g: DGX A100 — 312 TFLOP/s bf16 dense, 80 GB HBM2e at 2.04 TB/s (79.35 GiB of it to
///   CUDA, perf/device.hpp); NVLink 3 600 GB/s (300 each way) through NVSwitch; 8 x 200 Gb/s
///   HDR InfiniBand per node (25 GB/s a GPU).
/// - h100-sxm: DGX H100 — 989 TFLOP/s bf16 dense, 80 GB HBM3 at 3.35 TB/s (79.11 GiB to CUDA);
///   NVLink 4 900 GB/s (450 each way); 8 x 400 Gb/s NDR InfiniBand per node (50 GB/s a GPU).
/// - h800: H100 with NVLink cut to 400 GB/s (200 each way); 8 x 400 Gb/s InfiniBand per node.
/// - ascend-910b: Atlas 800T A2 (the device of presets/) — 313 TFLOP/s fp16 dense, 60% of it
///   sustained, 64 GB HBM at 1.6 TB/s; HCCS as link_model::intra_node; one 200 Gb/s RoCE port
///   per device.
/// Latencies: 2 us inside a node, 10 us between nodes (link_model's classes). Overlap: the
/// published contention facts for every device (contention_facts::published()).
/// Collectives' bus bandwidth (nccl-tests, measured by NVIDIA's NCCL developers): A100 NVLink
/// ~230 GB/s (NVIDIA/nccl-tests#149), DGX A100's 8 HDR NICs 192 GB/s together (NVIDIA/nccl#812:
/// 24 GB/s a NIC); H100 NVLink 370 GB/s for rings (nccl-tests#212: 450 GB/s line rate less the
/// protocol's ~20 %), NDR NICs 46-48 GB/s each (nccl-tests#290: 47); H800's NVLink the same share
/// of its 200 GB/s. The 910B: its links' own bandwidth.
namespace detail {
constexpr cluster with_chip(cluster c, const perf::device& d,
                            cluster::collective_fabric f = {}) noexcept {
  c.chip = d;
  c.fabric = f;
  return c;
}
}  // namespace detail

inline constexpr std::array<cluster, 4> clusters{{
    detail::with_chip({"a100-80g",
                       {.peak_flops = 312e12,
                        .efficiency = a100_matmul_share,
                        .memory_bytes_per_s = 2.04e12,
                        .attention_efficiency = a100_attention_share},
                       perf::a100_sxm.hbm_bytes,
                       8,
                       detail::gb_per_s(2, 300e9),
                       detail::gb_per_s(10, 25e9)},
                      perf::a100_sxm, {230e9, 192e9 / 8, 8}),
    detail::with_chip({"h100-sxm",
                       {.peak_flops = 989e12,
                        .efficiency = h100_matmul_share,
                        .memory_bytes_per_s = 3.35e12,
                        .attention_efficiency = h100_attention_share},
                       perf::h100_sxm.hbm_bytes,
                       8,
                       detail::gb_per_s(2, 450e9),
                       detail::gb_per_s(10, 50e9)},
                      perf::h100_sxm, {370e9, 47e9, 8}),
    detail::with_chip({"h800",
                       {.peak_flops = 989e12,
                        .efficiency = h100_matmul_share,
                        .memory_bytes_per_s = 3.35e12,
                        .attention_efficiency = h100_attention_share},
                       perf::h800.hbm_bytes,
                       8,
                       detail::gb_per_s(2, 200e9),
                       detail::gb_per_s(10, 50e9)},
                      perf::h800, {200e9 * 370 / 450, 47e9, 8}),
    detail::with_chip({"ascend-910b",
                       {.peak_flops = 313e12, .efficiency = 0.6, .memory_bytes_per_s = 1.6e12},
                       64e9,
                       8,
                       link_model::intra_node(),
                       link_model::inter_node()},
                      perf::ascend_910b),
}};

/// The range a cluster fact may take, under the name a cluster file gives it.
struct fact_range {
  std::string_view key;
  double lo, hi;
  /// Within the range; an ulp's slack, as a fact converted and back (1 / (1 / x)) may move by one.
  constexpr bool holds(double x) const noexcept {
    return x >= lo * (1 - 1e-15) && x <= hi * (1 + 1e-15);
  }
};

/// What a cluster's facts may be: wide enough for any device and network there is (a laptop's
/// GPU to an exaflop chip, a continent's WAN to NVLink), narrow enough that every estimate stays
/// finite and every cost keeps its order (never inf or NaN). The cluster file's reader and
/// `check_cluster` hold a cluster to the same ranges.
namespace cluster_ranges {
inline constexpr fact_range peak_flops{"peak_flops", 1e9, 1e18};
inline constexpr fact_range matmul_efficiency{"matmul_efficiency", 0.01, 1};
inline constexpr fact_range attention_efficiency{"attention_efficiency", 0.01, 1};
inline constexpr fact_range hbm_bytes{"hbm_bytes", 1e6, 1e15};
inline constexpr fact_range hbm_bytes_per_s{"hbm_bytes_per_s", 1e9, 1e15};
inline constexpr fact_range devices_per_node{"devices_per_node", 1, 1 << 16};
inline constexpr fact_range latency_us{"latency_us", 0, 1e9};
inline constexpr fact_range link_bytes_per_s{"bytes_per_s", 1e6, 1e15};
/// The collectives' bus bandwidths and NICs (0 in C++, absent in a file: the links' own).
inline constexpr fact_range nvlink_busbw{"nvlink_busbw", 1e6, 1e15};
inline constexpr fact_range nic_busbw{"nic_busbw", 1e6, 1e15};
inline constexpr fact_range nics_per_node{"nics_per_node", 1, 1 << 16};
inline constexpr fact_range compute_slowdown{"compute_slowdown", 0, 10};
/// Set in C++ only (no file key): communication slowed while compute runs, and the uplink
/// between data centres in ports.
inline constexpr fact_range comm_slowdown{"comm_slowdown", 0, 10};
inline constexpr fact_range uplink_ports{"uplink_ports", 0, 1 << 20};
inline constexpr fact_range sites{"sites", 1, 1 << 10};
inline constexpr fact_range km{"km", 0, 40075};  ///< up to the Earth round
inline constexpr fact_range convergence_ratio{"convergence_ratio", 1, 1e6};
}  // namespace cluster_ranges

namespace detail {
inline void hold(const std::string& where, const fact_range& r, double x) {
  if (!r.holds(x))
    throw config_error(where + std::string(r.key) + " must be in [" + shown(r.lo) + ", " +
                       shown(r.hi) + "], got " + shown(x));
}
}  // namespace detail

/// Throws `config_error` naming the fact when cluster `c` has one outside `cluster_ranges`
/// (a cluster built in code; the built-in ones and a cluster file's always pass). Every entry
/// point of the planner calls it first.
inline void check_cluster(const cluster& c) {
  namespace r = cluster_ranges;
  std::string at = "cluster ";  // appended: g++ 12 warns (-Wrestrict) on "x" + std::string&&
  if (c.name.empty()) {
    at += "(unnamed): ";
  } else {
    at += '\'';
    at += c.name;
    at += "': ";
  }
  detail::hold(at, r::peak_flops, c.device.peak_flops);
  detail::hold(at, r::matmul_efficiency, c.device.efficiency);
  if (c.device.attention_efficiency != 0)
    detail::hold(at, r::attention_efficiency, c.device.attention_efficiency);
  detail::hold(at, r::hbm_bytes, c.hbm_bytes);
  detail::hold(at, r::hbm_bytes_per_s, c.device.memory_bytes_per_s);
  detail::hold(at, r::devices_per_node, c.per_node);
  for (const auto& [name, l] : {std::pair{"intra_node: ", c.intra}, {"inter_node: ", c.inter}}) {
    detail::hold(at + name, r::latency_us, l.alpha.count() * 1e6);
    detail::hold(at + name, r::link_bytes_per_s, 1 / l.beta.count());
  }
  const auto optional = [&](const fact_range& range, double x) {
    if (x != 0) detail::hold(at + "collectives: ", range, x);
  };
  optional(r::nvlink_busbw, c.fabric.nvlink_busbw);
  optional(r::nic_busbw, c.fabric.nic_busbw);
  optional(r::nics_per_node, c.fabric.nics_per_node);
  detail::hold(at, r::compute_slowdown, c.overlap.compute_slowdown);
  detail::hold(at, r::comm_slowdown, c.overlap.comm_slowdown);
  detail::hold(at, r::uplink_ports, c.overlap.uplink_ports);
  detail::hold(at + "data_centres: ", r::sites, c.centres.sites);
  if (c.centres.sites > 1) {
    detail::hold(at + "data_centres: ", r::km, c.centres.km);
    detail::hold(at + "data_centres: ", r::convergence_ratio, c.centres.convergence_ratio);
  }
}

/// Whether every group of `size` ranks, `stride` apart, lies inside one node of `per_node`: its
/// span fits and divides the node, so that no group of the job straddles two (Megatron's groups
/// are consecutive blocks of span ranks).
constexpr bool inside_a_node(long long size, long long stride, long long per_node) noexcept {
  const long long span = size * stride;
  return span <= per_node && per_node % span == 0;
}

/// The link a group of `size` ranks, `stride` apart, crosses on cluster `c` point to point and
/// in an all-to-all: inside a node while every such group fits in one, else a device's own NIC
/// (NCCL's all-to-all cannot aggregate the NICs of a node: each rank's traffic leaves through
/// its own).
constexpr link_model group_link(const cluster& c, long long size, long long stride) noexcept {
  return inside_a_node(size, stride, c.per_node) ? c.intra : c.inter;
}

/// The link NCCL's ring collectives of a group of `size` ranks, `stride` apart, run at (their
/// bus bandwidth, nccl-tests' measure): inside a node, NVLink's; across nodes a ring over the
/// NICs the group's members own in a node — one channel a NIC on a rail-optimized node — so a
/// node's NICs add up: `members a node x a NIC's share a GPU`, at most NVLink's. A
/// tensor-parallel group of 16 over two nodes of 8 gets eight NICs, a data-parallel group of one
/// rank a node one. The ring runs at its slowest node: groups that span whole nodes evenly have
/// per_node / stride members on each; any other layout is priced at one member a node.
constexpr link_model collective_link(const cluster& c, long long size, long long stride) noexcept {
  const double nvlink =
      c.fabric.nvlink_busbw > 0 ? c.fabric.nvlink_busbw : 1 / c.intra.beta.count();
  if (inside_a_node(size, stride, c.per_node)) return {c.intra.alpha, seconds(1 / nvlink)};
  const long long P = c.per_node;
  const bool even = (size * stride) % P == 0 && stride < P && P % stride == 0;
  const double members = even ? static_cast<double>(P / stride) : 1;
  const double nics = c.fabric.nics_per_node > 0 ? c.fabric.nics_per_node : static_cast<double>(P);
  // A NIC's bandwidth; a file without one states a device's share of the node's network.
  const double nic = c.fabric.nic_busbw > 0
                         ? c.fabric.nic_busbw
                         : 1 / c.inter.beta.count() * static_cast<double>(P) / nics;
  const double per_gpu = nic * std::min(1.0, nics / static_cast<double>(P));
  return {c.inter.alpha, seconds(1 / std::min(nvlink, members * per_gpu))};
}

/// The same for a collective of `bytes` (nccl-tests' size: its whole buffer): inside a node the
/// bus bandwidth that size reaches on the node's measured curve (`chip.nvlink_by_size`: a
/// cluster file's when it names its device, none otherwise). A
/// tensor-parallel all-gather of one micro-batch's activation, 100 MB on a 22B model, reaches
/// 75 % of an A100 node's 230 GB/s. Across nodes the NICs' figure, whatever the size: no
/// per-size table of a multi-node ring was found.
inline link_model collective_link(const cluster& c, long long size, long long stride,
                                  double bytes) noexcept {
  link_model l = collective_link(c, size, stride);
  if (inside_a_node(size, stride, c.per_node))
    l.beta = l.beta / std::max(1e-9, c.chip.nvlink_by_size.share(bytes));
  return l;
}

/// The built-in cluster called `name`, or nullptr.
constexpr const cluster* find_cluster(std::string_view name) noexcept {
  for (const cluster& c : clusters)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace weft::plan
