// Rule 1: the routed experts' backward is fused (B) and split (dX, dW) at once.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto s =
    slots(attn(F, mb{0}), dispatch(F, mb{0}), mlp(F, mb{0}), combine(F, mb{0}), combine(B, mb{0}),
          mlp(B, mb{0}), mlp(dX, mb{0}), mlp(dW, mb{0}), dispatch(B, mb{0}), attn(B, mb{0}));
#else
constexpr auto s =
    slots(attn(F, mb{0}), dispatch(F, mb{0}), mlp(F, mb{0}), combine(F, mb{0}), combine(B, mb{0}),
          mlp(dX, mb{0}), dispatch(B, mb{0}) | mlp(dW, mb{0}), attn(B, mb{0}));
#endif
static_assert(proven<diagnose(s)>);
int main() {}
