// Rule 3: dispatch/F shares a slot with the attn/F that produces its tokens.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s = slots(attn(F, mb{1}) | dispatch(F, mb{1}), combine(B, mb{0}), mlp(B, mb{0}),
                         mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
#else
constexpr auto s = slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
                         mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
#endif
static_assert(proven<diagnose(s, assuming(done(F, mb{0})))>);
int main() {}
