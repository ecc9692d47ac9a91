// Rule 4: rank 0 sends micro-batch 1 first while rank 1 receives micro-batch 0 first; FIFO
// matching on the channel would hand rank 1 the wrong activations. (A forward-only pipeline of
// two ranks keeps the case small.)
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr auto r0 = slots(block(F, mb{0}), block(F, mb{1}), send(F, mb{1}), send(F, mb{0}));
#else
constexpr auto r0 = slots(block(F, mb{0}), block(F, mb{1}), send(F, mb{0}), send(F, mb{1}));
#endif
constexpr auto r1 = slots(recv(F, mb{0}, chunk{1}), recv(F, mb{1}, chunk{1}, lane{1}),
                          block(F, mb{0}, chunk{1}), block(F, mb{1}, chunk{1}));
static_assert(proven<diagnose(with_model(ranks(r0, r1),
                                         model_desc{.ranks = 2, .micro = 2, .backward = false}))>);
int main() {}
