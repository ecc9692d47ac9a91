// Rule 4: 1F1B on two ranks with every transfer on one comm stream. Rank 0 blocks in the send of
// micro-batch 1's activations before it posts the receive of micro-batch 0's gradient, which
// rank 1 sends before it receives micro-batch 1: a cycle. Sends and receives on separate streams
// (the ok variant, as in pp-cross-dc-comm-overlap) break it.
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr lane rx{0};
#else
constexpr lane rx{1};
#endif
constexpr auto s =
    ranks(slots(block(F, mb{0}), send(F, mb{0}), block(F, mb{1}), send(F, mb{1}),
                recv(B, mb{0}, rx), block(B, mb{0}), recv(B, mb{1}, rx), block(B, mb{1})),
          slots(recv(F, mb{0}, chunk{1}, rx), block(F, mb{0}, chunk{1}), block(B, mb{0}, chunk{1}),
                send(B, mb{0}, chunk{1}), recv(F, mb{1}, chunk{1}, rx), block(F, mb{1}, chunk{1}),
                block(B, mb{1}, chunk{1}), send(B, mb{1}, chunk{1})));
static_assert(proven<diagnose(with_model(s, model_desc{.ranks = 2, .micro = 2}))>);
int main() {}
