// The unit-step view of a stream program, as PyTorch's pipelining tests count a schedule
// (`_simulate_comms_compute`): time advances in steps; in each step every rank in turn issues
// its next slot if it can, and a rank that could not gets a second try after all others had
// their turn, so a rank sees what lower ranks issued earlier in the same step. A slot can go
// when everything its ops wait for (semantics.hpp: producers, the op before on the stream) has
// gone, and a receive's send has gone; a send goes by itself; an idle (empty) slot takes no
// step, as PyTorch drops its empty cells first. The number of steps is what
// PyTorch's tests pin for their lowered schedules; weft's lowering of the same files must take
// as many.
//
// A receive here holds its rank until the send has gone, as in PyTorch's simulator; PyTorch's
// runtime (`_PipelineScheduleRuntime`) instead posts receives without blocking and waits for
// them at the compute that needs the data, as weft's checker and runtime do. A legal program
// can therefore be stuck in this view (`0F0,0RECV_B0,0SEND_F0,0B0` / `1RECV_F0,1F0,1B0,
// 1SEND_B0`): it runs, and PyTorch's `_simulate_comms_compute` raises "Schedule is not
// progressing" on it. Loading a compute_comms CSV does not simulate it, so only a PyTorch user
// who calls that simulator is refused.
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/semantics.hpp>

namespace weft {

struct unit_step_result {
  int steps = 0;       ///< steps until every rank has issued its last slot
  bool stuck = false;  ///< a step in which no rank could go: the program cannot finish here
  /// When stuck: the first op of the lowest rank's next slot that could not go.
  std::uint32_t waiting = npos;
};

constexpr unit_step_result unit_steps(const program& p) {
  const semantics g(p);
  const schedule& s = p.source;
  const int R = s.ranks();
  unit_step_result out;
  buffer<std::uint8_t> gone(p.size(), 0);
  buffer<std::uint32_t> next(static_cast<std::size_t>(R), 0);  // next slot, counted on its rank
  // The first op of rank r's next slot that cannot go yet, or none.
  const auto blocker = [&](int r) {
    const std::uint32_t slot = s.first_slot(r) + next[static_cast<std::size_t>(r)];
    for (std::uint32_t i = s.first_op(slot); i < s.slot_end[slot]; ++i) {
      bool ready = true;
      g.each_wait(i, [&](std::uint32_t y, bool) { ready = ready && gone[y]; });
      if (!ready) return i;
      if (p.at(i).k == kind::recv && p.partner[i] != npos && !gone[p.partner[i]]) return i;
    }
    return npos;
  };
  const auto can_go = [&](int r) { return blocker(r) == npos; };
  const auto done = [&](int r) {
    return next[static_cast<std::size_t>(r)] == static_cast<std::uint32_t>(s.slots(r));
  };
  const auto skip_idle = [&](int r) {
    while (!done(r) && s.slot(r, static_cast<int>(next[static_cast<std::size_t>(r)])).empty())
      ++next[static_cast<std::size_t>(r)];
  };
  const auto go = [&](int r) {
    const std::uint32_t slot = s.first_slot(r) + next[static_cast<std::size_t>(r)]++;
    for (std::uint32_t i = s.first_op(slot); i < s.slot_end[slot]; ++i) gone[i] = 1;
    skip_idle(r);
  };
  for (int r = 0; r < R; ++r) skip_idle(r);
  buffer<std::uint8_t> waited(static_cast<std::size_t>(R), 0);
  for (;;) {
    bool all_done = true, progress = false;
    for (int r = 0; r < R; ++r) {
      waited[static_cast<std::size_t>(r)] = 0;
      if (done(r)) continue;
      all_done = false;
      if (can_go(r)) {
        go(r);
        progress = true;
      } else {
        waited[static_cast<std::size_t>(r)] = 1;
      }
    }
    if (all_done) return out;
    for (int r = 0; r < R; ++r)  // the second try
      if (waited[static_cast<std::size_t>(r)] && can_go(r)) {
        go(r);
        waited[static_cast<std::size_t>(r)] = 0;
        progress = true;
      }
    if (!progress) {
      out.stuck = true;
      for (int r = 0; r < R && out.waiting == npos; ++r)
        if (!done(r)) out.waiting = blocker(r);
      return out;
    }
    ++out.steps;
  }
}

}  // namespace weft
