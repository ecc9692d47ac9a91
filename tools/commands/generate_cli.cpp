// `weft generate`'s options (commands/generate.hpp) on CLI11: the pipeline and --format; and the
// rules CLI11 cannot express (`check`). The groups it shares with other subcommands are
// option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, generate_args& o, deferred&) {
  schedule_option(sub, o.pipeline, false);
  pipeline_options(sub, o.pipeline, false);
  sub.add_option("--format", o.format,
                 "text: slots (default); csv: PyTorch's schedule CSV (whole chunks only; with "
                 "--fb-overlap, OVERLAP_F_B cells)")
      ->transform(one_of<listing>({{"text", listing::text}, {"csv", listing::csv}}));
}

void check(const generate_args& o) {
  const pipeline_args& p = o.pipeline;
  check_pipeline(p, takes_chunks(p.schedule), false, false);
  if (o.format == listing::csv && (p.moe || p.shared_expert))
    bad("PyTorch's CSV holds whole-chunk actions; --moe and --shared-expert need --format text");
  if (o.format == listing::csv && p.ampipe())
    bad("PyTorch's CSV holds whole-chunk actions; AMPipe's splits need --format text");
}

}  // namespace weft::cli
