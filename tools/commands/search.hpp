// `weft search` (docs/search.md): the fastest legal schedule found for given costs and a memory
// cap, beside every generator's and the lower bounds.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/time.hpp>
#include "options.hpp"

namespace weft::cli {

/// `--placement`: chunk c on rank c % pp, or two chunks per rank in a V (ZB-V, DualPipeV).
enum class placement_choice { loop, vee };

struct search_args {
  static constexpr std::string_view name = "search";
  int pp = 0, micro = 0, chunks = 1, layers = 1;  ///< chunks: 2 with --placement vee
  placement_choice placement = placement_choice::loop;
  /// Neither --placement nor --chunks given (and --cost, not a preset): every placement is
  /// searched, loops of 1 to 4 chunks per rank and a V.
  bool every_placement = false;
  bool moe = false, shared_expert = false, fb_overlap = false;
  cost_args cost;    ///< --cost, or --preset deepseek-v3 / llama2-70b-xdc
  delay_args delay;  ///< llama2-70b-xdc's link between the data centres
  int max_live = 0;  ///< the memory cap (0: none)
  weft::seconds budget{10};
  long long evaluations = 0;  ///< a cap on plans judged (0: none)
  long long seed = 1;
  bool json = false;
  std::string out, svg;  ///< the best plan as PyTorch's CSV, and pictured
};

int run_command(const search_args& o);

}  // namespace weft::cli
