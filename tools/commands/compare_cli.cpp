// `weft compare`'s options (commands/compare.hpp) on CLI11: several schedules of one pipeline and
// their costs; and the rules CLI11 cannot express (`check`). The groups it shares with other
// subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, compare_args& o, deferred& later) {
  sub.add_option("--schedules", o.schedules, "schedules to compare, comma-separated")
      ->required()
      ->delimiter(',')
      ->check(CLI::IsMember(schedule_names));
  pipeline_options(sub, o.pipeline, false);
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::ampipe_16p),
                preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its "
               "compute partner (ampipe-16p and llama2-70b-xdc are simulate's)",
               true);
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const compare_args& o) {
  scenario_is_simulates(o.cost.preset);
  const bool chunked = std::any_of(o.schedules.begin(), o.schedules.end(),
                                   [](const std::string& n) { return takes_chunks(n); });
  check_pipeline(o.pipeline, chunked, false, false);
}

}  // namespace weft::cli
