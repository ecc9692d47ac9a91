#include "scenario_presets.hpp"

#include <string>

#include <weft/plan/presets.hpp>

namespace weft::testing {

namespace {
plan::preset read(const char* name) {
  plan::preset p = plan::read_preset(std::string(WEFT_PRESETS_DIR) + "/" + name);
  if (!p.warnings.empty()) throw config_error("preset " + std::string(name) + ": " + p.warnings[0]);
  return p;
}
}  // namespace

xdc_facts llama2_70b_xdc() { return plan::xdc_facts_of(read("llama2-70b-xdc")); }
moe_mesh_facts ampipe_16p() { return plan::moe_mesh_facts_of(read("ampipe-16p")); }
tp_layer_facts llama3_405b() { return plan::tp_layer_facts_of(read("llama3-405b")); }

}  // namespace weft::testing
