// Where a device's step goes: its kernels by kind, the communication inside its layers, what
// recomputation runs again, the pipeline's waits (the bubble and the transfers the compute does
// not cover), the gradients' synchronisation and the optimizer. The estimate (plan/estimate.hpp)
// fills it per stage and micro-batch from the kernels it prices, and per pipeline rank for one
// step from the simulated pipeline, so a user sees why a plan is slow, not only that it is.
#pragma once

#include <weft/core/time.hpp>

namespace weft::plan {

/// One pass (or a step's worth of passes) on one device, by what the time is spent on.
struct time_split {
  /// The matmuls priced by their shapes (attention's core aside).
  seconds matmul{0};
  /// Attention's core: the fused kernel, or its batched matmuls, softmax and dropout.
  seconds attention{0};
  /// The memory-bound kernels: norms, activations, dropout, residuals, casts, routing, the loss.
  seconds elementwise{0};
  /// What recomputation runs again before the backward (its kernels and TP collectives).
  seconds recompute{0};
  seconds tp{0};  ///< tensor (and sequence) parallelism's collectives
  seconds cp{0};  ///< context parallelism's keys and values, what is not hidden of them
  seconds ep{0};  ///< the MoE dispatch and combine all-to-alls (a pair may hide them)
  /// The host launching kernels slower than the device runs them (`perf::launch_interval`).
  seconds launch{0};

  constexpr seconds compute() const noexcept { return matmul + attention + elementwise; }
  constexpr seconds total() const noexcept { return compute() + recompute + tp + cp + ep + launch; }

  constexpr time_split& operator+=(const time_split& o) noexcept {
    matmul += o.matmul;
    attention += o.attention;
    elementwise += o.elementwise;
    recompute += o.recompute;
    tp += o.tp;
    cp += o.cp;
    ep += o.ep;
    launch += o.launch;
    return *this;
  }
  friend constexpr time_split operator+(time_split a, const time_split& b) noexcept {
    return a += b;
  }
  constexpr time_split operator*(double k) const noexcept {
    time_split x = *this;
    for (seconds* part :
         {&x.matmul, &x.attention, &x.elementwise, &x.recompute, &x.tp, &x.cp, &x.ep, &x.launch})
      *part *= k;
    return x;
  }
};

/// One pipeline rank's step: its passes' parts over every micro-batch of its chunks, then what
/// the simulated pipeline adds. The parts add up to the step:
/// `work.total() - hidden + slowed + transfers + bubble + grad_sync + optimizer == step`.
struct rank_breakdown {
  time_split work;  ///< every forward, backward and dW the rank runs in one step
  /// What the simulated pipeline did to the priced passes, net: communication overlapped
  /// forward/backward pairs hid (`hidden`), or time lost to links and devices shared between
  /// compute and communication (`slowed`, the cluster's contention facts); one of them is 0.
  seconds hidden{0}, slowed{0};
  seconds transfers{0};  ///< pipeline transfers the rank waited for, not covered by compute
  seconds bubble{0};     ///< the rest of the rank's idle time: the pipeline's fill and drain
  seconds grad_sync{0};  ///< the data-parallel gradient and parameter sync left exposed
  seconds optimizer{0};  ///< the optimizer step on the rank's shard
  seconds step{0};       ///< the whole step (every rank's is the slowest's)
  /// Per micro-batch, the mean over the rank's chunks: forward, backward (with recomputation
  /// and the dW), and the dW alone — DeepSeek's "1F, 1B, 1W".
  seconds F{0}, B{0}, W{0};
};

}  // namespace weft::plan
