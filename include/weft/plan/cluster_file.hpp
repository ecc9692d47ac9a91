// One's own cluster from a JSON file (`weft plan --cluster FILE.json`), in the terms of the
// built-in ones (plan/cluster.hpp). docs/planning.md has the schema:
//   {"peak_flops": 989e12, "matmul_efficiency": 0.8, "attention_efficiency": 0.59,
//    "hbm_bytes": 80e9, "hbm_bytes_per_s": 3.35e12, "devices_per_node": 8,
//    "intra_node": {"latency_us": 2, "bytes_per_s": 450e9},
//    "inter_node": {"latency_us": 10, "bytes_per_s": 50e9}, "compute_slowdown": 0.189}
//    (optional) "data_centres": {"sites": 2, "km": 960, "convergence_ratio": 128}
// attention_efficiency and compute_slowdown are optional (the matmul efficiency; the published
// 0.189), and so are the data centres (one site). A missing key or a value out of range is a
// `config_error` naming it; a key it does not know, a warning.
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
  cluster_file out;
  cluster& c = out.spec;
  c.name = {};
  c.device.peak_flops = r.positive("peak_flops", 1e18);
  c.device.efficiency = r.positive("matmul_efficiency", 1);
  c.device.attention_efficiency =
      r.has("attention_efficiency") ? r.positive("attention_efficiency", 1) : 0;
  c.hbm_bytes = r.positive("hbm_bytes", 1e15);
  c.device.memory_bytes_per_s = r.positive("hbm_bytes_per_s", 1e15);
  c.per_node = static_cast<int>(r.whole({"devices_per_node"}, 1, 1 << 16));
  const auto link = [&](std::string_view key) {
    detail::config_reader l = r.object(key);
    // Divided, not multiplied by 1e-6: 10 / 1e6 is the double nearest 1e-5, as the built-in
    // links write it, so a file can state them to the bit.
    const link_model m = link_model::with_bandwidth(seconds(l.positive("latency_us", 1e9) / 1e6),
                                                    l.positive("bytes_per_s", 1e15));
    for (std::string& w : l.unused()) out.warnings.push_back(std::move(w));
    return m;
  };
  c.intra = link("intra_node");
  c.inter = link("inter_node");
  c.overlap = contention_facts::published();
  const double slowdown = r.number("compute_slowdown", c.overlap.compute_slowdown);
  if (!(slowdown >= 0 && slowdown <= 10))
    throw config_error(file + ": compute_slowdown must be in [0, 10], got " +
                       j.at("compute_slowdown").dump());
  c.overlap.compute_slowdown = slowdown;
  if (r.has("data_centres")) {
    detail::config_reader d = r.object("data_centres");
    c.centres.sites = static_cast<int>(d.whole({"sites"}, 1, 1 << 10));
    c.centres.km = d.positive("km", 40000);
    c.centres.convergence_ratio = d.positive("convergence_ratio", 1e6);
    if (c.centres.convergence_ratio < 1)
      throw config_error(file +
                         ": data_centres: convergence_ratio must be 1 or more (ports to "
                         "links between the centres), got " +
                         j.at("data_centres").at("convergence_ratio").dump());
    for (std::string& w : d.unused()) out.warnings.push_back(std::move(w));
  }
  for (std::string& w : r.unused()) out.warnings.push_back(std::move(w));
  return out;
}

}  // namespace weft::plan
