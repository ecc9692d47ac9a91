// PyTorch's interleaved zero-bubble schedule (`ScheduleInterleavedZeroBubble`, the ZB1P schedule
// of Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241): the interleaved schedule
// with each backward split into its input half (dX, PyTorch's I) and weight half (dW, W), the
// weight halves held back to fill what would be bubbles.
#pragma once

#include <type_traits>

#include <cstdint>
#include <weft/config.hpp>

#include <weft/core/buffer.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/params.hpp>

namespace weft {

namespace gen {
/// One step of a PyTorch order: nothing (an idle step), or a chunk's forward, dX or dW.
struct zb_action {
  enum what_t : std::uint8_t { none, forward, input, weight } what = none;
  int chunk = 0;
  int mb = 0;
};
}  // namespace gen

namespace gen {
/// Every rank's order of steps before the lockstep walk, all ranks in one array, rank r's from
/// `begin[r]` (no array per rank: constant evaluation pays for every allocation).
struct zb_orders {
  buffer<zb_action> order;
  buffer<std::uint32_t> begin;
};

/// Each rank's order: its warm-up forwards, then a forward, a dX and (after r steps) the dW of
/// an earlier dX per step, then the rest of the dW; a rank r starts r steps late and waits
/// P - 1 - r steps after its warm-up.
constexpr zb_orders zb_rank_orders(int P, int V, int M, int G) {
  const int work = V * M;
  zb_orders out;
  buffer<int> next_mb(3 * static_cast<std::size_t>(V), 0);  // per (what - 1, local chunk)
  buffer<int> dx_steps;                                     // the step of each dX, in turn
  for (int r = 0; r < P; ++r) {
    out.begin.push_back(static_cast<std::uint32_t>(out.order.size()));
    const int warmup_full = (V - 1) * G + (P - 1 - r);
    const int warmup = warmup_full < work ? warmup_full : work;
    const auto forward_chunk = [&](int step) { return step / G % V; };
    const auto backward_chunk = [&](int step) { return V - 1 - (step - warmup) / G % V; };
    const auto emit = [&](zb_action::what_t what, int v) {
      int& mb = next_mb[static_cast<std::size_t>((what - 1) * V + v)];
      out.order.push_back({what, v * P + r, mb++});
    };
    for (std::size_t k = 0; k < next_mb.size(); ++k) next_mb[k] = 0;
    dx_steps.clear();
    std::size_t dw_done = 0;
    const auto dx_and_dw = [&](int step) {
      emit(zb_action::input, backward_chunk(step));
      dx_steps.push_back(step);
      if (step - warmup >= r) emit(zb_action::weight, backward_chunk(dx_steps[dw_done++]));
    };
    for (int i = 0; i < r; ++i) out.order.push_back({});
    for (int step = 0; step < work + warmup; ++step) {
      if (step < warmup) {
        emit(zb_action::forward, forward_chunk(step));
        if (step == warmup - 1)
          for (int i = 0; i < P - 1 - r; ++i) out.order.push_back({});
      } else if (step < work) {
        emit(zb_action::forward, forward_chunk(step));
        dx_and_dw(step);
      } else {
        dx_and_dw(step);
      }
    }
    while (dw_done < dx_steps.size()) emit(zb_action::weight, backward_chunk(dx_steps[dw_done++]));
  }
  out.begin.push_back(static_cast<std::uint32_t>(out.order.size()));
  return out;
}

/// The lockstep walk of the ranks' orders: what ran by the step before is seen; a forward of
/// chunk c > 0 waits for chunk c - 1's forward of its micro-batch (a bubble meanwhile). Rejects
/// an order that never finishes.
constexpr buffer<buffer<zb_action>> zb_lockstep(const zb_orders& o, int P, int V, int M,
                                                const char* name) {
  buffer<std::uint8_t> seen(static_cast<std::size_t>(V * P) * static_cast<std::size_t>(M), 0);
  buffer<std::uint32_t> at(static_cast<std::size_t>(P), 0), seen_now;
  buffer<buffer<zb_action>> walked(static_cast<std::size_t>(P));
  const auto forward_of = [&](int chunk, int mb) {
    return static_cast<std::size_t>(chunk) * static_cast<std::size_t>(M) +
           static_cast<std::size_t>(mb);
  };
  for (bool left = true; left;) {
    left = false;
    bool moved = false;
    seen_now.clear();
    for (int r = 0; r < P; ++r) {
      const auto rr = static_cast<std::size_t>(r);
      const std::uint32_t k = o.begin[rr] + at[rr];
      if (k >= o.begin[rr + 1]) continue;
      left = true;
      const zb_action a = o.order[k];
      if (a.what == zb_action::forward && a.chunk > 0 && !seen[forward_of(a.chunk - 1, a.mb)]) {
        walked[rr].push_back({});  // a bubble: the input is not there yet
        continue;
      }
      walked[rr].push_back(a);
      ++at[rr];
      moved = true;
      if (a.what == zb_action::forward)
        seen_now.push_back(static_cast<std::uint32_t>(forward_of(a.chunk, a.mb)));
    }
    for (std::uint32_t x : seen_now) seen[x] = 1;
    if (left && !moved)
      gen::reject(name, "no rank can take its next step: this order never finishes");
  }
  return walked;
}

/// `interleaved_zero_bubble`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule interleaved_zero_bubble(const interleaved_params& p) {
  constexpr const char* name = "interleaved-zb";
  const gen::loop_chunks shape = gen::loop_chunks_of(name, p);
  if (p.extra_warmup) gen::reject(name, "extra_warmup is the interleaved schedule's");
  if (p.nanopipe) gen::reject(name, "nanopipe is the interleaved schedule's (MindSpeed's)");
  const int P = p.ranks, V = p.chunks, M = p.micro, G = gen::round_size(name, P, M);
  gen::pipeline_builder b(shape.model, p.overlap);
  const buffer<buffer<zb_action>> walked = zb_lockstep(zb_rank_orders(P, V, M, G), P, V, M, name);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    for (const zb_action& a : walked[static_cast<std::size_t>(r)]) switch (a.what) {
        case zb_action::none:
          b.idle();
          break;
        case zb_action::forward:
          b.forward(a.mb, a.chunk);
          break;
        case zb_action::input:
          b.backward_input(a.mb, a.chunk);
          break;
        case zb_action::weight:
          b.backward_weight(a.mb, a.chunk);
          break;
      }
  }
  return gen::finish(b, shape.common);
}
}  // namespace gen

/// ZB1P as PyTorch orders it, step for step. Micro-batches pass the chunks in rounds of
/// G = micro / max(1, micro / ranks), as in the interleaved schedule (rule: micro a multiple of
/// the rounds). Rank r idles r steps, warms up with min((chunks - 1) G + ranks - 1 - r,
/// chunks * micro) forwards and idles ranks - 1 - r steps; then each step runs a forward (while
/// any is left) and a dX, and from its r-th dX on, the dW of the oldest dX without one; the dW
/// left over close the rank. Then, as PyTorch does, the ranks are walked in lockstep and a
/// forward whose input (the previous chunk's forward of its micro-batch) is not yet done by the
/// step before waits an idle step — which happens with fewer micro-batches than ranks.
/// Takes `chunks` per rank; no `extra_warmup`, no `nanopipe`, no Megatron lowering.
inline constexpr generator<gen::interleaved_zero_bubble> interleaved_zero_bubble{};
WEFT_EXTERN_STEPS(gen::interleaved_zero_bubble)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated(
    "gen::build_interleaved_zero_bubble is gen::interleaved_zero_bubble")]] constexpr schedule
build_interleaved_zero_bubble(const interleaved_params& p) {
  return interleaved_zero_bubble(p);
}
}  // namespace gen

}  // namespace weft
