// `weft check`'s options (commands/check.hpp) on CLI11: the pipeline and rule 5's bound; and the
// rules CLI11 cannot express (`check`). The groups it shares with other subcommands are
// option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, check_args& o, deferred&) {
  schedule_option(sub, o.pipeline, false);
  pipeline_options(sub, o.pipeline, false);
  sub.add_option("--max-live", o.max_live, "rule 5: live activations per rank (0: no bound)")
      ->check(whole_in(0, 1 << 30));
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const check_args& o) {
  check_pipeline(o.pipeline, takes_chunks(o.pipeline.schedule), false, false);
}

}  // namespace weft::cli
