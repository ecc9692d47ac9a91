// `weft tp2d`'s options (commands/tp2d.hpp) on CLI11: the layer and the grid, its overlap and
// links, or the llama3-405b scenario; and the rules CLI11 cannot express (`check`). The groups it
// shares with other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, tp2d_args& o, deferred& later) {
  sub.add_option("--tp-x", o.tp_x, "the grid's x size (TP-X groups: contiguous ranks)")
      ->check(whole_in(2, 16));
  sub.add_option("--tp-y", o.tp_y, "the grid's y size (TP-Y groups: ranks tp_x apart)")
      ->check(whole_in(2, 16));
  sub.add_option("--hidden", o.hidden, "hidden size (default 192)")->check(whole_in(1, 4096));
  sub.add_option("--heads", o.heads, "attention heads (default 24)")->check(whole_in(1, 4096));
  sub.add_option("--ffn", o.ffn, "MLP inner width (default 4 x hidden)")->check(whole_in(1, 16384));
  sub.add_option("--seq", o.seq, "tokens per sequence (default 256)")->check(whole_in(1, 4096));
  sub.add_option("--batch", o.batch, "sequences (default 1)")->check(whole_in(1, 64));
  auto* overlap =
      sub.add_option("--overlap", o.overlap,
                     "the forward overlap of every linear: none (default), ag-matmul (the "
                     "all-gather as a ring of steps under the matmul's pieces), matmul-rs "
                     "(pieces of the output reduce-scattered under the next piece), fused (both)")
          ->transform(one_of<tp_overlap>({{"none", tp_overlap::none},
                                          {"ag-matmul", tp_overlap::ag_matmul},
                                          {"matmul-rs", tp_overlap::matmul_rs},
                                          {"fused", tp_overlap::fused}}));
  sub.add_flag("--enable-overlap-ag-with-matmul", o.ag_matmul, "MindSpeed's name for ag-matmul")
      ->excludes(overlap);
  sub.add_flag("--enable-overlap-matmul-with-rs", o.matmul_rs, "MindSpeed's name for matmul-rs")
      ->excludes(overlap);
  sub.add_flag("--coc-fused-kernel", o.coc_fused, "MindSpeed's name for fused")->excludes(overlap);
  delay_option(sub, o.delay, later,
               "the emulated link of every collective: none, intra-node or inter-node");
  sub.add_option("--preset", o.preset,
                 "llama3-405b: simulate a llama3-405B layer at tp 16, 1D against 8 x 2 under "
                 "every overlap, from device and link facts (no run)")
      ->transform(one_of<preset_name>({preset(preset_name::llama3_405b)}));
  later.facts = &o.contention;
  contention_option(sub, later);
  failure_options(
      sub, o.failing, later,
      "KIND:RANK[:N] with KIND throw or stall: rank RANK of the 2D grid fails before its "
      "N-th op (0 first, the default; the ops of every linear's program, warm-up "
      "step first), to see how a run ends");
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const tp2d_args& o) {
  const bool preset = o.preset != preset_name::none;
  if (!preset && (o.tp_x == 0 || o.tp_y == 0))
    bad("tp2d needs --tp-x and --tp-y (both > 1), or --preset llama3-405b");
  if (preset && o.sized())
    bad("--preset llama3-405b is a whole scenario (tp 16: 8 x 2 against 16 x 1, every "
        "overlap); it takes --json and --contention only");
  if (o.delay.link == link_choice::cross_dc)
    bad("tp2d's --delay-model is none, intra-node or inter-node");
  if (ends_process(o.failing.fault))
    bad("--inject-fault " + o.failing.fault.text.substr(0, o.failing.fault.text.find(':')) +
        " ends a process: tp2d's ranks are threads of one (use throw or stall)");
  if (!preset && o.contention.active())
    bad("tp2d prices overlap in the simulated scenario only: --contention needs --preset "
        "llama3-405b (a run measures what overlap costs)");
}

}  // namespace weft::cli
