#include <doctest/doctest.h>

#include <sstream>

#include <weft/io/format.hpp>
#include <weft/schedule/dsl.hpp>

using namespace weft;

TEST_CASE("ops read like the MindSpeed notes' figures") {
  CHECK(to_string(op(attn(F, mb{1}))) == "attn/F mb=1");
  CHECK(to_string(op(mlp(dW, mb{3}, chunk{2}, layer{1}, split{1}, lane{2}))) ==
        "mlp/dW mb=3 chunk=2 layer=1 split=1 lane=2");
}

TEST_CASE("every fault has a sentence") {
  const auto text = [](fault f) {
    violation v{.code = rule::complete, .what = f, .rank = 0, .slot = 1, .subject = attn(F, mb{0})};
    return to_string(v);
  };
  for (int f = 1; f <= static_cast<int>(fault::bad_model); ++f) {
    const std::string s = text(static_cast<fault>(f));
    CAPTURE(f);
    CHECK(s.rfind("weft: rule ", 0) == 0);
    CHECK(s.size() > 30);
  }
  CHECK(to_string(violation{}) == "weft: legal");
}

TEST_CASE("print_slots shows each rank's slots") {
  std::ostringstream os;
  print_slots(os, slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0})));
  CHECK(os.str() == "rank 0:\n  0: attn/F mb=1 | combine/B mb=0\n  1: mlp/B mb=0\n");
}

TEST_CASE("a report prints every violation and the blocked ops") {
  std::ostringstream os;
  os << check(slots(block(F, mb{0}), block(F, mb{0})), {});
  CHECK(os.str().find("appears again; first at block/F mb=0 (rank 0, slot 0)") !=
        std::string::npos);
}
