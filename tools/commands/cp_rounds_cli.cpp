// `weft cp-rounds`'s options (commands/cp_rounds.hpp) on CLI11: the mask, the ranks and the
// planner's cap and budget; and the rules CLI11 cannot express (`check`). The groups it shares with
// other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/cp/mask.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, cp_rounds_args& o, deferred&) {
  auto* mask = sub.add_option(
      "--mask", o.mask,
      "FAMILY[:K=V,...]: full, causal, window, bidir-window, global-window, documents, "
      "causal-documents, interleaved-documents, shared-question, causal-blockwise, prefix-lm, "
      "random");
  sub.add_option("--mask-file", o.mask_file, "a mask in weft's text form")->excludes(mask);
  sub.add_option("--seq", o.seq, "sequence length in tokens")->check(whole_in(1, cp::max_tokens));
  sub.add_option("--cp", o.cp, "context-parallel ranks")->required()->check(whole_in(1, 4096));
  sub.add_option("--cap", o.cap, "communication units per rank and round (default 6)")
      ->check(whole_in(0, 1 << 20));
  sub.add_option("--coarse", o.coarse,
                 "plan on a C x C coarse mask (default 1024; 0: the full mask)")
      ->check(whole_in(0, 8192));
  sub.add_flag_callback(
      "--no-remap", [&o] { o.remap = false; },
      "keep the original order (a mask already local, e.g. windows)");
  sub.add_option_function<double>(
         "--budget-s", [&o](double s) { o.budget = weft::seconds{s}; },
         "planning time budget in seconds (default 2): the best plan found by then")
      ->check(CLI::Range(0.001, 3600.0));
  sub.add_flag("--json", o.json, "print the result as JSON");
  sub.add_option("--svg", o.svg, "write the re-mapped mask as SVG");
}

void check(const cp_rounds_args& o) {
  if (o.mask.empty() == o.mask_file.empty()) bad("give one of --mask and --mask-file");
  if (!o.mask.empty() && o.seq == 0) bad("--seq S is required with --mask");
}

}  // namespace weft::cli
