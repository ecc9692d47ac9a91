// Rule 4, the deadlock pp-cross-dc-comm-overlap's second stream avoids: receives posted a step
// early (`overlap_p2p`) on one blocking p2p stream. Rank 0 posts B0's receive before it sends
// F1; rank 1 posts F1's receive before it sends B0's gradient; each waits on its one stream for
// the other. The ok variant puts the same early receives on ping/pong streams (`multi_stream`).
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/diagnose.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr bool two_streams = false;
#else
constexpr bool two_streams = true;
#endif
static_assert(
    proven<diagnose(one_f_one_b(
        {.ranks = 2, .micro = 2, .p2p = {.overlap_p2p = true, .multi_stream = two_streams}}))>);
int main() {}
