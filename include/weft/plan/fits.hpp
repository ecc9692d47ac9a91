// Rule 5 in bytes: an estimated job against its devices' memory. Where the legality checker
// counts live (micro-batch, chunk) units against a bound, a planned job weighs each unit at its
// chunk's activation bytes, adds the rank's model states, and holds the sum to what the device
// leaves a job (`allocatable_bytes`) —
// naming the op at which a rank first needs more than it has.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <weft/plan/estimate.hpp>
#include <weft/plan/memory.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/text.hpp>

namespace weft::plan {

/// Where a rank first needs more memory than `cap`: the op whose forward claims the activations
/// that go over (its index in the schedule), the rank's model states and the buffers it needs
/// for a moment (`estimate::buffers_per_rank`), and its live activations then, in bytes and in
/// (micro-batch, chunk) units.
struct memory_overrun {
  int rank = -1;
  std::uint32_t index = 0;
  double states = 0, activations = 0, cap = 0;
  int units = 0;
  double buffers = 0;  ///< of what the rank holds beside its activations, not model states
  /// All the rank needs at that op: more than `cap`.
  constexpr double needs() const noexcept { return states + buffers + activations; }
};

/// The first op, in issue order, at which a rank of estimate `e` holds more than `cap` bytes:
/// its model states plus its live activations, each (micro-batch, chunk) unit at its chunk's
/// bytes. Empty when every rank fits.
inline std::optional<memory_overrun> first_overrun(const estimate& e, double cap) {
  std::optional<memory_overrun> found;
  weft::detail::walk_live(
      e.sched, [&](int chunk) { return e.chunk_activation_bytes[static_cast<std::size_t>(chunk)]; },
      [&](int r, std::uint32_t i, double live) {
        const auto at = static_cast<std::size_t>(r);
        const double held = e.states_per_rank[at];
        if (!found && held + live > cap) {
          const double buffers = at < e.buffers_per_rank.size() ? e.buffers_per_rank[at] : 0.0;
          found = memory_overrun{.rank = r,
                                 .index = i,
                                 .states = held - buffers,
                                 .activations = live,
                                 .cap = cap,
                                 .buffers = buffers};
        }
      });
  if (found)  // the same walk in units, to the same op
    weft::detail::walk_live(
        e.sched, [](int) { return 1; },
        [&](int, std::uint32_t i, int live) {
          if (i == found->index) found->units = live;
        });
  return found;
}

/// Bytes in decimal gigabytes to a tenth, "80.0 GB" (as devices' data sheets state memory).
inline std::string gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

/// Bytes as the tool prints memory: binary gibibytes to a tenth, "74.5 GiB" — the unit of
/// PyTorch's memory statistics and of `nvidia-smi` (whose MiB are 2^20 bytes).
inline std::string gibibytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return text;
}

/// What a job may allocate of a device of `hbm` bytes, in words: "71.2 GiB a job may allocate
/// of the device's 79.3 GiB".
inline std::string allocatable_text(double hbm) {
  return gibibytes(allocatable_bytes(hbm)) + " a job may allocate of the device's " +
         gibibytes(hbm);
}

/// One line in the checker's words, e.g. "weft: rule 5 (memory): attn/F mb=3 on rank 1, slot
/// 12 needs 107.8 GiB — model states 37.4 GiB and 9 live (micro-batch, chunk) units of
/// activations, 70.3 GiB — over the 71.2 GiB a job may allocate" (with buffers: "model states 30.1
/// GiB, buffers 7.3 GiB and ...").
inline std::string to_string(const memory_overrun& o, const schedule& s) {
  int slot = 0;
  for (std::uint32_t g = s.first_slot(o.rank); g < s.end_slot(o.rank); ++g)
    if (o.index >= s.first_op(g) && o.index < s.slot_end[g])
      slot = static_cast<int>(g - s.first_slot(o.rank));
  return "weft: rule 5 (memory): " + weft::to_string(s.ops[o.index]) + " on " +
         weft::detail::where(o.rank, slot) + " needs " + gibibytes(o.needs()) + " — model states " +
         gibibytes(o.states) + (o.buffers > 0 ? ", buffers " + gibibytes(o.buffers) : "") +
         " and " + std::to_string(o.units) +
         (o.units == 1 ? " live (micro-batch, chunk) unit of activations, "
                       : " live (micro-batch, chunk) units of activations, ") +
         gibibytes(o.activations) + " — over the " + gibibytes(o.cap) + " a job may allocate";
}

}  // namespace weft::plan
