// A consumer of weft::exec: the built-in dense model under DualPipeV, gradients against its
// serial run.
#include <weft/exec.hpp>

#include <cstdio>

int main() {
  weft::exec::dense_model<float> model({.stages = 4, .micro = 4, .seed = 5});
  weft::exec::dense_executor<float> ex(model);
  const auto run = ex.run(weft::dualpipev({.ranks = 2, .micro = 4}));
  model.serial_step();
  const double err = weft::exec::max_grad_rel_err(run, model);
  std::printf("loss %.4f, largest gradient error %.2g\n", static_cast<double>(run.loss), err);
  return err < 1e-5 ? 0 : 1;
}
