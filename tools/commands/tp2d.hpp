// `weft tp2d` (MindSpeed's tp-2d note): one attention + MLP layer on a tp_x x tp_y grid of
// in-process ranks and on its 1D counterpart; or the llama3-405B scenario, simulated.
#pragma once

#include <string_view>

#include <weft/schedule/model.hpp>
#include <weft/sim/cost.hpp>
#include "options.hpp"

namespace weft::cli {

struct tp2d_args {
  static constexpr std::string_view name = "tp2d";
  int tp_x = 0, tp_y = 0;
  int hidden = 192, heads = 24, ffn = 0, seq = 0, batch = 1;     ///< ffn 0: 4 x hidden; seq 0: 256
  tp_overlap overlap = tp_overlap::none;                         ///< --overlap
  bool ag_matmul = false, matmul_rs = false, coc_fused = false;  ///< MindSpeed's switches
  delay_args delay;
  preset_name preset = preset_name::none;  ///< llama3-405b
  weft::contention_facts contention;
  failure_args failing;  ///< --inject-fault, --timeout
  bool json = false;
  /// The layer's size or overlap asked for (a preset takes none).
  bool sized() const {
    return tp_x != 0 || tp_y != 0 || hidden != 192 || heads != 24 || ffn != 0 || seq != 0 ||
           batch != 1 || overlap != tp_overlap::none || ag_matmul || matmul_rs || coc_fused ||
           delay.link != link_choice::none || failing.fault.kind != fault_kind::none ||
           failing.timeout != failure_args{}.timeout;
  }
};

int run_command(const tp2d_args& o);

}  // namespace weft::cli
