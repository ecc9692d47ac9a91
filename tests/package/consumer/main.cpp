#include <weft/weft.hpp>

using namespace weft;

constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
static_assert(proven<diagnose(layer_fb, assuming(done(F, mb{0})))>);

int main() { return check(one_f_one_b({.ranks = 2, .micro = 4})).ok() ? 0 : 1; }
