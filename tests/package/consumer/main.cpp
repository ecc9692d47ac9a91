// A consumer of weft::weft alone: no Eigen on the include path. Proves a schedule at compile
// time, simulates one, and runs a model of its own (plain integers) through the runner.
#include <weft/runtime.hpp>
#include <weft/weft.hpp>

#include <cstdio>
#include <mutex>

using namespace weft;

constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
static_assert(proven<diagnose(layer_fb, assuming(done(F, mb{0})))>);

// Counts the blocks it runs; its transfers carry one number each.
struct counting_model {
  std::mutex m;
  int blocks = 0;
  float box[64] = {};
  int next = 0;
  int comm_steps(const op&) const { return 1; }
  template <class Phase>
  void operator()(kinds::block, Phase, exec::run_call&) {
    std::lock_guard lock(m);
    ++blocks;
  }
  template <class Phase>
  void operator()(kinds::send, Phase, exec::run_call& c) {
    c.started = c.comm->isend({slot(), 1}, c.peer, c.tag);
  }
  template <class Phase>
  void operator()(kinds::recv, Phase, exec::run_call& c) {
    c.started = c.comm->irecv({slot(), 1}, c.peer, c.tag);
  }
  float* slot() {
    std::lock_guard lock(m);
    return &box[next++ % 64];
  }
};

int main() {
  const schedule s = one_f_one_b({.ranks = 2, .micro = 4, .transfers = true});
  if (!check(s).ok()) return 1;
  const program p = lower(s);
  const unit_timeline predicted = simulate(p, unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}));
  exec::runner run(p, 1, {.workers = 2});
  counting_model model;
  const timeline measured = run.run(model);
  std::printf("predicted %.1f units, ran %d blocks in %.3f ms\n", predicted.makespan.count(),
              model.blocks, 1e3 * measured.makespan.count());
  return model.blocks == 2 * 4 * 2 ? 0 : 1;
}
