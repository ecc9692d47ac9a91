// libFuzzer harness: the newer generators — V-Half, V-Min, PyTorch's interleaved zero bubble and
// looped BFS, MindSpeed's NanoPipe — and their schedules under slot mutations. The input picks a
// generator and a small shape; what it builds must be legal (rule 5's bound tight at its own
// peak). Then up to three mutations of one rank's order (two ops swapped, an op moved, an op
// and the next swapped) and the checker again: a schedule it calls legal lowers and simulates
// to the end, with its peak as tight a bound; one whose only fault is a deadlock (rule 4) stops
// in the simulator too wherever it can be lowered at all, and one whose fault is only the
// lowering's in-order issue of slots (PyTorch's placement of the transfers) cannot be lowered.
// The checker's deadlock rule, the lowering and the simulator must agree on schedules no
// generator makes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
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
  const int r = c.byte() % ranks;
  const std::uint32_t a = s.first_op(s.first_slot(r)), b = s.first_op(s.end_slot(r));
  if (b - a < 2) return;
  // One choice at a time: the order in which the input is read is the code's, not the compiler's.
  const auto pick = [&] {
    const std::uint32_t hi = c.byte();
    const std::uint32_t lo = c.byte();
    return a + (hi * 256u + lo) % (b - a);
  };
  const std::uint8_t how = c.byte() % 3;
  const std::uint32_t from = pick();
  if (how == 2) {  // an op and the next one of the rank swapped: the smallest reordering
    if (from + 1 < b) std::swap(s.ops[from], s.ops[from + 1]);
    return;
  }
  const std::uint32_t to = pick();
  if (how == 0) {
    std::swap(s.ops[from], s.ops[to]);
    return;
  }
  op* base = s.ops.data();  // one op moved, the ops between shifting by one (slot sizes kept)
  if (from < to)
    std::rotate(base + from, base + from + 1, base + to + 1);
  else
    std::rotate(base + to, base + from, base + from + 1);
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
  if (legal) {
    const unit_timeline t = simulate(lower(s), cost);  // a legal schedule lowers and runs
    if (t.deadlocked()) __builtin_trap();
    check_tight_bound(s);
    return 0;
  }
  // Deadlocked. Where only the lowering's in-order issue of slots stops (rule 4's placement
  // fault), no program can be built; where the streams themselves wait forever, a program that
  // can be built (explicit transfers, or a placement that does not stop first) stops in the
  // simulator too.
  const bool placement = r.violations.front().value == 1;
  program p;
  try {
    p = lower_unchecked(s);
  } catch (const config_error&) {
    return 0;
  }
  if (placement) __builtin_trap();  // the checker said the placement stops, yet it lowered
  if (!simulate(p, cost).deadlocked()) __builtin_trap();  // the checker and the simulator differ
  return 0;
}
