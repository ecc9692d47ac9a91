// A model of one's own run with the runner: no Eigen.
#include <weft/generators/one_f_one_b.hpp>
#include <weft/runtime.hpp>
#include <weft/schedule/lower.hpp>

namespace {
struct blocks {
  int ran = 0;
  void operator()(weft::kinds::block, weft::phases::forward, weft::exec::run_call&) { ++ran; }
  void operator()(weft::kinds::block, weft::phases::backward, weft::exec::run_call&) { ++ran; }
  void operator()(weft::kinds::send, weft::phases::forward, weft::exec::run_call&) {}
  void operator()(weft::kinds::send, weft::phases::backward, weft::exec::run_call&) {}
  void operator()(weft::kinds::recv, weft::phases::forward, weft::exec::run_call&) {}
  void operator()(weft::kinds::recv, weft::phases::backward, weft::exec::run_call&) {}
};
}  // namespace

int main() {
  const weft::program p = weft::lower(weft::one_f_one_b({.ranks = 2, .micro = 4}));
  weft::exec::runner r(p, 1, {});
  blocks m;
  r.run(m);
  return m.ran == 16 ? 0 : 1;
}
