// Rule 1: an op for micro-batch 2 in a model of two micro-batches.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

constexpr auto legal = slots(block(F, mb{0}), block(F, mb{1}), block(B, mb{0}), block(B, mb{1}));
#ifdef WEFT_KO
constexpr auto s = with_model(
    slots(block(F, mb{0}), block(F, mb{1}), block(F, mb{2}), block(B, mb{0}), block(B, mb{1})),
    model_desc{.micro = 2});
#else
constexpr auto s = with_model(legal, model_desc{.micro = 2});
#endif
static_assert(proven<diagnose(s)>);
int main() {}
