// A fragment proven as a whole step: one layer's sub-stages of micro-batch 1's forward beside
// micro-batch 0's backward, without saying that micro-batch 0's forward is done. The error says
// it looks like a fragment and how to prove one; the ok variant gives the assumption.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
#ifdef WEFT_KO
static_assert(proven<diagnose(layer_fb)>);
#else
static_assert(proven<diagnose(layer_fb, assuming(done(F, mb{0})))>);
#endif
int main() {}
