// Lowering a schedule to the stream program (schedule/program.hpp) that the simulators and the
// executor interpret: the schedule is checked, and a schedule whose micro-batches cross ranks
// without explicit transfers gets them first, placed as PyTorch's pipelining runtime places them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/core/error.hpp>
#include <weft/core/uses.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/program_builder.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>

namespace weft {

/// How `lower` begins the message of an illegal schedule, before the checker's first violation.
inline constexpr std::string_view illegal_preamble = "weft: lower: the schedule is not legal: ";

namespace detail {
/// The stream program of a schedule, checked or not. Unchecked, only what lowering itself needs
/// is required (ops inside the model, once each, transfers that pair up): an illegal schedule
/// lowers and then hangs where the checker said it would — for tests of the runtime's timeout.
constexpr program lower(const schedule& input, bool checked) {
  bool p2p = false, collectives = false;
  for (const op& o : input.ops) {
    p2p = p2p || is_p2p(o.k);
    collectives = collectives || is_collective(o.k);
  }
  if (const model_error e =
          input.well_formed() ? validate(input.model) : model_error::slots_malformed;
      e != model_error::none)
    throw config_error("weft: lower: " + std::string(describe(e)));
  if (checked) {
    const report r = check(input);
    if (!r.ok())
      throw illegal_schedule(std::string(illegal_preamble) +
                             std::string(without_prefix(to_string(r.violations[0]))));
  }
  const bool crosses = !p2p && adds_transfers(input);
  // Two returns, not `?:`: g++ 12 frees the result's storage of a conditional between a call
  // and a copy in constant evaluation ("use of allocated storage after deallocation").
  const schedule s = [&] {
    if (crosses) return with_transfers(input);
    return schedule(input);
  }();
  placed p(s, collectives, p2p || crosses);
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const op& o = s.ops[i];
    if (p.ix.why_outside(o) != outside::none || o.lane >= lanes_per_class || p.has(o))
      throw illegal_schedule("weft: lower: " + to_string(o) + " is outside the model or repeated");
    p.id[i] = p.ix.raw_id(o);
    p.pos.set(p.id[i], i);
  }
  paged<std::uint32_t> partner(s.ops.size(), npos);
  if (const transfer_fault f = match_transfers(p, partner); f.what != fault::none)
    throw illegal_schedule("weft: lower: " + to_string(s.ops[f.subject]) +
                           (f.what == fault::mismatched_transfer
                                ? " is paired in FIFO order with " + to_string(s.ops[f.other]) +
                                      ", which carries other data"
                                : " has no transfer to pair with in FIFO order on its channel"));
  return build_program(p, static_cast<paged<std::uint32_t>&&>(partner));
}
}  // namespace detail

/// The (kind, phase) pairs a schedule's stream program uses: the schedule's own and those of
/// the transfers lowering adds between ranks — what a model must have kernels for to run it
/// (`exec::runnable`), where `uses(s)` sees the compute schedule only.
constexpr kind_phase_set uses_lowered(const schedule& s) {
  return detail::adds_transfers(s) ? uses(with_transfers(s)) : uses(s);
}

namespace detail {
/// `lower` at run time: this file's function in header-only builds; with
/// WEFT_SEPARATE_COMPILATION compiled once into `weft::compiled`, so that a file which lowers at
/// run time does not compile the checker and the program builder again (most of a simulating
/// file's build time; docs/benchmarks.md).
WEFT_DECL program lower_at_run_time(const schedule& input, bool checked);
}  // namespace detail

/// Lowers a legal schedule. Throws `illegal_schedule` (a `config_error`) with the checker's first
/// violation when the schedule is not legal: an illegal schedule has no program.
constexpr program lower(const schedule& input) {
  if (std::is_constant_evaluated()) return detail::lower(input, true);
  return detail::lower_at_run_time(input, true);
}

/// Lowers a fragment: a schedule that takes `assumed` for granted — a backward pass run as a
/// program of its own after its forward's, say. The checker proves it as a fragment (ops it
/// does not contain are not required; a producer it needs must be assumed); the program then
/// waits only for the ops it has. Throws `illegal_schedule` with the first violation.
inline program lower(const schedule& input, const assumptions& assumed) {
  const report r = check(input, {.fragment = true, .assumed = assumed});
  if (!r.ok())
    throw illegal_schedule("weft: lower: the fragment is not legal: " + to_string(r.violations[0]));
  return detail::lower_at_run_time(input, false);
}

/// Lowers without the legality check — for testing what the runtime does with a schedule the
/// checker rejects. Throws `config_error` only when no program can be built at all.
constexpr program lower_unchecked(const schedule& input) {
  if (std::is_constant_evaluated()) return detail::lower(input, false);
  return detail::lower_at_run_time(input, false);
}

}  // namespace weft

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/schedule/impl/lower.ipp>
#endif
