// Rule 5: GPipe-style all-forwards-first on one rank keeps 3 micro-batches live; the bound is 2.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s = slots(block(F, mb{0}), block(F, mb{1}), block(F, mb{2}), block(B, mb{0}),
                         block(B, mb{1}), block(B, mb{2}));
#else
constexpr auto s = slots(block(F, mb{0}), block(F, mb{1}), block(B, mb{0}), block(F, mb{2}),
                         block(B, mb{1}), block(B, mb{2}));
#endif
static_assert(proven<diagnose(with_model(s, model_desc{.micro = 3, .max_live = 2}))>);
int main() {}
