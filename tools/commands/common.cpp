// What the subcommands share (common.hpp). A preset's folder (presets/<name>/: config.json,
// job.json, cluster.json) is found under $WEFT_PRESETS, then beside the installed tool
// (<prefix>/share/weft/presets), then in the source tree it was built from.
#include "commands/common.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <iostream>

#include <weft/core/error.hpp>
#include <weft/plan/presets.hpp>

namespace weft::cli {

std::ofstream open_for_writing(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw config_error("weft: cannot write '" + path + "'");
  return out;
}

std::function<void(int, const op&)> fault_injection(const failure_args& failing) {
  const fault_spec f = failing.fault;
  if (f.kind == fault_kind::none) return {};
  const auto stall = 2 * failing.timeout;
  auto seen = std::make_shared<std::atomic<long>>(0);
  return [=](int r, const op& x) {
    if (r != f.rank || seen->fetch_add(1) != f.op) return;
    switch (f.kind) {
      case fault_kind::throw_error:
        throw std::runtime_error("injected fault (--inject-fault " + f.text + ") before " +
                                 to_string(x));
      case fault_kind::exit:
        std::_Exit(injected_exit);
      case fault_kind::kill:
        std::raise(SIGKILL);
        break;
      case fault_kind::stall:
        std::this_thread::sleep_for(stall);
        break;
      case fault_kind::none:
        break;
    }
  };
}

unit_cost_model unit_costs(const cost_args& c) {
  const costs& u = c.unit;
  unit_cost_model m =
      c.preset == preset_name::deepseek_v3
          ? unit_cost_model::deepseek_v3_like()
          : unit_cost_model::pipeline(
                {.F = u.F, .B = u.B, .W = u.W, .FB = u.FB, .P2P = u.P2P, .A2A = u.A2A});
  m.contention = c.contention;
  return m;
}

xdc_facts xdc_facts_of(int chunks, int micro, bool nanopipe, const delay_args& delay) {
  const plan::preset p = plan::read_preset(preset_dir("llama2-70b-xdc"));
  for (const std::string& w : p.warnings) std::cerr << "weft: " << w << "\n";
  xdc_facts f = plan::xdc_facts_of(p);
  const int per_rank = f.layers / f.pp;
  if (f.layers % (f.pp * chunks) != 0) {
    std::string counts;  // what divides a rank's layers
    for (int d = 1; d <= per_rank; ++d)
      if (per_rank % d == 0) counts += (counts.empty() ? "" : ", ") + std::to_string(d);
    throw config_error("weft: llama2-70b-xdc: --chunks must divide the " +
                       std::to_string(per_rank) + " layers of a pipeline rank (" + counts + ")");
  }
  f.chunks = chunks;
  f.nanopipe = nanopipe;
  if (micro != 0) f.micro = micro;
  if (delay.link == link_choice::inter_node) f.sites = 1;
  if (delay.km_given) f.km = delay.km;
  if (delay.ratio_given) f.ratio = delay.ratio;
  return f;
}

contention_facts xdc_contention_of(const xdc_facts& f, const cost_args& c) {
  contention_facts out = c.contention;
  if (c.contention_scenario) out.uplink_ports = xdc_contention(f).uplink_ports;
  return out;
}

std::filesystem::path preset_dir(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("WEFT_PRESETS"); env && *env) roots.emplace_back(env);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(self.parent_path().parent_path() / "share" / "weft" / "presets");
#ifdef WEFT_SOURCE_PRESETS
  roots.emplace_back(WEFT_SOURCE_PRESETS);
#endif
  std::string tried;
  for (const fs::path& root : roots) {
    const fs::path dir = root / name;
    if (fs::exists(dir / "config.json", ec)) return dir;
    tried += (tried.empty() ? "" : ", ") + root.string();
  }
  throw config_error("weft: preset " + name + " not found in " +
                     (tried.empty() ? std::string("no folder") : tried) +
                     " (set WEFT_PRESETS to the folder that holds it)");
}

}  // namespace weft::cli
