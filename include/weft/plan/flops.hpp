// The planner's names for a transformer's FLOPs, whose one home is <weft/perf/flops.hpp>
// (`weft::perf`). Every name stays spelled `weft::plan::…` too.
#pragma once

#include <weft/perf/flops.hpp>
#include <weft/plan/transformer.hpp>

namespace weft::plan {
using perf::attention_count;
using perf::forward_flops;
using perf::head_flops;
using perf::layer_flops;
using perf::matmul_flops;
using perf::model_flops;
using perf::mtp_flops;
using perf::recomputed_flops;
}  // namespace weft::plan
