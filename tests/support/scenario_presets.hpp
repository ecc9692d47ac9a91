// The scenarios of MindSpeed's feature notes as the tool reads them: each preset's files
// (presets/) turned into the facts its cost model is built from. Defined once, in
// scenario_presets.cpp, so the JSON readers are compiled once for every test program that prices a
// note's run.
#pragma once

namespace weft {
struct xdc_facts;
struct moe_mesh_facts;
struct tp_layer_facts;
}  // namespace weft

namespace weft::testing {

/// presets/llama2-70b-xdc: llama2-70B at tp 8, pp 8 over two data centres (VP 5, as its job
/// file says).
xdc_facts llama2_70b_xdc();

/// presets/ampipe-16p: the MoE layers of MindSpeed's AMPipe note on two machines of 8 devices.
moe_mesh_facts ampipe_16p();

/// presets/llama3-405b: a llama3-405B layer at tp 16.
tp_layer_facts llama3_405b();

}  // namespace weft::testing
