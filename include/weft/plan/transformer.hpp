// The planner's names for a transformer's shape, which lives with the work it costs in
// <weft/perf/transformer.hpp> (`weft::perf`): a job's planner and the simulator's scenarios
// price the same model. Every name stays spelled `weft::plan::…` too.
#pragma once

#include <weft/perf/transformer.hpp>

namespace weft::plan {
using perf::activated_parameters;
using perf::attention_parameters;
using perf::edge_parameters;
using perf::edges;
using perf::layer_parameters;
using perf::mla_shape;
using perf::mlp_kind;
using perf::mlp_parameters;
using perf::moe_shape;
using perf::norm_parameters;
using perf::parameter_count;
using perf::total_parameters;
using perf::transformer;
}  // namespace weft::plan
