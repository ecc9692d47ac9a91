// libFuzzer harness: contention only slows. The input picks a generator from the registry and a
// small shape (2-4 ranks, 1-8 micro-batches, blocks or MoE sub-stages, transfers, fb-overlap),
// costs per pass and transfer, and contention facts (links shared or not, compute and
// communication slowed while the other runs, the link classes). Every generated schedule is
// legal, so both simulations run to the end; under contention no op starts or finishes earlier
// than without it (every duration only grows, and one semantics orders both); with nothing
// shared and no interference the contended simulator agrees with the plain one to the bit.
#include <cstddef>
#include <cstdint>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/sim/contended.hpp>
#include <weft/sim/simulate.hpp>

#include "fuzz_input.hpp"

namespace {
/// A cost in quarters of a unit: 0 to 63.75.
weft::units quarters(weft::fuzz::choices& c) { return weft::units(c.byte() % 256 / 4.0); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft;
  fuzz::choices c{data, size};
  constexpr std::size_t count = sizeof generators / sizeof generators[0];
  const generator_info& g = generators[c.byte() % count];
  generator_args a;
  a.ranks = 2 + c.byte() % 3;
  a.micro = 1 + c.byte() % 8;
  a.chunks = 1 + c.byte() % 3;
  const bool moe = c.flag();
  a.stages =
      moe ? (c.flag() ? stage_set::moe_with_shared() : stage_set::moe()) : stage_set::whole_block();
  a.layers = moe ? 1 + c.byte() % 2 : 1;
  a.transfers = c.flag();
  if (moe && c.flag()) a.overlap = overlap_options::all();
  schedule s;
  try {
    s = g.make(a);
  } catch (const config_error&) {
    return 0;  // a shape this generator refuses (micro-batches, chunks), by name
  }
  const program p = lower(s);

  pipeline_costs<units> k;
  k.F = units(0.25) + quarters(c);
  k.B = units(0.25) + quarters(c);
  k.W = k.B * ((c.byte() % 5) / 4.0);  // within B
  k.P2P = quarters(c);
  k.A2A = quarters(c);
  k.layers = a.layers;
  unit_cost_model plain = unit_cost_model::pipeline(k);
  if (c.flag()) plain.fb_pair = (k.F > k.B ? k.F : k.B) + quarters(c);  // no shorter than a half

  const unit_timeline free = simulate(p, plain);
  if (free.deadlocked()) __builtin_trap();  // generated, so legal, so it runs to the end

  unit_cost_model shared = plain;
  const std::uint8_t bits = c.byte();
  contention_facts& f = shared.contention;
  f.shared_links = (bits & 1) != 0;
  f.compute_slowdown = (bits & 2) != 0 ? c.byte() / 64.0 : 0;
  f.comm_slowdown = (bits & 4) != 0 ? c.byte() / 64.0 : 0;
  f.a2a = (bits & 8) != 0 ? link_class::intra_node : link_class::inter_node;
  f.p2p = (bits & 16) != 0 ? link_class::intra_node : link_class::inter_node;
  const unit_timeline slow = simulate_contended(p, shared);
  if (slow.deadlocked()) __builtin_trap();
  // Rates change in steps, so a finish is summed from pieces: an ulp's slack per op.
  const double slack = 1e-9 * (free.makespan.count() + 1);
  const bool exact = !f.active();
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (!slow.ran(i) || !free.ran(i)) __builtin_trap();
    if (slow.start[i].count() < free.start[i].count() - slack ||
        slow.finish[i].count() < free.finish[i].count() - slack)
      __builtin_trap();  // contention made an op earlier
    if (exact && (slow.start[i] != free.start[i] || slow.finish[i] != free.finish[i]))
      __builtin_trap();  // nothing shared, yet not the plain timeline
  }
  if (slow.makespan.count() < free.makespan.count() - slack) __builtin_trap();
  return 0;
}
