// Readable compile errors for illegal schedules:
//
//   static_assert(weft::proven<weft::diagnose(my_schedule)>);
//
// `diagnose` computes the first violation as a value; `proven<V>` turns it into the
// instantiation of a template whose name is the rule and whose arguments spell out the op, its
// rank and slot, and the op it conflicts with. Compilers print that instantiation in the first
// lines of the error, next to a static_assert message that names the rule.
#pragma once

#include <type_traits>

#include <weft/schedule/verify.hpp>
#include <weft/schedule/violation.hpp>

namespace weft {

/// Types that make the compiler print a violation's values with their names.
namespace diag {
template <int N>
struct rank {};
template <int N>
struct slot {};
template <int N>
struct mb {};
template <int N>
struct chunk {};
template <int N>
struct layer {};
template <int N>
struct split {};
template <int N>
struct lane {};
template <int N>
struct live {};
template <int N>
struct bound {};
template <kind K, phase P, class Mb, class Chunk, class Layer, class Split, class Lane>
struct op {};
template <class Rank, class Slot>
struct at {};
template <class Rank>
struct belongs_on {};
template <outside Why>
struct because {};
template <class Op, class At>
struct needs {};
template <class Op>
struct needs_unassumed {};
template <class Op, class At>
struct needed_by {};
template <class Op, class At>
struct first_seen {};
template <class Op, class At>
struct shares_stream_with {};
template <class Op, class At>
struct also_has {};
template <class Op, class At>
struct waits_for {};
template <class Op, class At>
struct paired_with {};

template <class... T>
inline constexpr bool always_false = false;

template <weft::op O>
using op_t = op<O.k, O.ph, mb<O.mb>, chunk<O.chunk>, layer<O.layer>, split<O.split>, lane<O.lane>>;
template <int Rank, int Slot>
using at_t = at<rank<Rank>, slot<Slot>>;

// One template per fault; its name and message are the diagnostic.
template <class Op, class At, class Why>
struct rule_1_complete_op_outside_model {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): an op is not part of the model "
                "(see the op, where it is and why in 'rule_1_complete_op_outside_model<...>')");
};
template <class Op, class At, class Home>
struct rule_1_complete_op_on_wrong_rank {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): an op is scheduled on a rank that does not "
                "hold its chunk (see 'rule_1_complete_op_on_wrong_rank<op, at, belongs_on>')");
};
template <class Op, class At, class First>
struct rule_1_complete_duplicate_op {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): an op appears twice "
                "(see 'rule_1_complete_duplicate_op<op, at, first_seen>')");
};
template <class Op, class Home>
struct rule_1_complete_missing_op {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): an op the model needs never appears "
                "(see 'rule_1_complete_missing_op<op, belongs_on>')");
};
template <class Op, class Home, class NeededBy>
struct rule_1_complete_missing_op_looks_like_a_fragment {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): an op the model needs never appears, and "
                "the schedule runs an op whose input it lacks: it looks like part of a step. A "
                "fragment is proven with what it takes as done: "
                "proven<diagnose(s, assuming(done(...)))> (see "
                "'rule_1_complete_missing_op_looks_like_a_fragment<op, belongs_on, needed_by>')");
};
template <class Op, class At, class Other>
struct rule_1_complete_mixed_backward {
  static_assert(always_false<Op>,
                "weft: rule 1 (complete and unique): a backward is both fused (B) and split "
                "(dX/dW) (see 'rule_1_complete_mixed_backward<op, at, also_has>')");
};
template <class Op, class At, class Needs>
struct rule_2_order_runs_before_producer {
  static_assert(always_false<Op>,
                "weft: rule 2 (order): an op runs in a slot before an op it needs on the same "
                "rank (see 'rule_2_order_runs_before_producer<op, at, needs>')");
};
template <class Op, class At, class Needs>
struct rule_2_order_producer_not_assumed {
  static_assert(always_false<Op>,
                "weft: rule 2 (order): a fragment's op needs an op that is neither in the "
                "fragment nor assumed done (see 'rule_2_order_producer_not_assumed<...>')");
};
template <class Op, class At, class Other>
struct rule_3_slot_same_stream {
  static_assert(always_false<Op>,
                "weft: rule 3 (slots): two ops of one slot fight for one stream "
                "(see 'rule_3_slot_same_stream<op, at, shares_stream_with>')");
};
template <class Op, class At, class Needs>
struct rule_3_slot_dependent_ops {
  static_assert(always_false<Op>,
                "weft: rule 3 (slots): an op shares a slot with an op it needs "
                "(see 'rule_3_slot_dependent_ops<op, at, needs>')");
};
template <class Op, class At, class Waits>
struct rule_4_deadlock_cycle {
  static_assert(always_false<Op>,
                "weft: rule 4 (deadlock): ranks wait on each other forever; this op never "
                "starts (see 'rule_4_deadlock_cycle<op, at, waits_for>')");
};
template <class Op, class At>
struct rule_4_deadlock_unmatched_send {
  static_assert(always_false<Op>,
                "weft: rule 4 (deadlock): a send has no receive in FIFO order on its channel "
                "(see 'rule_4_deadlock_unmatched_send<op, at>')");
};
template <class Op, class At>
struct rule_4_deadlock_unmatched_recv {
  static_assert(always_false<Op>,
                "weft: rule 4 (deadlock): a receive has no send in FIFO order on its channel "
                "(see 'rule_4_deadlock_unmatched_recv<op, at>')");
};
template <class Op, class At, class Other>
struct rule_4_deadlock_mismatched_transfer {
  static_assert(always_false<Op>,
                "weft: rule 4 (deadlock): FIFO matching pairs a send with the receive of other "
                "data (see 'rule_4_deadlock_mismatched_transfer<op, at, paired_with>')");
};
template <class Op, class At, class Live, class Bound>
struct rule_5_memory_over_bound {
  static_assert(always_false<Op>,
                "weft: rule 5 (memory): live activations on a rank exceed the bound "
                "(see 'rule_5_memory_over_bound<op, at, live, bound>')");
};
template <model_error E>
struct rule_6_config_bad_model {
  static_assert(
      E == model_error::none,
      "weft: rule 6 (configuration): the model description is impossible "
      "(see the model_error in 'rule_6_config_bad_model<...>'; weft::describe explains it)");
};

/// A legal schedule's diagnostic: nothing to say.
struct legal {};

/// The diagnostic of violation `V`, as a type that is only named here (instantiating it stops
/// compilation with its message).
template <violation V>
constexpr auto diagnostic_of() {
  using O = op_t<V.subject>;
  using A = at_t<V.rank, V.slot>;
  using P = op_t<V.other>;
  using PA = at_t<V.other_rank, V.other_slot>;
  if constexpr (V.code == rule::none)
    return std::type_identity<legal>{};
  else if constexpr (V.what == fault::outside_model)
    return std::type_identity<
        rule_1_complete_op_outside_model<O, A, because<static_cast<outside>(V.value)>>>{};
  else if constexpr (V.what == fault::wrong_rank)
    return std::type_identity<
        rule_1_complete_op_on_wrong_rank<O, A, belongs_on<rank<V.other_rank>>>>{};
  else if constexpr (V.what == fault::duplicate)
    return std::type_identity<rule_1_complete_duplicate_op<O, A, first_seen<P, PA>>>{};
  else if constexpr (V.what == fault::missing && V.value == 1)
    return std::type_identity<rule_1_complete_missing_op_looks_like_a_fragment<
        O, belongs_on<rank<V.rank>>, needed_by<P, PA>>>{};
  else if constexpr (V.what == fault::missing)
    return std::type_identity<rule_1_complete_missing_op<O, belongs_on<rank<V.rank>>>>{};
  else if constexpr (V.what == fault::mixed_backward)
    return std::type_identity<rule_1_complete_mixed_backward<O, A, also_has<P, PA>>>{};
  else if constexpr (V.what == fault::runs_before_producer)
    return std::type_identity<rule_2_order_runs_before_producer<O, A, needs<P, PA>>>{};
  else if constexpr (V.what == fault::producer_missing)
    return std::type_identity<rule_2_order_producer_not_assumed<O, A, needs_unassumed<P>>>{};
  else if constexpr (V.what == fault::same_stream)
    return std::type_identity<rule_3_slot_same_stream<O, A, shares_stream_with<P, PA>>>{};
  else if constexpr (V.what == fault::dependent_in_slot)
    return std::type_identity<rule_3_slot_dependent_ops<O, A, needs<P, PA>>>{};
  else if constexpr (V.what == fault::cycle)
    return std::type_identity<rule_4_deadlock_cycle<O, A, waits_for<P, PA>>>{};
  else if constexpr (V.what == fault::unmatched_send)
    return std::type_identity<rule_4_deadlock_unmatched_send<O, A>>{};
  else if constexpr (V.what == fault::unmatched_recv)
    return std::type_identity<rule_4_deadlock_unmatched_recv<O, A>>{};
  else if constexpr (V.what == fault::mismatched_transfer)
    return std::type_identity<rule_4_deadlock_mismatched_transfer<O, A, paired_with<P, PA>>>{};
  else if constexpr (V.what == fault::over_bound)
    return std::type_identity<rule_5_memory_over_bound<O, A, live<V.value>, bound<V.bound>>>{};
  else
    return std::type_identity<rule_6_config_bad_model<static_cast<model_error>(V.value)>>{};
}
template <violation V>
using diagnostic_t = typename decltype(diagnostic_of<V>())::type;
}  // namespace diag

/// True for a legal schedule; for an illegal one, compilation stops with the violation spelled
/// out. Use as `static_assert(proven<diagnose(s)>)` (or `diagnose(s, assuming(...))`).
template <violation V>
inline constexpr bool proven = (void(sizeof(diag::diagnostic_t<V>)), V.code == rule::none);

}  // namespace weft
