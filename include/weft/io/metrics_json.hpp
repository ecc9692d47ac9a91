// A simulated step's metrics as data (`weft simulate --json`, the Python module): times as
// counts of the timeline's unit (seconds, or unit-free schedule units) at full precision.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include <weft/core/time.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/metrics.hpp>

namespace weft {

template <time_type T>
nlohmann::ordered_json metrics_json(const std::string& name, const basic_step_metrics<T>& m) {
  nlohmann::ordered_json j;
  j["schedule"] = name;
  j["time_unit"] = unit_name<T>();
  j["makespan"] = m.makespan.count();
  j["bubble_ratio"] = m.bubble_ratio;
  j["exposed_comm"] = m.exposed_comm.count();
  j["exposed_comm_by_phase"] = {{"warmup", m.exposed_by_phase[0].count()},
                                {"steady", m.exposed_by_phase[1].count()},
                                {"cooldown", m.exposed_by_phase[2].count()}};
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const auto& x = m.ranks[r];
    nlohmann::ordered_json use = nlohmann::ordered_json::array();
    for (int st = 0; st < streams_per_rank; ++st)
      use.push_back(m.makespan > T{0} ? x.stream_busy[st] / m.makespan : 0.0);
    ranks.push_back({{"rank", r},
                     {"busy", x.busy.count()},
                     {"idle", x.idle.count()},
                     {"exposed_comm", x.exposed_comm.count()},
                     {"peak_activations", x.peak_activations},
                     {"stream_utilisation", use}});
  }
  j["ranks"] = ranks;
  return j;
}

}  // namespace weft
