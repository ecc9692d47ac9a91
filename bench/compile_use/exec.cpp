// The exec umbrella with the dense executor run once.
#include <weft/exec.hpp>

int main() {
  weft::exec::dense_model<float> model({.stages = 2, .micro = 4});
  weft::exec::dense_executor<float> ex(model);
  return ex.run(weft::one_f_one_b({.ranks = 2, .micro = 4})).loss > 0 ? 0 : 1;
}
