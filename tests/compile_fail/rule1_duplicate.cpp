// Rule 1: attn/F of micro-batch 1 appears twice.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}), attn(F, mb{1}));
#else
constexpr auto s = slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
                         mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
#endif
static_assert(proven<diagnose(s, assuming(done(F, mb{0})))>);
int main() {}
