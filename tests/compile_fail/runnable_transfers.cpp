// A model for the runner: `uses_lowered` sees the transfers lowering adds, so a model with
// kernels for its blocks only is refused at compile time (`uses(s)` alone would pass it), and a
// model that routes its transfers through the runner needs no send or recv kernel.
#include <span>

#include <weft/exec/runner.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/lower.hpp>
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

// The set as a constant of its own: a schedule built inside a template argument is, for some
// compilers, still alive when the argument must be constant.
constexpr kind_phase_set compute_uses = uses(one_f_one_b({.ranks = 2, .micro = 2}));
constexpr kind_phase_set lowered_uses = uses_lowered(one_f_one_b({.ranks = 2, .micro = 2}));
static_assert(binds_all<blocks_only, compute_uses, exec::run_call>);
static_assert(exec::runnable<routed, lowered_uses>);
static_assert(exec::runnable<blocks_only, lowered_uses>);
int main() {}
