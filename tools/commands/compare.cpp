// `weft compare` (compare.hpp).
#include "commands/compare.hpp"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <vector>

#include "commands/report.hpp"
#include "commands/simulated.hpp"
#include "pipeline_request.hpp"

namespace weft::cli {

int run_command(const compare_args& o) {
  std::vector<simulated> sims;
  for (const std::string& name : o.schedules)
    sims.push_back(simulate_pipeline(schedule_of(o.pipeline, name, {}, &std::cerr), o.cost, false));
  const auto peak_of = [](const simulated& sim) {
    int peak = 0;
    for (const auto& r : sim.metrics.ranks) peak = std::max(peak, r.peak_activations);
    return peak;
  };
  if (o.json) {
    json all = json::array();
    for (std::size_t i = 0; i < sims.size(); ++i) {
      json j = metrics_json(o.schedules[i], sims[i].metrics);
      j["peak_activations"] = peak_of(sims[i]);
      all.push_back(j);
    }
    std::cout << all.dump() << "\n";
    return exit_ok;
  }
  std::cout << "times in schedule units (--cost)\n"
            << std::left << std::setw(14) << "schedule" << std::right << std::setw(12) << "makespan"
            << std::setw(10) << "bubble" << std::setw(14) << "exposed comm" << std::setw(12)
            << "peak act."
            << "\n";
  for (std::size_t i = 0; i < sims.size(); ++i) {
    const unit_step_metrics& m = sims[i].metrics;
    std::cout << std::left << std::setw(14) << o.schedules[i] << std::right << std::setw(12)
              << m.makespan.count() << std::setw(9) << std::fixed << std::setprecision(1)
              << 100 * m.bubble_ratio << "%" << std::setw(14) << std::setprecision(3)
              << m.exposed_comm.count() << std::setw(12) << peak_of(sims[i]) << std::defaultfloat
              << "\n";
  }
  return exit_ok;
}

}  // namespace weft::cli
