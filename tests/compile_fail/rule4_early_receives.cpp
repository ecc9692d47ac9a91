// Rule 4, the deadlock pp-cross-dc-comm-overlap's second process group avoids: receives posted a
// step early (`receive_posting::early`) on one process group, whose point-to-point operations
// share one stream (torch_npu's HCCL group; NCCL's when both face the same peer). Rank 0 posts
// B0's receive before it sends F1; rank 1 posts F1's receive before it sends B0's gradient; each
// waits on its one stream for the other. The ok variant is MindSpeed's: the same early receives
// with sends and receives in two groups by rank parity (ping/pong), as `overlap_p2p` lowers them
// with or without `multi_stream`.
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/transfers.hpp>
using namespace weft;

constexpr schedule early_receives() {
#ifdef WEFT_KO
  return with_transfers(one_f_one_b({.ranks = 2, .micro = 2}),
                        {.lanes = p2p_lanes::single, .receives = receive_posting::early});
#else
  return one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.overlap_p2p = true}});
#endif
}
static_assert(proven<diagnose(early_receives())>);
int main() {}
