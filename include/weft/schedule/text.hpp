// Text for people: an op as MindSpeed's feature notes' figures write it, and a legality violation
// as one line. Below the simulators and the runtime (they name ops in their errors); io/format.hpp
// adds the longer reports.
#pragma once

#include <string>
#include <string_view>

#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/model.hpp>
#include <weft/schedule/violation.hpp>

namespace weft {

/// "mlp/F mb=1", with chunk, layer, split and lane when they are not 0.
inline std::string to_string(const op& o) {
  std::string s{name_of(o.k)};
  s += '/';
  s += name_of(o.ph);
  s += " mb=" + std::to_string(o.mb);
  if (o.chunk) s += " chunk=" + std::to_string(o.chunk);
  if (o.layer) s += " layer=" + std::to_string(o.layer);
  if (o.split) s += " split=" + std::to_string(o.split);
  if (o.lane) s += " lane=" + std::to_string(o.lane);
  return s;
}

inline std::string_view describe(outside why) noexcept {
  switch (why) {
    case outside::none:
      return "inside the model";
    case outside::micro_batch:
      return "its micro-batch is >= micro";
    case outside::chunk:
      return "its chunk is >= ranks * chunks_per_rank";
    case outside::layer:
      return "its layer is >= layers";
    case outside::split:
      return "its split is >= splits";
    case outside::kind:
      return "the model's layers have no such sub-stage";
    case outside::phase:
      return "that phase does not exist for it (no backward, or dX/dW of an op without weights)";
    case outside::off_path:
      return "its micro-batch never passes through that chunk";
    case outside::no_transfer:
      return "no transfer crosses ranks there";
    case outside::p2p_fields:
      return "transfers carry whole chunks: layer and split must be 0";
    case outside::lane:
      static_assert(lanes_per_class == 7, "the message below names lanes_per_class");
      return "its lane is >= 7 (lanes_per_class)";
  }
  return "unknown";
}

namespace detail {
inline std::string where(int rank, int slot) {
  std::string s = "rank " + std::to_string(rank);
  if (slot >= 0) s += ", slot " + std::to_string(slot);
  return s;
}
}  // namespace detail

/// One line, e.g. "weft: rule 2 (order): mlp/F mb=1 on rank 0, slot 1 runs before
/// dispatch/F mb=1 (rank 0, slot 2) it needs".
inline std::string to_string(const violation& v) {
  if (!v) return "weft: legal";
  std::string s = "weft: rule " + std::to_string(static_cast<int>(v.code)) + " (" +
                  std::string(name_of(v.code)) + "): ";
  const std::string op = to_string(v.subject) + " on " + detail::where(v.rank, v.slot);
  const std::string other =
      to_string(v.other) + " (" + detail::where(v.other_rank, v.other_slot) + ")";
  switch (v.what) {
    case fault::none:
      break;
    case fault::outside_model:
      s +=
          op + " is not part of the model: " + std::string(describe(static_cast<outside>(v.value)));
      break;
    case fault::wrong_rank:
      s += op + " belongs on rank " + std::to_string(v.other_rank) + ", which holds its chunk";
      break;
    case fault::duplicate:
      s += op + " appears again; first at " + other;
      break;
    case fault::missing:
      s += to_string(v.subject) + " never appears (it belongs on rank " + std::to_string(v.rank) +
           ")";
      if (v.value == 1)
        s += ", and " + other +
             " needs it: it looks like part of a step; prove a fragment with what it takes as done "
             "(diagnose(s, assuming(done(...))), check_options::fragment)";
      break;
    case fault::mixed_backward:
      s += op + " is fused but the split " + other + " exists too";
      break;
    case fault::runs_before_producer:
      s += op + " runs before " + other + " it needs";
      break;
    case fault::producer_missing:
      s += op + " needs " + to_string(v.other) +
           ", which is neither in the fragment nor assumed done";
      break;
    case fault::same_stream:
      s += op + " shares its slot's stream with " + other;
      break;
    case fault::dependent_in_slot:
      s += op + " shares its slot with " + other + " it needs";
      break;
    case fault::cycle:
      if (v.value == 1) {  // in the lowering's issue order (PyTorch's placement)
        s += op + " can never be issued: its input from rank " + std::to_string(v.other_rank) +
             " is never sent";
        if (v.other_slot >= 0) s += ", that rank waiting at " + other;
        s += " (lowering issues each rank's slots in order, a slot once its receives are posted, "
             "as PyTorch places transfers)";
        break;
      }
      s += op + " can never start";
      if (v.other_rank >= 0) s += ": it waits for " + other;
      break;
    case fault::unmatched_send:
      s += op + " has no receive in FIFO order on its channel";
      break;
    case fault::unmatched_recv:
      s += op + " has no send in FIFO order on its channel";
      break;
    case fault::mismatched_transfer:
      s += op + " is paired in FIFO order with " + other + ", which expects other data";
      break;
    case fault::over_bound:
      s += op + " makes " + std::to_string(v.value) + " activations live, over the bound of " +
           std::to_string(v.bound);
      break;
    case fault::bad_model:
      s += "impossible model: " + std::string(describe(static_cast<model_error>(v.value)));
      break;
  }
  return s;
}

}  // namespace weft
