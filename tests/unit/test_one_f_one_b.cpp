#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/verify.hpp>

using namespace weft;

TEST_CASE("1F1B is legal and holds each op once, up to 64 ranks x 256 micro-batches") {
  for (int P : {1, 2, 3, 4, 8, 16, 64})
    for (int M : {1, 2, P, 4 * P, 256}) {
      const schedule s = one_f_one_b({.ranks = P, .micro = M});
      CAPTURE(P);
      CAPTURE(M);
      CHECK(s.ops.size() == static_cast<std::size_t>(2 * P * M));
      CHECK(verify(s));
    }
}

TEST_CASE("1F1B keeps at most ranks - rank micro-batches live") {
  for (int P : {2, 4, 8})
    for (int M : {1, P - 1, P, 3 * P}) {
      const auto peak = peak_live_activations(one_f_one_b({.ranks = P, .micro = M}));
      for (int r = 0; r < P; ++r) CHECK(peak[static_cast<std::size_t>(r)] == std::min(P - r, M));
    }
}

TEST_CASE("1F1B: warm-up forwards, then one forward one backward, then cool-down") {
  const schedule s = one_f_one_b({.ranks = 4, .micro = 6});
  // Rank 1 warms up with 2 forwards.
  std::vector<std::pair<phase, int>> seen;
  for (const op& o : s.rank_ops(1)) seen.emplace_back(o.ph, o.mb);
  const std::vector<std::pair<phase, int>> expect = {
      {phase::F, 0}, {phase::F, 1}, {phase::F, 2}, {phase::B, 0}, {phase::F, 3}, {phase::B, 1},
      {phase::F, 4}, {phase::B, 2}, {phase::F, 5}, {phase::B, 3}, {phase::B, 4}, {phase::B, 5}};
  CHECK(seen == expect);
}

TEST_CASE("1F1B with MoE sub-stages and explicit transfers") {
  const schedule s = one_f_one_b(
      {.ranks = 4, .micro = 8, .layers = 2, .stages = stage_set::moe(), .transfers = true});
  CHECK(check(s).ok());
  std::size_t sends = 0, recvs = 0;
  for (const op& o : s.ops) {
    sends += o.k == kind::send;
    recvs += o.k == kind::recv;
    if (o.k == kind::send) CHECK(o.lane == send_lane);
    if (o.k == kind::recv)
      CHECK((o.lane == recv_from_lower_lane || o.lane == recv_from_higher_lane));
  }
  CHECK(sends == 2u * 3u * 8u);  // 3 boundaries, activations and gradients, 8 micro-batches
  CHECK(recvs == sends);
  CHECK(s.ops.size() == 4u * 8u * 2u * 4u * 2u + sends + recvs);
}

TEST_CASE("1F1B rejects impossible parameters") {
  CHECK_THROWS_AS(one_f_one_b({.ranks = 0, .micro = 4}), config_error);
  CHECK_THROWS_AS(one_f_one_b({.ranks = 2, .micro = 0}), config_error);
  CHECK_THROWS_AS(one_f_one_b({.ranks = 2, .micro = 2, .layers = 0}), config_error);
  CHECK_THROWS_WITH(
      one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set{}.with(kind::dispatch)}),
      "weft: 1f1b: sub-stage layers start with attn");
}
