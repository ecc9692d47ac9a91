// What the legality checker finds: a rule, what went wrong, where, and the op it concerns.
#pragma once

#include <cstdint>
#include <string_view>

#include <weft/core/op.hpp>

namespace weft {

/// The legality rules (docs/legality.md), numbered as there.
enum class rule : std::uint8_t {
  none = 0,
  complete = 1,  ///< every op the model needs appears exactly once, on its rank
  order = 2,     ///< every same-rank producer sits in an earlier slot
  slot = 3,      ///< ops in one slot use distinct streams and are independent
  deadlock = 4,  ///< the global happens-before graph is acyclic
  memory = 5,    ///< live activations per rank stay under the bound
  config = 6,    ///< the model description itself is possible
};

enum class fault : std::uint8_t {
  none,
  outside_model,         ///< 1: the op is not part of the model (value: `outside` reason)
  wrong_rank,            ///< 1: the op's chunk lives on another rank (other_rank: that rank)
  duplicate,             ///< 1: the op appears twice (other: first appearance)
  missing,               ///< 1: a needed op never appears (rank: where it belongs; `diagnose`
                         ///< sets value 1 and `other` when scheduled ops need ops the schedule
                         ///< lacks: it looks like a fragment proven without `assuming`)
  mixed_backward,        ///< 1: a unit's backward is both fused (B) and split (dX/dW)
  runs_before_producer,  ///< 2: a producer on the same rank sits in a later slot
  producer_missing,      ///< 2: a fragment needs an op it neither has nor assumes done
  same_stream,           ///< 3: two ops of one slot on one stream
  dependent_in_slot,     ///< 3: an op and its producer share a slot
  cycle,                 ///< 4: ranks wait on each other forever (subject: a blocked op;
                         ///< value 1: only in the lowering's in-order issue of slots)
  unmatched_send,        ///< 4: a send with no receive in FIFO order on its channel
  unmatched_recv,        ///< 4: a receive with no send in FIFO order on its channel
  mismatched_transfer,   ///< 4: FIFO matching pairs a send with a receive of other data
  over_bound,            ///< 5: live activations exceed the bound (value: live, bound)
  bad_model,             ///< 6: the model description is impossible (value: model_error)
};

/// A structural value, so a violation can be a template argument (see diagnose.hpp).
struct violation {
  rule code = rule::none;
  fault what = fault::none;
  int rank = -1;
  int slot = -1;
  op subject{};
  int other_rank = -1;
  int other_slot = -1;
  op other{};
  int value = 0;
  int bound = 0;

  constexpr explicit operator bool() const noexcept { return code != rule::none; }
  friend constexpr bool operator==(const violation&, const violation&) = default;
};

constexpr std::string_view name_of(rule r) noexcept {
  switch (r) {
    case rule::none:
      return "none";
    case rule::complete:
      return "complete and unique";
    case rule::order:
      return "order";
    case rule::slot:
      return "slots";
    case rule::deadlock:
      return "deadlock freedom";
    case rule::memory:
      return "memory";
    case rule::config:
      return "configuration";
  }
  return "unknown";
}

}  // namespace weft
