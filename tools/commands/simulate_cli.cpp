// `weft simulate`'s options (commands/simulate.hpp) on CLI11: the pipeline, its costs, or a whole
// scenario (ampipe-16p, llama2-70b-xdc); and the rules CLI11 cannot express (`check`). The groups
// it shares with other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, simulate_args& o, deferred& later) {
  schedule_option(sub, o.pipeline, true);
  pipeline_options(sub, o.pipeline, true);
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::ampipe_16p),
                preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its "
               "compute partner; ampipe-16p (simulate): the AMPipe note's 16-device 128k run, "
               "a whole scenario (docs/ampipe.md); llama2-70b-xdc (simulate): llama2-70B over "
               "two data centres, tp 8 pp 8, --chunks V (docs/cross-dc.md)",
               true);
  delay_option(sub, o.delay, later, xdc_delay_help);
  output_options(sub, o.output, true);
}

void check(const simulate_args& o) {
  const pipeline_args& p = o.pipeline;
  const bool xdc = o.cost.preset == preset_name::llama2_70b_xdc;
  const bool ampipe = o.cost.preset == preset_name::ampipe_16p;
  check_pipeline(p, takes_chunks(p.schedule), xdc || ampipe, xdc);
  if (xdc && (!p.schedule.empty() || p.pp != 0 || p.layers != 1 || p.sub_stages() || p.transfers ||
              o.cost.barrier || p.ampipe() || p.p2p != p2p_mode::pytorch))
    bad("--preset llama2-70b-xdc is a whole scenario (Megatron's interleaved schedule on pp 8, "
        "tp 8); it takes --chunks, --micro, --delay-model and the note's switches "
        "(--overlap-p2p, --multi-stream, --log-allreduce, --async-log-allreduce, --nanopipe) "
        "only");
  if (xdc && o.delay.link == link_choice::intra_node)
    bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different machines; "
        "use inter-node or cross-dc[:KM[:RATIO]]");
  if (o.delay.link != link_choice::none && !xdc)
    bad("--delay-model in simulate prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
        "is unit-free)");
  if (!xdc && !ampipe) require_shape(p);
  if (ampipe && (!p.schedule.empty() || p.pp != 0 || p.micro != 0 || p.layers != 1 ||
                 p.sub_stages() || p.transfers || o.cost.barrier || p.p2p_options()))
    bad("--preset ampipe-16p is a whole scenario (pp 1, 2 MoE layers, its own schedule); it takes "
        "no --schedule, --pp, --micro, --layers, --moe, --shared-expert, --fb-overlap, "
        "--transfers, --barrier or p2p options");
}

}  // namespace weft::cli
