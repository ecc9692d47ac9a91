// Model binding: a model without a kernel for mlp/B cannot run a schedule that uses it.
#include <weft/core/binding.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

struct tiny_moe {
  void operator()(kinds::attn, phases::forward, kernel_call&) {}
  void operator()(kinds::attn, phases::backward, kernel_call&) {}
  void operator()(kinds::dispatch, phases::forward, kernel_call&) {}
  void operator()(kinds::dispatch, phases::backward, kernel_call&) {}
  void operator()(kinds::mlp, phases::forward, kernel_call&) {}
#ifndef WEFT_KO
  void operator()(kinds::mlp, phases::backward, kernel_call&) {}
#endif
  void operator()(kinds::combine, phases::forward, kernel_call&) {}
  void operator()(kinds::combine, phases::backward, kernel_call&) {}
};

constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
static_assert(binds_all<tiny_moe, uses(layer_fb)>);
int main() {}
