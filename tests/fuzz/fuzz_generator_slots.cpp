// libFuzzer harness: the newer generators — V-Half, V-Min, PyTorch's interleaved zero bubble and
// looped BFS, MindSpeed's NanoPipe — and their schedules under slot mutations. The input picks a
// generator and a small shape; what it builds must be legal (rule 5's bound tight at its own
// peak). Then up to three mutations (two ops of a rank swapped, an op moved to another place in
// its rank's order, two ops of different ranks swapped) and the checker again: a schedule it
// calls legal lowers and simulates to the end, with its peak as tight a bound; one whose only
// fault is a deadlock (rule 4) stops in the simulator too. The checker's deadlock rule and the
// simulator read one semantics; here they must agree on schedules no generator makes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/memory.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/simulate.hpp>

#include "fuzz_input.hpp"

namespace {

using namespace weft;

/// Legal `s` is bound by its own peak of live activations and by nothing less.
void check_tight_bound(const schedule& s) {
  const buffer<int> live = peak_live_activations(s);
  const int peak = *std::max_element(live.begin(), live.end());
  schedule bounded = s;
  bounded.model.max_live = peak;
  if (!check(bounded, {.max_violations = 1}).ok()) __builtin_trap();
  if (peak < 2) return;
  bounded.model.max_live = peak - 1;
  const report over = check(bounded, {.max_violations = 1});
  if (over.ok() || over.violations.front().code != rule::memory) __builtin_trap();
}

void mutate(fuzz::choices& c, schedule& s) {
  const int ranks = s.model.ranks;
  const auto rank_ops = [&](int r) {
    const std::uint32_t a = s.first_op(s.first_slot(r)), b = s.first_op(s.end_slot(r));
    return std::pair{a, b};
  };
  const auto pick = [&](std::pair<std::uint32_t, std::uint32_t> range) {
    const std::uint32_t n = range.second - range.first;
    return range.first + (c.byte() * 256u + c.byte()) % n;
  };
  const int r = c.byte() % ranks;
  const auto ops = rank_ops(r);
  if (ops.second - ops.first < 2) return;
  switch (c.byte() % 3) {
    case 0:
      std::swap(s.ops[pick(ops)], s.ops[pick(ops)]);
      break;
    case 1: {  // one op moved, the ops between shifting by one (slot sizes kept)
      const std::uint32_t from = pick(ops), to = pick(ops);
      op* base = s.ops.data();
      if (from < to)
        std::rotate(base + from, base + from + 1, base + to + 1);
      else
        std::rotate(base + to, base + from, base + from + 1);
      break;
    }
    default: {
      const auto other = rank_ops((r + 1 + c.byte() % ranks) % ranks);
      if (other.second > other.first) std::swap(s.ops[pick(ops)], s.ops[pick(other)]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::choices c{data, size};
  constexpr const char* names[] = {"v-half", "v-min", "interleaved-zb", "looped-bfs",
                                   "interleaved"};
  const char* name = names[c.byte() % 5];
  generator_args a;
  a.ranks = 1 + c.byte() % 6;
  a.micro = 1 + c.byte() % 12;
  a.chunks = 1 + c.byte() % 3;
  a.nanopipe = std::string_view(name) == "interleaved" && c.flag();
  if (c.flag()) {
    a.stages = stage_set::moe();
    a.layers = 1 + c.byte() % 2;
  }
  a.transfers = c.flag();
  schedule s;
  try {
    s = generate(name, a);
  } catch (const config_error&) {
    return 0;  // refused by name (PyTorch's own rules for its schedules, the V's two chunks)
  }
  if (!check(s, {.max_violations = 1}).ok()) __builtin_trap();  // generated, so legal
  check_tight_bound(s);

  const unit_cost_model cost = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1, .P2P = 0.25});
  for (int n = 1 + c.byte() % 3; n > 0; --n) mutate(c, s);
  const report r = check(s);
  const bool legal = r.ok();
  const bool only_deadlock =
      !legal && std::all_of(r.violations.begin(), r.violations.end(),
                            [](const violation& v) { return v.code == rule::deadlock; });
  if (!legal && !only_deadlock) return 0;
  program p;
  try {
    p = lower(s);
  } catch (const config_error&) {
    if (legal) __builtin_trap();  // a legal schedule always lowers
    return 0;                     // transfers that never pair: no program to run
  }
  const unit_timeline t = simulate(p, cost);
  if (t.deadlocked() != only_deadlock) __builtin_trap();  // the checker and the simulator differ
  if (legal) check_tight_bound(s);
  return 0;
}
