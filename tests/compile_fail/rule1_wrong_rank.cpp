// Rule 1: chunk 1 lives on rank 1, but rank 0 runs its forward.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s = ranks(
    slots(block(F, mb{0}), block(F, mb{0}, chunk{1}), block(B, mb{0}, chunk{1}), block(B, mb{0})),
    slots(block(F, mb{1}, chunk{1})));
#else
constexpr auto s = ranks(slots(block(F, mb{0}), block(B, mb{0})),
                         slots(block(F, mb{0}, chunk{1}), block(B, mb{0}, chunk{1})));
#endif
static_assert(proven<diagnose(with_model(s, model_desc{.ranks = 2}))>);
int main() {}
