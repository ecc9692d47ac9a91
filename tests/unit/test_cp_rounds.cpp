// Adaptive context parallelism, the planner: masks and coarsening, re-mapping, round scheduling
// under a communication cap, and the validator every plan passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/picture.hpp>
#include <weft/cp/remap.hpp>
#include <weft/cp/rounds.hpp>

using namespace weft;
using namespace weft::cp;

namespace {

dense_mask grid_of(const range_mask& m, int cp) {
  return grid(coarsen(m, m.size), identity_order(m.size), cp);
}

round_assignment checked_plan(const dense_mask& g, round_options o = {}) {
  round_assignment pl = assign_rounds(g, o);
  const std::vector<std::string> bad = validate(pl, g);
  for (const std::string& b : bad) CAPTURE(b);
  CHECK(bad.empty());
  CHECK(pl.max_comm_units() <= o.cap);
  return pl;
}

}  // namespace

TEST_CASE("range masks agree with their dense form; coarsening keeps every cell with work") {
  const int s = 64;
  for (const char* spec :
       {"full", "causal", "window:w=5", "bidir-window:w=3", "global-window:g=2,w=4",
        "documents:n=3", "causal-documents:n=5", "interleaved-documents:n=4",
        "shared-question:q=16,n=3", "causal-blockwise:b=8", "prefix-lm:p=20",
        "random:density=0.3,b=8,seed=4"}) {
    CAPTURE(spec);
    const range_mask m = masks::by_name(spec, s);
    REQUIRE(m.size == s);
    const dense_mask d = m.dense();
    for (int q = 0; q < s; ++q)
      for (int k = 0; k < s; ++k) REQUIRE(d(q, k) == m(q, k));
    for (const int c : {8, 16, 32}) {
      const dense_mask a = coarsen(m, c), b = coarsen(d, c);
      CHECK(a == b);
      const int f = s / c;
      for (int x = 0; x < c; ++x)
        for (int y = 0; y < c; ++y) {
          bool any = false;
          for (int q = x * f; q < (x + 1) * f; ++q)
            for (int k = y * f; k < (y + 1) * f; ++k) any = any || d(q, k);
          REQUIRE(a(x, y) == any);
        }
    }
  }
  CHECK(masks::causal(10).dense().count() == 55);
  CHECK(masks::sliding_window(10, 3).dense().count() == 10 + 9 + 8);
}

TEST_CASE("bad masks and sizes are refused by name") {
  CHECK_THROWS_WITH_AS(coarsen(masks::causal(1000), 64),
                       "weft: mask: 1000 tokens are not a multiple of the coarse size 64; pick a "
                       "divisor, or plan without coarsening",
                       config_error);
  CHECK(coarsen(masks::causal(48), 64) == masks::causal(48).dense());  // nothing to coarsen
  CHECK_THROWS_WITH_AS(grid(masks::causal(30).dense(), identity_order(30), 8),
                       "weft: mask: 30 tokens do not split into 8 equal slices", config_error);
  std::vector<int> not_perm = identity_order(16);
  not_perm[3] = 4;
  CHECK_THROWS_WITH_AS(grid(masks::causal(16).dense(), not_perm, 4),
                       "weft: mask: the order is not a permutation of the tokens", config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("zigzag", 64),
                       doctest::Contains("weft: mask: unknown family 'zigzag'"), config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("window:w=0", 64),
                       "weft: mask: window: w needs a whole number in [1, 64], got '0'",
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("window:width=4", 64),
                       "weft: mask: window: unknown key 'width' (w)", config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("random:density=2", 64),
                       "weft: mask: random: density needs a number in [0, 1], got '2'",
                       config_error);
  range_mask bad = masks::causal(16);
  bad.blocks.push_back({0, 20, 0, 4});
  CHECK_THROWS_WITH_AS(coarsen(bad, 8),
                       "weft: mask: block [0, 20) x [0, 4) is outside a 16-token mask",
                       config_error);
}

TEST_CASE("hostile mask parameters are refused before anything is built") {
  // NaN and infinities once reached float-to-int casts (undefined behaviour).
  CHECK_THROWS_WITH_AS(masks::by_name("random:density=nan", 64),
                       "weft: mask: random: density needs a number in [0, 1], got 'nan'",
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("window:w=1e300", 64),
                       "weft: mask: window: w needs a whole number in [1, 64], got '1e300'",
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("window:w=99999999999999999999", 64),
                       doctest::Contains("w needs a whole number"), config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("window:w=4,w=8", 64), "weft: mask: window: w is given twice",
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("causal:w=4", 64),
                       "weft: mask: causal: unknown key 'w' (it takes none)", config_error);
  // Sizes: a sequence past 2^24 tokens, block counts past 2^20 (once a hang and bad_alloc).
  CHECK_THROWS_WITH_AS(masks::by_name("causal", max_tokens + 1),
                       doctest::Contains("the sequence length must be in [1, 16777216]"),
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("random:b=1", 1 << 20),
                       "weft: mask: random: these parameters make 1099511627776 blocks, over the "
                       "limit of 1048576",
                       config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("interleaved-documents:n=1", 1 << 20),
                       doctest::Contains("over the limit"), config_error);
  CHECK_THROWS_WITH_AS(masks::by_name("causal-blockwise:b=1", 1 << 24),
                       doctest::Contains("over the limit"), config_error);
  // The largest allowed sequence still builds a range mask in no time: no S x S storage.
  CHECK(masks::by_name("causal", max_tokens).blocks.size() == 1);
  // A dense form past 2^26 entries is refused with a pointer to coarsening.
  CHECK_THROWS_WITH_AS(dense_mask(200000), doctest::Contains("plan on a coarse grid"),
                       config_error);
  CHECK_THROWS_WITH_AS(adapt_layout(masks::causal(200000), 8, {.coarse = 0}),
                       doctest::Contains("over the limit of 67108864 entries"), config_error);
}

TEST_CASE("MindSpeed's reference grids: rounds at the lower bound where the cap allows") {
  struct ref {
    const char* name;
    dense_mask grid;
    int cp, mindspeed, best;
  };
  const std::vector<ref> refs = {
      {"causal cp=4", grid_of(masks::causal(4), 4), 4, 3, 3},
      {"causal cp=8", grid_of(masks::causal(8), 8), 8, 6, 5},
      {"band cp=8", grid_of(masks::bidirectional_window(8, 2), 8), 8, 3, 3},
      {"full cp=8", grid_of(masks::full(8), 8), 8, 8, 8},
      {"random 40% cp=8", grid_of(masks::random_blocks(8, 1, 0.4, 3), 8), 8, 5, 0},
  };
  for (const ref& r : refs) {
    CAPTURE(r.name);
    const round_assignment pl = checked_plan(r.grid);
    CHECK(pl.rounds <= r.mindspeed);
    if (r.best > 0) CHECK(pl.rounds == r.best);
    CHECK(pl.rounds >= pl.lower_bound);
  }
}

TEST_CASE("the cap is kept: a tighter cap costs rounds, never an over-full round") {
  const dense_mask g = grid_of(masks::causal(8), 8);
  int prev = 0;
  for (const int cap : {6, 4, 3, 2, 1}) {
    CAPTURE(cap);
    const round_assignment pl = checked_plan(g, {.cap = cap});
    CHECK(pl.rounds >= prev);
    prev = pl.rounds;
  }
  CHECK_THROWS_WITH_AS(
      assign_rounds(g, {.cap = 0}),
      "weft: cp rounds: a cap of 0 units per rank and round leaves no way to move a "
      "block; work crosses ranks, so the cap must be >= 1",
      config_error);
  // Work that stays on its rank needs no traffic at all.
  const round_assignment local =
      checked_plan(grid_of(masks::documents(masks::equal_lengths(8, 8), false), 8), {.cap = 0});
  CHECK(local.rounds == 1);
  CHECK(local.max_comm_units() == 0);
}

TEST_CASE("the validator catches every kind of broken plan") {
  const dense_mask g = grid_of(masks::causal(4), 4);
  const round_assignment good = checked_plan(g);
  const auto first = [&](const round_assignment& p) {
    const auto bad = validate(p, g);
    return bad.empty() ? std::string() : bad.front();
  };
  {  // a task twice
    round_assignment p = good;
    p.run.push_back(p.run.back());
    p.moves.push_back(p.moves.back());
    ++p.rounds;
    CHECK(first(p).find("runs 2 times") != std::string::npos);
  }
  {  // a task dropped
    round_assignment p = good;
    for (auto& round : p.run)
      for (int& x : round)
        if (x >= 0 && p.tasks[static_cast<std::size_t>(x)] == cp_task{3, 0}) x = -1;
    CHECK(first(p).find("task (3, 0) runs 0 times") != std::string::npos);
  }
  {  // an operand missing: drop every KV receive
    round_assignment p = good;
    for (auto& round : p.moves)
      for (transfers& t : round) t.recv_kv_src.clear();
    bool kv_pulled = false;
    for (const auto& round : good.moves)
      for (const transfers& t : round) kv_pulled = kv_pulled || !t.recv_kv_src.empty();
    if (kv_pulled) CHECK(first(p).find("its task needs KV from rank") != std::string::npos);
  }
  {  // over the cap
    round_assignment p = good;
    p.cap = 0;
    CHECK(first(p).find("exceed the cap of 0") != std::string::npos);
  }
  {  // a receive nobody sends
    round_assignment p = good;
    p.moves[0][0].recv_o_src.push_back(2);
    CHECK(first(p) ==
          "weft: cp rounds: round 0, rank 0: receives an output nobody computed for it, "
          "from rank 2");
  }
}

TEST_CASE("the validator checks any plan: shape, ranges, sends against receives both ways") {
  const dense_mask g = grid_of(masks::causal(8), 4);
  const round_assignment good = checked_plan(g, {.cap = 2});
  REQUIRE(good.rounds >= 2);
  const auto first = [&](const round_assignment& p) {
    const auto bad = validate(p, g);
    return bad.empty() ? std::string() : bad.front();
  };
  {  // rows shorter than cp: once read past the end of the row
    round_assignment p = good;
    p.run[1].pop_back();
    CHECK(first(p) == "weft: cp rounds: round 1 does not have a row of 4 ranks");
    round_assignment q = good;
    q.moves[2].resize(2);
    CHECK(first(q) == "weft: cp rounds: round 2 does not have a row of 4 ranks");
  }
  {  // a task outside the grid: once wrote past the end of the count table
    round_assignment p = good;
    p.tasks[0] = {7, 0};
    CHECK(first(p) == "weft: cp rounds: task 0 (7, 0) is outside the 4 x 4 grid");
    round_assignment q = good;
    q.run[0][0] = 99;
    CHECK(first(q) == "weft: cp rounds: round 0, rank 0: no task 99");
    round_assignment n = good;
    n.moves[0][1].send_q_dst.push_back(-3);
    CHECK(first(n) ==
          "weft: cp rounds: round 0, rank 1: a transfer with rank -3, outside the plan's "
          "ranks");
  }
  // Find a round where some rank receives Q, to corrupt.
  int r0 = -1, p0 = -1;
  for (int r = 0; r < good.rounds && r0 < 0; ++r)
    for (int p = 0; p < 4 && r0 < 0; ++p)
      if (!good.moves[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)]
               .recv_q_src.empty()) {
        r0 = r;
        p0 = p;
      }
  REQUIRE(r0 >= 0);
  const auto r = static_cast<std::size_t>(r0), p = static_cast<std::size_t>(p0);
  const int src = good.moves[r][p].recv_q_src[0];
  {  // a send nobody receives: the sender once blocked forever in wait()
    round_assignment bad = good;
    bad.moves[r][static_cast<std::size_t>(src)].send_q_dst.push_back(p0 == 0 ? 1 : 0);
    CHECK(first(bad).find("sends Q no task uses, to rank") != std::string::npos);
  }
  {  // two receives into one buffer
    round_assignment bad = good;
    bad.moves[r][p].recv_q_src.push_back(src);
    bad.moves[r][static_cast<std::size_t>(src)].send_q_dst.push_back(p0);
    CHECK(first(bad) == "weft: cp rounds: round " + std::to_string(r0) + ", rank " +
                            std::to_string(p0) +
                            ": Q is received more than once; a rank has one buffer per operand "
                            "and round");
  }
  {  // a receive whose send was dropped
    round_assignment bad = good;
    bad.moves[r][static_cast<std::size_t>(src)].send_q_dst.clear();
    CHECK(first(bad).find("does not send its Q to rank " + std::to_string(p0)) !=
          std::string::npos);
  }
  {  // a transfer in the last round, where no task runs
    round_assignment bad = good;
    bad.moves.back()[0].send_kv_dst.push_back(1);
    bad.moves.back()[1].recv_kv_src.push_back(0);
    CHECK(first(bad) == "weft: cp rounds: round " + std::to_string(bad.rounds) +
                            ", rank 0: sends KV no task uses, to rank 1");
  }
  {  // a task on a rank that holds neither operand
    round_assignment bad = good;
    for (std::size_t x = 0; x < bad.tasks.size(); ++x)
      if (bad.tasks[x] == cp_task{3, 2}) {
        for (auto& row : bad.run)
          for (int& y : row)
            if (y == static_cast<int>(x)) y = -1;
        bad.run[0][0] = static_cast<int>(x);
      }
    CHECK(first(bad) ==
          "weft: cp rounds: task (3, 2) in round 0, rank 0: a rank that holds neither "
          "operand");
  }
}

TEST_CASE("re-mapping groups interleaved documents; the original order stays when it is best") {
  // Token t belongs to document t mod 8: every slice holds every document, all 64 cells work.
  const dense_mask m = masks::interleaved_documents(256, 8).dense();
  const remap_result r = remap(m, 8);
  CHECK(r.before.tasks == 64);
  CHECK(r.after.tasks == 8);
  CHECK(r.clusters > 0);
  const dense_mask g = grid(m, r.order, 8);
  CHECK(score(g).tasks == 8);
  CHECK(checked_plan(g).rounds == 1);
  // Deterministic.
  CHECK(remap(m, 8).order == r.order);
  // Causal cannot improve on its own order.
  const remap_result c = remap(masks::causal(256).dense(), 8);
  CHECK(c.clusters == 0);
  CHECK(c.order == identity_order(256));
  CHECK(c.after.tasks == c.before.tasks);
  std::ostringstream svg;
  write_remap_svg(svg, m, r.order, 8, "interleaved");
  CHECK(svg.str().find("original order: 64 of 64 blocks have work") != std::string::npos);
  CHECK(svg.str().find("re-mapped: 8 of 64 blocks have work") != std::string::npos);
  CHECK_THROWS_WITH_AS(remap(m, 6), "weft: remap: 256 tokens do not split into 6 equal slices",
                       config_error);
}

TEST_CASE("mask files: every block type, and errors that name the line") {
  std::istringstream good(
      "# a comment\n\nsize 32\nblock 0 32 0 32 causal\nblock 0 8 0 8\n"
      "block 8 16 0 16 window 4  # trailing comment\nblock 16 32 16 32 offsets -2 2\n");
  const range_mask m = read_mask_file(good);
  CHECK(m.size == 32);
  REQUIRE(m.blocks.size() == 4);
  CHECK(m(5, 7));          // full block
  CHECK_FALSE(m(12, 15));  // causal and window both say no
  CHECK(m(12, 9));         // window 4: 0 <= 12 - 9 < 4
  CHECK(m(17, 19));        // offsets -2..2 allow 17 - 19 = -2
  const auto error = [](const char* text) {
    std::istringstream in(text);
    try {
      read_mask_file(in);
    } catch (const mask_file_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("block 0 1 0 1\n") == "line 1: 'block' before 'size'");
  CHECK(error("size 8\nsize 8\n") == "line 2: a second 'size'");
  CHECK(error("size x\n") == "line 1: expected the sequence length");
  CHECK(error("size 8\nblock 0 8 0\n") == "line 2: expected k_end");
  CHECK(error("size 8\nblock 0 8 0 8 window 0\n") == "line 2: a window must be >= 1 wide");
  CHECK(error("size 8\nblock 0 8 0 8 full extra\n") == "line 2: unexpected 'extra'");
  CHECK(error("# nothing\n") == "line 1: no 'size' line");
  CHECK(error("mask 8\n") == "line 1: unknown keyword 'mask' (size, block)");
}

TEST_CASE("planning end to end: coarse cells expand to a token order") {
  const range_mask m = masks::interleaved_documents(512, 4);
  const adaptive_layout pl = adapt_layout(m, 4, {.coarse = 128});
  CHECK(pl.tokens_per_cell == 4);
  CHECK(pl.coarse.size() == 128);
  const std::vector<int> order = pl.token_order();
  REQUIRE(order.size() == 512);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == identity_order(512));
  CHECK(validate(pl.assignment, pl.grid).empty());
  CHECK(pl.assignment.rounds >= pl.assignment.lower_bound);
  CHECK_THROWS_WITH_AS(
      adapt_layout(masks::causal(100), 8, {.coarse = 0}),
      "weft: cp rounds: 100 coarse cells do not split into 8 equal slices; pick a cp "
      "that divides them",
      config_error);
}
