// Rule 1: the backward of micro-batch 1 never runs.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s = slots(block(F, mb{0}), block(F, mb{1}), block(B, mb{0}));
#else
constexpr auto s = slots(block(F, mb{0}), block(F, mb{1}), block(B, mb{0}), block(B, mb{1}));
#endif
static_assert(proven<diagnose(with_model(s, model_desc{.micro = 2}))>);
int main() {}
