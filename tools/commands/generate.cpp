// `weft generate` (generate.hpp).
#include "commands/generate.hpp"

#include <iostream>

#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include "pipeline_request.hpp"

namespace weft::cli {

int run_command(const generate_args& o) {
  const bool csv = o.format == listing::csv;
  const schedule s = schedule_of(o.pipeline, o.pipeline.schedule, {.csv = csv}, &std::cerr);
  if (csv)
    write_pytorch_csv(std::cout, s);
  else
    print_slots(std::cout, s);
  return exit_ok;
}

}  // namespace weft::cli
