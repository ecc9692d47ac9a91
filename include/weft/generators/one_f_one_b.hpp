// GPipe and 1F1B (PipeDream-flush): one model chunk per rank, loop placement.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/params.hpp>

namespace weft {

using one_f_one_b_params = pipeline_params;

namespace gen {
/// `gpipe`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule gpipe(const pipeline_params& p) {
  const model_desc m = gen::pipeline_model(p);
  gen::check_common("gpipe", p, m);
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < p.ranks; ++r) {
    b.add_rank();
    for (int i = 0; i < p.micro; ++i) b.forward(i, r);
    for (int i = 0; i < p.micro; ++i) b.backward(i, r);
  }
  return gen::finish(b, p);
}
}  // namespace gen

/// GPipe: every forward, then every backward. Peak memory: all `micro` micro-batches on every
/// rank; bubble (ranks - 1) / (micro + ranks - 1).
inline constexpr generator<gen::gpipe> gpipe{};
WEFT_EXTERN_STEPS(gen::gpipe)

namespace gen {
/// `one_f_one_b`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule one_f_one_b(const pipeline_params& p) {
  if (p.p2p.overlap_p2p) return interleaved(with_chunks(p, 1));
  if (p.p2p.megatron && !p.p2p.blocking) {
    // Megatron turns overlap_p2p_comm off without a virtual pipeline (arguments.py), so its
    // 1F1B code always makes batched calls the host waits for: the `blocking` lowering.
    pipeline_params q = p;
    q.p2p.megatron = false;
    q.p2p.blocking = true;
    return one_f_one_b(q);
  }
  const model_desc m = gen::pipeline_model(p);
  gen::check_common("1f1b", p, m, true);
  gen::pipeline_builder b(m, p.overlap);
  buffer<std::uint16_t> warmups(static_cast<std::size_t>(p.ranks), 0);
  for (int r = 0; r < p.ranks; ++r) {
    b.add_rank();
    const int warmup = p.ranks - r - 1 < p.micro ? p.ranks - r - 1 : p.micro;
    warmups[static_cast<std::size_t>(r)] = static_cast<std::uint16_t>(warmup);
    for (int i = 0; i < warmup; ++i) b.forward(i, r);
    for (int i = 0; i + warmup < p.micro; ++i) {
      b.forward(i + warmup, r);
      b.backward(i, r);
    }
    for (int i = p.micro - warmup; i < p.micro; ++i) b.backward(i, r);
  }
  return gen::finish(b, p, false, static_cast<buffer<std::uint16_t>&&>(warmups));
}
}  // namespace gen

/// 1F1B: after a warm-up of (ranks - rank - 1) forwards, each rank alternates one forward and
/// one backward, so at most `ranks - rank` micro-batches are live on a rank. Same bubble as
/// GPipe, (ranks - 1) / (micro + ranks - 1), with memory bounded by the pipeline depth.
/// With MindSpeed's early receives (`p2p.overlap_p2p`, its pp-cross-dc-comm-overlap note) it is
/// what MindSpeed runs for them without a virtual pipeline: its interleaved schedule with one chunk
/// per rank, whose warm-up holds 2 (ranks - rank - 1) forwards (every forward when micro equals
/// ranks), and micro a multiple of ranks. Megatron's lowering (`p2p.megatron`, `p2p.blocking`) is
/// its 1F1B code: batched calls, each waited by the host (`receive_posting::batched_1f1b`).
inline constexpr generator<gen::one_f_one_b> one_f_one_b{};
WEFT_EXTERN_STEPS(gen::one_f_one_b)

namespace gen {
/// `zb_h1`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule zb_h1(const pipeline_params& p) {
  const model_desc m = gen::pipeline_model(p);
  gen::check_common("zb-h1", p, m);
  gen::pipeline_builder b(m, p.overlap);
  for (int r = 0; r < p.ranks; ++r) {
    b.add_rank();
    const int warmup = p.ranks - r - 1 < p.micro ? p.ranks - r - 1 : p.micro;
    int weights = 0;  // dW passes issued so far, in micro-batch order
    const auto weight_after = [&](int inputs_done) {
      if (inputs_done - weights > r) b.backward_weight(weights++, r);
    };
    for (int i = 0; i < warmup; ++i) b.forward(i, r);
    for (int i = 0; i + warmup < p.micro; ++i) {
      b.forward(i + warmup, r);
      b.backward_input(i, r);
      weight_after(i + 1);
    }
    for (int i = p.micro - warmup; i < p.micro; ++i) {
      b.backward_input(i, r);
      weight_after(i + 1);
    }
    while (weights < p.micro) b.backward_weight(weights++, r);
  }
  return gen::finish(b, p);
}
}  // namespace gen

/// ZB-H1 (zero bubble, Qi et al. 2023): 1F1B with each backward split into dX and dW, and the
/// dW of rank r deferred by r steps into the cool-down, where 1F1B leaves the rank idle. Every
/// rank then keeps at most `ranks` micro-batches live — the first rank's 1F1B peak.
inline constexpr generator<gen::zb_h1> zb_h1{};
WEFT_EXTERN_STEPS(gen::zb_h1)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_gpipe is gen::gpipe")]] constexpr schedule build_gpipe(
    const pipeline_params& p) {
  return gpipe(p);
}
[[deprecated("gen::build_one_f_one_b is gen::one_f_one_b")]] constexpr schedule build_one_f_one_b(
    const pipeline_params& p) {
  return one_f_one_b(p);
}
[[deprecated("gen::build_zb_h1 is gen::zb_h1")]] constexpr schedule build_zb_h1(
    const pipeline_params& p) {
  return zb_h1(p);
}
}  // namespace gen

}  // namespace weft
