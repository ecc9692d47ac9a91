// A model for the runner: `uses_lowered` sees the transfers lowering adds, so a model with
// kernels for its blocks only is refused at compile time (`uses(s)` alone would pass it), and a
// model that routes its transfers through the runner needs no send or recv kernel.
#include <span>

#include <weft/exec/runner.hpp>
#include <weft/schedules/one_f_one_b.hpp>
#include <weft/sim/program.hpp>
using namespace weft;

struct blocks_only {
  template <class Phase>
  void operator()(kinds::block, Phase, exec::run_call&) {}
#ifndef WEFT_KO
  template <class Phase>
  void operator()(kinds::send, Phase, exec::run_call&) {}
  template <class Phase>
  void operator()(kinds::recv, Phase, exec::run_call&) {}
#endif
};

struct routed {
  template <class Phase>
  void operator()(kinds::block, Phase, exec::run_call&) {}
  std::span<const float> outgoing(const exec::run_call&) { return {}; }
  std::span<float> incoming(const exec::run_call&) { return {}; }
};

static_assert(binds_all<blocks_only, uses(one_f_one_b({.ranks = 2, .micro = 2})), exec::run_call>);
static_assert(exec::runnable<routed, uses_lowered(one_f_one_b({.ranks = 2, .micro = 2}))>);
static_assert(exec::runnable<blocks_only, uses_lowered(one_f_one_b({.ranks = 2, .micro = 2}))>);
int main() {}
