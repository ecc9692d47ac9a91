// Rule 2: a fragment whose backward of micro-batch 0 needs forwards it does not assume done.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

constexpr auto s = slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
                         mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
#ifdef WEFT_KO
static_assert(proven<diagnose(s, assuming(done(combine, F, mb{0})))>);
#else
static_assert(proven<diagnose(s, assuming(done(F, mb{0})))>);
#endif
int main() {}
