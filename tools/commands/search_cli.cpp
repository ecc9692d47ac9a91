// `weft search`'s options (commands/search.hpp) on CLI11: the search's shape, costs, memory cap and
// budget; and the rules CLI11 cannot express (`check`). The groups it shares with other subcommands
// are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, search_args& o, deferred& later) {
  sub.add_option("--pp", o.pp, "pipeline ranks (devices)")->check(whole_in(1, weft::limits::ranks));
  sub.add_option("--micro", o.micro, "micro-batches per step")
      ->check(whole_in(1, weft::limits::micro));
  sub.add_option("--chunks", o.chunks,
                 "model chunks per rank with --placement loop (vee has 2); neither given, every "
                 "placement is searched: loops of 1 to 4 chunks per rank and a V")
      ->check(whole_in(1, weft::limits::chunks));
  sub.add_option("--placement", o.placement,
                 "loop: chunk c on rank c % pp (1F1B, ZB-H1, interleaved); vee: rank r holds "
                 "chunks r and 2 pp - 1 - r (ZB-V, DualPipeV)")
      ->transform(one_of<placement_choice>(
          {{"loop", placement_choice::loop}, {"vee", placement_choice::vee}}));
  layer_options(sub, o.layers, o.moe, o.shared_expert, o.fb_overlap);
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer; llama2-70b-xdc: llama2-70B over two data "
               "centres, tp 8 pp 8, in seconds (docs/cross-dc.md)",
               false);
  delay_option(sub, o.delay, later, xdc_delay_help);
  sub.add_option("--max-live", o.max_live,
                 "the memory cap: live activation units per rank, as rule 5 counts them (0: none; "
                 "over every placement, units of a rank's whole share, as one chunk per rank "
                 "counts them)")
      ->check(whole_in(0, 1 << 30));
  sub.add_option_function<double>(
         "--budget-s", [&o](double s) { o.budget = weft::seconds{s}; },
         "search time in seconds (default 10): the best plan found by then")
      ->check(CLI::Range(0.0, 86400.0));
  search_walk_options(sub, o.evaluations, o.seed, "plans");
  sub.add_flag("--json", o.json, "print the result as JSON");
  sub.add_option("--out", o.out,
                 "write the best plan as PyTorch's schedule CSV (runs with weft run "
                 "--schedule-file, or torchtitan's custom CSV path)");
  sub.add_option("--svg", o.svg, "write an SVG timeline of the best plan, simulated");
}

void check(search_args& o, const CLI::App& sub) {
  const bool xdc = o.cost.preset == preset_name::llama2_70b_xdc;
  const bool vee = o.placement == placement_choice::vee;
  const bool chunks_given = sub.get_option("--chunks")->count() > 0;
  if (!xdc && (o.pp == 0 || o.micro == 0))
    bad("search needs --pp and --micro (or --preset llama2-70b-xdc)");
  if (xdc && (o.pp != 0 || o.layers != 1 || o.moe || o.shared_expert || o.fb_overlap || vee))
    bad("--preset llama2-70b-xdc is a whole scenario (pp 8, tp 8, loop placement); with search "
        "it takes --chunks, --micro, --delay-model, --max-live and the search's options");
  if (o.delay.link != link_choice::none && !xdc)
    bad("--delay-model in search prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
        "is unit-free)");
  if (o.delay.link == link_choice::intra_node)
    bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different "
        "machines; use inter-node or cross-dc[:KM[:RATIO]]");
  if (vee && chunks_given && o.chunks != 2)
    bad("--placement vee puts 2 chunks on each rank: leave --chunks out");
  if (vee) o.chunks = 2;
  o.every_placement = !chunks_given && sub.get_option("--placement")->count() == 0 &&
                      o.cost.preset == preset_name::none;
  if (o.cost.preset == preset_name::deepseek_v3 && !(o.moe || o.shared_expert || o.fb_overlap))
    bad("--preset deepseek-v3 prices MoE sub-stages: add --moe (or --fb-overlap)");
  if (!o.out.empty() && xdc)
    bad("--out writes PyTorch's CSV of unit-free schedules; the llama2-70b-xdc scenario has "
        "none (use --svg)");
}

}  // namespace weft::cli
