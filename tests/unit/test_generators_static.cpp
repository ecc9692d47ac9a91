// Every generator proven legal at compile time over a grid: ranks 2-8, micro-batches up to
// 4 x ranks, 1-4 chunks per rank where the schedule has them. One static_assert per rank count and
// family keeps each constant evaluation within the compilers' limits.
#include <doctest/doctest.h>

#include <weft/generators/controllable_memory.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/verify.hpp>

using namespace weft;

namespace {

constexpr bool single_chunk_legal(int P) {
  for (int M = 1; M <= 4 * P; M += (M < P ? 1 : P)) {
    const pipeline_params p{.ranks = P, .micro = M};
    if (!verify(gpipe(p)) || !verify(one_f_one_b(p)) || !verify(zb_h1(p))) return false;
  }
  return true;
}

constexpr bool interleaved_legal(int P, int V) {
  for (int M = P; M <= 4 * P; M *= 2)
    for (bool extra : {false, true})
      if (!verify(interleaved({.ranks = P, .micro = M, .chunks = V, .extra_warmup = extra})))
        return false;
  return true;
}

constexpr bool dual_legal(int P) {
  for (int M = 2 * P; M <= 4 * P; M += P) {
    if (!verify(dualpipev({.ranks = P, .micro = M})) || !verify(zb_v({.ranks = P, .micro = M})))
      return false;
    if (P % 2 == 0 && M % 2 == 0 && !verify(dualpipe({.ranks = P, .micro = M}))) return false;
  }
  return true;
}

// One constant evaluation per (family, rank count), and per chunk count for the biggest.
template <int P>
struct proven_grid {
  static_assert(single_chunk_legal(P), "gpipe, 1f1b or zb-h1 is illegal for these ranks");
  static_assert(interleaved_legal(P, 1) && interleaved_legal(P, 2),
                "interleaved is illegal for these ranks and 1 or 2 chunks");
  static_assert(interleaved_legal(P, 3), "interleaved is illegal for these ranks and 3 chunks");
  static_assert(interleaved_legal(P, 4), "interleaved is illegal for these ranks and 4 chunks");
  static_assert(dual_legal(P), "dualpipe, dualpipev or zb-v is illegal for these ranks");
};
template struct proven_grid<2>;
template struct proven_grid<3>;
template struct proven_grid<4>;
template struct proven_grid<5>;
template struct proven_grid<6>;
template struct proven_grid<7>;
template struct proven_grid<8>;

// The controllable-memory V schedules, and NanoPipe on the interleaved schedule.
static_assert(verify(v_half({.ranks = 4, .micro = 8})) && verify(v_min({.ranks = 4, .micro = 8})));
static_assert(verify(v_half({.ranks = 3, .micro = 9})) && verify(v_min({.ranks = 3, .micro = 9})));
static_assert(verify(interleaved({.ranks = 4, .micro = 8, .chunks = 2, .nanopipe = true})));

// Sub-stages too.
static_assert(verify(dualpipev({.ranks = 4, .micro = 10, .stages = stage_set::moe()})));

// AMPipe: the split order of MindSpeed's ampipe note, with pipe-experts pieces on two all-to-all
// streams, and with DeepSeek's fb-overlap pairs per split, proven by the compiler (docs/ampipe.md).
static_assert(verify(one_f_one_b(
    {.ranks = 2,
     .micro = 4,
     .layers = 2,
     .stages = stage_set::moe_with_shared(),
     .overlap = {.self_overlap = true, .pipeline_splits = true, .multi_stream_all_to_all = true},
     .splits = 2,
     .pieces = 2})));
static_assert(verify(dualpipev({.ranks = 2,
                                .micro = 4,
                                .stages = stage_set::moe_with_shared(),
                                .overlap = overlap_options::all(),
                                .splits = 3})));

}  // namespace

TEST_CASE("the grid that holds at compile time holds at run time") {
  for (int P = 2; P <= 8; ++P) {
    CAPTURE(P);
    CHECK(single_chunk_legal(P));
    for (int V = 1; V <= 4; ++V) CHECK(interleaved_legal(P, V));
    CHECK(dual_legal(P));
  }
}
