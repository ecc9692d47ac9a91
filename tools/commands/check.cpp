// `weft check` (check.hpp).
#include "commands/check.hpp"

#include <iostream>

#include "commands/report.hpp"
#include "pipeline_request.hpp"

namespace weft::cli {

int run_command(const check_args& o) {
  schedule s = schedule_of(o.pipeline, o.pipeline.schedule, {}, &std::cerr);
  s.model.max_live = o.max_live;
  return report_check(o.json, weft::check(s, tool_check));
}

}  // namespace weft::cli
