// One's own cluster from a JSON file (`weft plan --cluster FILE.json`), in the terms of the
// built-in ones (plan/cluster.hpp). docs/planning.md has the schema:
//   {"peak_flops": 989e12, "matmul_efficiency": 0.8, "attention_efficiency": 0.59,
//    "hbm_bytes": 84.94e9, "hbm_bytes_per_s": 3.35e12, "devices_per_node": 8,
//    "intra_node": {"latency_us": 2, "bytes_per_s": 450e9},
//    "inter_node": {"latency_us": 10, "bytes_per_s": 50e9}, "compute_slowdown": 0.189}
//    (optional) "data_centres": {"sites": 2, "km": 960, "convergence_ratio": 128}
//    (optional) "device": "h800"
//    (optional) "collectives": {"nvlink_busbw": 164e9, "nic_busbw": 47e9, "nics_per_node": 8}
// attention_efficiency and compute_slowdown are optional (the matmul efficiency; the published
// 0.189), and so are the data centres (one site). "device" names a built-in device
// (perf/device.hpp) whose SMs, GEMM tile, fp8 rate and memory's sustained share the per-kernel
// prices take, the file's own peak, efficiency and memory overriding its; without it every
// matmul runs at the sustained rate whatever its shape and the memory at its full bandwidth.
// "collectives" gives the bus bandwidth NCCL's ring collectives reach (nccl-tests' busbw)
// inside a node and per NIC, and the NICs of a node; without it, the links' own bandwidth and
// one NIC a device (a rail-optimized node). A
// missing key or a value outside its `cluster_ranges` is a `config_error` naming it; a key it does
// not know, a warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/plan/cluster.hpp>
#include <weft/plan/hf_config.hpp>

namespace weft::plan {

struct cluster_file {
  cluster spec;  ///< its name left empty: the caller names it (it owns the text)
  std::vector<std::string> warnings;
};

inline cluster_file read_cluster(std::string_view text, const std::string& file) {
  const nlohmann::json j = detail::parse_json(text, file);
  detail::config_reader r(j, file);
  const auto fact = [](detail::config_reader& from, const fact_range& range,
                       const double* fallback = nullptr) {
    return from.in_range(range.key, range.lo, range.hi, fallback);
  };
  namespace R = cluster_ranges;
  cluster_file out;
  cluster& c = out.spec;
  c.name = {};
  c.device.peak_flops = fact(r, R::peak_flops);
  c.device.efficiency = fact(r, R::matmul_efficiency);
  const double none = 0;  // attention at the matmuls' efficiency
  c.device.attention_efficiency = fact(r, R::attention_efficiency, &none);
  c.hbm_bytes = fact(r, R::hbm_bytes);
  c.device.memory_bytes_per_s = fact(r, R::hbm_bytes_per_s);
  c.per_node = static_cast<int>(
      r.whole({R::devices_per_node.key}, R::devices_per_node.lo, R::devices_per_node.hi));
  const auto link = [&](std::string_view key) {
    detail::config_reader l = r.object(key);
    // Divided, not multiplied by 1e-6: 10 / 1e6 is the double nearest 1e-5, as the built-in
    // links write it, so a file can state them to the bit.
    const link_model m = link_model::with_bandwidth(seconds(fact(l, R::latency_us) / 1e6),
                                                    fact(l, R::link_bytes_per_s));
    for (std::string& w : l.unused()) out.warnings.push_back(std::move(w));
    return m;
  };
  c.intra = link("intra_node");
  c.inter = link("inter_node");
  c.overlap = contention_facts::published();
  c.overlap.compute_slowdown = fact(r, R::compute_slowdown, &c.overlap.compute_slowdown);
  if (r.has("data_centres")) {
    detail::config_reader d = r.object("data_centres");
    c.centres.sites = static_cast<int>(d.whole({R::sites.key}, R::sites.lo, R::sites.hi));
    c.centres.km = fact(d, R::km);
    c.centres.convergence_ratio = fact(d, R::convergence_ratio);
    for (std::string& w : d.unused()) out.warnings.push_back(std::move(w));
  }
  if (r.has("collectives")) {
    detail::config_reader f = r.object("collectives");
    const double none = 0;
    c.fabric.nvlink_busbw = fact(f, R::nvlink_busbw, &none);
    c.fabric.nic_busbw = fact(f, R::nic_busbw, &none);
    const double per_device = 0;
    c.fabric.nics_per_node = static_cast<int>(
        f.whole({R::nics_per_node.key}, R::nics_per_node.lo, R::nics_per_node.hi, per_device));
    for (std::string& w : f.unused()) out.warnings.push_back(std::move(w));
  }
  if (r.has("device")) {
    const std::string name = r.text({"device"}, "");
    const perf::device* d = perf::find_device(name);
    if (!d)
      throw config_error(file + ": device '" + excerpt(name) +
                         "' is not a built-in one (a100-80g, h100-sxm, h800, ascend-910b)");
    c.chip = *d;
    c.chip.peak_bf16 = c.device.peak_flops;
    c.chip.matmul_share = c.device.efficiency;
    c.chip.hbm_bytes = c.hbm_bytes;
    c.chip.hbm_bytes_per_s = c.device.memory_bytes_per_s;
  }
  for (std::string& w : r.unused()) out.warnings.push_back(std::move(w));
  check_cluster(c);  // the same ranges; what holds the built-in clusters holds a file's
  return out;
}

}  // namespace weft::plan
