// libFuzzer harness: the planner's promises. The input builds a small transformer (dense or
// MoE, grouped-query heads, gated or plain MLP), a job (every parallel size, batch, sequence up
// to 1M tokens, recomputation, flash, sequence parallelism, sharding, any schedule and chunk
// count) and a cluster (a built-in one, or one whose facts sit at the edges of their ranges, or
// outside them). Each call ends in a `config_error` or holds:
// - `estimate_job`: a finite positive step, the sum of its parts; MFU in (0, the best share of
//   peak the cluster prices any op at]; memory per rank finite and positive; a bubble in [0, 1];
//   recomputing more never needs more memory, and a step of twice the batch is never shorter;
// - `first_overrun`: none at the peak rank's bytes, one (over the cap) just below them;
// - `best_plan`: the best plan that fits is no slower than any other that fits, and its
//   estimate is the one it reports;
// - the same job with --tp-comm-overlap (and FP8 current scaling): `estimate_job`'s promises.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <weft/core/error.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/memory.hpp>

#include "fuzz_input.hpp"

namespace {

using namespace weft;
using namespace weft::plan;

transformer model_of(fuzz::choices& c) {
  transformer m;
  m.model_type = "fuzz";
  m.layers = 1 + c.byte() % 8;
  m.kv_heads = 1 << (c.byte() % 3);
  m.heads = m.kv_heads * (1 + c.byte() % 4);
  m.head_dim = 8 << (c.byte() % 5);
  m.hidden = m.heads * m.head_dim * (c.flag() ? 1 : 2);
  m.ffn = m.hidden * (1 + c.byte() % 4);
  m.vocab = 16 << (c.byte() % 12);
  m.mlp = c.flag() ? mlp_kind::gated : mlp_kind::plain;
  m.tied_embeddings = c.flag();
  if (c.flag()) {
    m.moe.routed = 1 << (c.byte() % 4);
    m.moe.top_k = 1 + c.byte() % m.moe.routed;
    m.moe.expert_ffn = m.hidden * (1 + c.byte() % 2);
    m.moe.shared_ffn = c.flag() ? m.hidden : 0;
    m.moe.first_dense = c.byte() % m.layers;
  }
  return m;
}

job job_of(fuzz::choices& c) {
  job j;
  // Zero bytes (an input run out) make a plain job; the top of the byte range makes the edges.
  const auto size = [&](int most) {
    const std::uint8_t b = c.byte();
    return b >= 240 ? b % 3 : 1 << (b % most);
  };
  j.tp = size(3);
  j.pp = size(3);
  j.dp = size(3);
  j.cp = size(2);
  j.ep = size(2);
  j.micro_batch_size = 1 + c.byte() % 2;
  j.global_batch_size = c.flag() ? 0 : j.micro_batch_size * j.dp * (1 + c.byte() % 8);
  const std::uint8_t seq = c.byte();
  j.seq = seq >= 248 ? 4096.5 : static_cast<double>(1 << (4 + seq % 17));
  j.policy = static_cast<recompute>(c.byte() % 3);
  j.sequence_parallel = c.flag();
  j.flash_attention = c.byte() % 4 != 0;
  j.sharding = static_cast<dp_sharding>(c.byte() % 4);
  j.overlap_grad_reduce = c.flag();
  constexpr std::size_t count = sizeof generators / sizeof generators[0];
  j.schedule = std::string(generators[c.byte() % count].name);
  j.chunks = 1 + c.byte() % 3;
  return j;
}

/// A fact at the low or high edge of its range, just outside it, far outside it (the 1e-300
/// that once planned to "step inf s"), not a number, or as built in.
double edge(fuzz::choices& c, const fact_range& r, double built_in) {
  constexpr double wild[] = {1e-300,
                             -1,
                             0,
                             std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             1e300};
  switch (c.byte() % 12) {
    case 0:
      return r.lo;
    case 1:
      return r.hi;
    case 2:
      return c.flag() ? r.lo / 2 - 1e-300 : r.hi * 2;
    case 3:
      return wild[c.byte() % 6];
    default:
      return built_in;
  }
}

cluster cluster_of(fuzz::choices& c) {
  cluster k = clusters[c.byte() % clusters.size()];
  if (!c.flag()) return k;
  namespace R = cluster_ranges;
  k.device.peak_flops = edge(c, R::peak_flops, k.device.peak_flops);
  k.device.efficiency = edge(c, R::matmul_efficiency, k.device.efficiency);
  k.device.attention_efficiency =
      edge(c, R::attention_efficiency, k.device.attention_flops() / k.device.peak_flops);
  k.device.memory_bytes_per_s = edge(c, R::hbm_bytes_per_s, k.device.memory_bytes_per_s);
  k.hbm_bytes = edge(c, R::hbm_bytes, k.hbm_bytes);
  k.per_node = 1 << (c.byte() % 5);
  k.inter = link_model::with_bandwidth(seconds(edge(c, R::latency_us, 10) / 1e6),
                                       edge(c, R::link_bytes_per_s, 1 / k.inter.beta.count()));
  k.overlap.compute_slowdown = edge(c, R::compute_slowdown, k.overlap.compute_slowdown);
  return k;
}

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

std::optional<estimate> try_estimate(const transformer& m, const job& j, const cluster& k) {
  try {
    return estimate_job(m, j, k);
  } catch (const config_error&) {
    return std::nullopt;
  }
}

void check_estimate(const transformer& m, const job& j, const cluster& k, const estimate& e) {
  if (!finite_positive(e.step.count()) || e.pipeline.count() < 0 || e.grad_sync.count() < 0 ||
      e.optimizer.count() < 0)
    __builtin_trap();
  const double parts = (e.pipeline + e.grad_sync + e.optimizer).count();
  if (std::abs(parts - e.step.count()) > 1e-9 * e.step.count()) __builtin_trap();
  const double best_share =
      std::max(k.device.efficiency, k.device.attention_flops() / k.device.peak_flops);
  if (!(e.mfu > 0) || e.mfu > best_share * (1 + 1e-9)) __builtin_trap();
  if (!(e.metrics.bubble_ratio >= 0 && e.metrics.bubble_ratio <= 1)) __builtin_trap();
  for (const double b : e.memory_per_rank)
    if (!finite_positive(b)) __builtin_trap();
  // Rule 5 in bytes agrees with the peak: nothing over it, something just under it.
  const double peak = *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
  if (first_overrun(e, peak)) __builtin_trap();
  const std::optional<memory_overrun> over = first_overrun(e, peak * (1 - 1e-9));
  if (!over || !(over->needs() > over->cap)) __builtin_trap();
  // More recomputation never needs more memory.
  if (j.policy != recompute::full) {
    job more = j;
    more.policy = j.policy == recompute::none ? recompute::selective : recompute::full;
    if (const std::optional<estimate> r = try_estimate(m, more, k)) {
      const double again = *std::max_element(r->memory_per_rank.begin(), r->memory_per_rank.end());
      if (again > peak * (1 + 1e-9)) __builtin_trap();
    }
  }
  // Twice the batch (twice the micro-batches) is never a shorter step.
  if (j.global_batch_size > 0) {
    job twice = j;
    twice.global_batch_size *= 2;
    if (const std::optional<estimate> r = try_estimate(m, twice, k))
      if (r->step.count() < e.step.count() * (1 - 1e-9)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::choices c{data, size};
  const transformer m = model_of(c);
  const job j = job_of(c);
  const cluster k = cluster_of(c);
  // Work bounded: a few thousand ops per simulated step.
  if (static_cast<double>(j.pp) * j.chunks * j.micro() * m.layers > 4096) return 0;
  if (const std::optional<estimate> e = try_estimate(m, j, k)) check_estimate(m, j, k, *e);
  if (!c.flag()) return 0;
  plan_search_result r;
  try {
    r = best_plan(m, j, k, {.max_chunks = 3});
  } catch (const config_error&) {
    return 0;
  }
  if (!r.best || !r.best_estimate) __builtin_trap();
  const plan_choice& best = r.judged[*r.best];
  if (!best.ran) __builtin_trap();
  // Each judged plan estimated again on its own: the same step and fit as judged, and none
  // that fits faster than the best (or fitting where the best does not).
  const auto again = [&](const plan_choice& x) {
    const std::optional<estimate> e = try_estimate(m, x.tried, k);
    if (e.has_value() != x.ran) __builtin_trap();
    if (!e) return;
    const double peak = *std::max_element(e->memory_per_rank.begin(), e->memory_per_rank.end());
    if (e->step != x.step || (peak <= allocatable_bytes(k.hbm_bytes)) != x.fits) __builtin_trap();
    if (x.fits && (!best.fits || x.step < best.step)) __builtin_trap();
  };
  again(best);
  for (std::size_t i = c.byte() % 4; i < r.judged.size(); i += 1 + c.byte() % 8) again(r.judged[i]);
  // The same job with tensor parallelism beside the GEMMs (userbuffers), and FP8 with current
  // scaling: the same promises.
  if (c.flag()) {
    job o = j;
    o.sequence_parallel = true;
    o.tp_comm_overlap = true;
    if (c.flag()) {
      o.fp8 = fp8_recipe::hybrid;
      o.fp8_current_scaling = true;
    }
    if (const std::optional<estimate> e = try_estimate(m, o, k)) check_estimate(m, o, k, *e);
  }
  // The same job as PyTorch trainers run it — eager operations, the loss over whole logits,
  // Scaling's fp32 all-reduce, DeepSpeed's BF16 optimizer: the same promises.
  if (c.flag()) {
    job t = j;
    t.eager = c.flag();
    t.eager_loss = c.flag();
    t.fused_rms_norm = t.eager && c.flag();
    t.grad_all_reduce_fp32 = c.flag();
    t.deepspeed_bf16 = c.flag();
    if (const std::optional<estimate> e = try_estimate(m, t, k)) check_estimate(m, t, k, *e);
  }
  return 0;
}
