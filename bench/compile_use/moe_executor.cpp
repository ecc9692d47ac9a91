// A TU that runs the built-in MoE model: the executor's whole template instantiated once.
#include <weft/exec/moe_executor.hpp>
#include <weft/generators/dualpipe.hpp>

int main() {
  weft::exec::moe_model<float> model({.stages = 4, .layers = 1, .micro = 4, .replicas = 2});
  weft::exec::moe_executor<float> ex(model);
  const auto run = ex.run(weft::dualpipev({.ranks = 2,
                                           .micro = 4,
                                           .stages = weft::stage_set::moe_with_shared(),
                                           .overlap = weft::overlap_options::all()}));
  return run.loss > 0 ? 0 : 1;
}
