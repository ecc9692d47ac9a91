// Megatron-LM's launch flags that `weft plan` takes without pricing them — they change nothing of
// a step's time or memory (learning rate, data, logging, checkpoints) — and the ones it refuses,
// each with what it would change: one list for the command line and for job files, so that a
// launch script's arguments paste as they are and nothing that matters is dropped in silence.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <weft/perf/attention_library.hpp>

namespace weft::plan {

/// Flags that take a value and say nothing of a step's time or memory.
inline constexpr std::string_view megatron_inert_with_value[] = {
    "--lr",
    "--min-lr",
    "--lr-decay-style",
    "--lr-decay-iters",
    "--lr-decay-samples",
    "--lr-warmup-iters",
    "--lr-warmup-samples",
    "--lr-warmup-fraction",
    "--lr-warmup-init",
    "--decoupled-lr",
    "--decoupled-min-lr",
    "--train-iters",
    "--train-samples",
    "--weight-decay",
    "--start-weight-decay",
    "--end-weight-decay",
    "--weight-decay-incr-style",
    "--adam-beta1",
    "--adam-beta2",
    "--adam-eps",
    "--clip-grad",
    "--init-method-std",
    "--rotary-base",
    "--rotary-percent",
    "--rotary-seq-len-interpolation-factor",
    "--rope-scaling-factor",
    "--norm-epsilon",
    "--data-cache-path",
    "--split",
    "--vocab-file",
    "--merge-file",
    "--tokenizer-model",
    "--tiktoken-pattern",
    "--num-workers",
    "--log-interval",
    "--save-interval",
    "--eval-interval",
    "--eval-iters",
    "--save",
    "--load",
    "--tensorboard-dir",
    "--wandb-project",
    "--wandb-exp-name",
    "--wandb-save-dir",
    "--profile-step-start",
    "--profile-step-end",
    "--distributed-timeout-minutes",
    "--exit-duration-in-mins",
    "--exit-interval",
    "--empty-unused-memory-level",
    "--fp8-amax-history-len",
    "--fp8-amax-compute-algo",
    "--fp8-margin",
    "--fp8-interval",
    "--moe-z-loss-coeff",
    "--moe-router-score-function",
    "--moe-router-topk-scaling-factor",
    "--moe-router-bias-update-rate",
    "--moe-router-dtype",
    "--step-batch-size-schedule",
    "--tensorboard-log-interval",
    "--timing-log-level",
    "--timing-log-option",
    "--ckpt-convert-format",
    "--ckpt-convert-save",
    "--pretrained-checkpoint",
    "--dist-ckpt-strictness",
    "--num-dataset-builder-threads",
    "--tokenizer-metadata",
    "--dataloader-type",
    "--manual-gc-interval",
    "--rotary-scaling-factor",
    "--mscale",
    "--mscale-all-dim",
    "--mtp-loss-scaling-factor",
    "--logging-level",
    "--moe-flex-dispatcher-backend",
};

/// Flags that take one value or more (a data blend's weights and paths, a coefficient a layer
/// group, ranks, the batch ramp-up's three numbers) and say nothing of a step's time or memory.
inline constexpr std::string_view megatron_inert_with_values[] = {
    "--data-path",      "--train-data-path",    "--valid-data-path",
    "--test-data-path", "--moe-aux-loss-coeff", "--moe-router-load-balancing-type",
    "--profile-ranks",  "--rampup-batch-size",
};

/// Flags without a value that say nothing of a step's time or memory.
inline constexpr std::string_view megatron_inert_switches[] = {
    "--use-mcore-models",
    // Deprecated since Transformer Engine 1.6 (arguments.py): they change nothing.
    "--disable-tp-comm-split-ag",
    "--disable-tp-comm-split-rs",
    "--use-flash-attn",
    "--apply-layernorm-1p",
    "--cross-entropy-loss-fusion",
    "--calculate-per-token-loss",
    "--manual-gc",
    "--mock-data",
    "--log-throughput",
    "--profile",
    "--use-pytorch-profiler",
    "--no-create-attention-mask-in-dataloader",
    "--no-mmap-bin-files",
    "--log-timers-to-tensorboard",
    "--log-validation-ppl-to-tensorboard",
    "--log-memory-to-tensorboard",
    "--log-num-zeros-in-grad",
    "--log-params-norm",
    "--no-load-optim",
    "--no-load-rng",
    "--no-save-optim",
    "--no-save-rng",
    "--finetune",
    "--use-checkpoint-args",
    "--exit-on-missing-checkpoint",
    "--async-save",
    "--no-async-tensor-model-parallel-allreduce",
    "--use-rope-scaling",
    "--moe-router-enable-expert-bias",
    "--moe-permute-fusion",
    "--moe-router-fusion",
    "--moe-router-pre-softmax",
    "--reset-position-ids",
    "--reset-attention-mask",
    "--eod-mask-loss",
    "--no-check-for-nan-in-loss-and-grad",
    "--attention-softmax-in-fp32",
    "--log-straggler",
    "--no-persist-layer-norm",
    "--auto-detect-ckpt-format",
    "--enable-experimental",
    "--moe-router-force-load-balancing",
    "--init-model-with-meta-device",
};

/// Flags that change a job's time or memory and that weft does not price: each refused by name
/// with what it would change, never ignored.
inline constexpr std::pair<std::string_view, std::string_view> megatron_unpriced[] = {
    {"--tp-comm-overlap-cfg",
     "userbuffers settings of its own: weft prices --tp-comm-overlap with Transformer Engine's "
     "defaults"},
    {"--disable-tp-comm-overlap-ag",
     "the ring-exchange gathers serial again: weft prices Transformer Engine's defaults"},
    {"--disable-tp-comm-overlap-rs",
     "the pipelined reduce-scatters serial again: weft prices Transformer Engine's defaults"},
    {"--disable-tp-comm-bulk-dgrad",
     "the backward's input gather serial again: weft prices Transformer Engine's defaults"},
    {"--disable-tp-comm-bulk-wgrad",
     "the backward's gradient reduce-scatter serial again: weft prices Transformer Engine's "
     "defaults"},
    {"--tp-comm-overlap-rs-dgrad",
     "the backward's reduce-scatter beside the input gradient's GEMM: weft prices Transformer "
     "Engine's defaults"},
    {"--account-for-embedding-in-pipeline-split",
     "a stage given to the embedding: give the stages with --pipeline-layout"},
    {"--account-for-loss-in-pipeline-split",
     "a stage given to the loss: give the stages with --pipeline-layout"},
    {"--optimizer-cpu-offload", "optimizer states in host memory: not modelled"},
    {"--cpu-offloading", "activations offloaded to host memory: not modelled"},
    {"--moe-expert-capacity-factor",
     "tokens dropped past an expert's capacity: weft prices balanced routing, none dropped"},
    {"--moe-pad-expert-input-to-capacity",
     "experts' inputs padded to their capacity: weft prices balanced routing, none padded"},
    {"--recompute-activations", "selective recomputation's older name: give --recompute selective"},
    {"--num-layers-per-virtual-pipeline-stage-first", "give the stages with --pipeline-layout"},
    {"--window-size", "sliding-window attention: weft prices every layer's whole causal attention"},
    {"--encoder-num-layers", "an encoder: weft plans decoder-only models"},
    {"--fp4-format", "FP4 linears: not modelled"},
    {"--cuda-graph-impl", "CUDA graphs: kernel launches priced as issued one by one"},
    {"--external-cuda-graph", "CUDA graphs: kernel launches priced as issued one by one"},
    {"--enable-cuda-graph", "CUDA graphs: kernel launches priced as issued one by one"},
    {"--moe-router-topk-limited-devices", "device-limited routing: give --moe-router-num-groups"},
    {"--distribute-saved-activations",
     "each saved activation split over the tensor-parallel ranks: less activation memory, a "
     "gather in the backward"},
    {"--use-precision-aware-optimizer",
     "optimizer states and master weights in lower precision: fewer bytes than Adam's 12"},
    {"--microbatch-group-size-per-virtual-pipeline-stage",
     "the interleaved schedule's rounds of another size: weft's are pp micro-batches"},
    {"--moe-layer-recompute", "the MoE layers recomputed whole: give --recompute-modules"},
    {"--hierarchical-context-parallel-sizes",
     "context parallelism in two levels (a2a+p2p): weft prices p2p or all_gather"},
    {"--cpu-offloading-num-layers", "activations offloaded to host memory: not modelled"},
    {"--moe-shared-expert-overlap",
     "the shared expert beside the dispatch: it would hide part of the all-to-all"},
    {"--overlap-dispatch-backward-with-experts-wgrad",
     "the dispatch's backward behind the experts' weight gradients"},
    // Fusions turned off: more kernels and bytes than the fused ones weft prices.
    {"--no-bias-swiglu-fusion",
     "the gated activation as PyTorch's separate kernels: --eager prices it so, with the norms "
     "and rotary embeddings eager too"},
    {"--no-rope-fusion",
     "the rotary embeddings as PyTorch's separate kernels (rotate_half): weft prices Megatron's "
     "fused kernel (--eager: PyTorch's complex form)"},
    {"--no-bias-gelu-fusion",
     "the bias and GeLU as separate kernels: weft prices them fused (a model without a bias: "
     "leave the flag out)"},
    {"--no-bias-dropout-fusion",
     "the bias, dropout and residual add as separate kernels: weft prices them fused (a model "
     "without a bias or dropout: leave the flag out)"},
    {"--no-masked-softmax-fusion",
     "unfused attention's mask and softmax as separate kernels: weft prices the fused one (with "
     "fused attention it changes nothing: leave the flag out)"},
    {"--num-distributed-optimizer-instances",
     "several copies of the distributed optimizer over the data-parallel ranks: weft shards "
     "over all of them"},
};

/// The values --attention-backend takes: Megatron's (auto, flash, fused, unfused, local), and
/// weft's `sdpa` for PyTorch's scaled_dot_product_attention (torchtitan's and other PyTorch
/// trainers' attention); whether one computes attention's scores whole (no fused kernel:
/// weft's --no-flash-attention).
inline constexpr std::string_view attention_backends[] = {"auto",    "flash", "fused",
                                                          "unfused", "local", "sdpa"};
constexpr bool scores_whole(std::string_view backend) noexcept {
  return backend == "unfused" || backend == "local";
}
/// The library a fused --attention-backend value calls (`auto` for those that fuse none).
constexpr perf::attention_library attention_library_of(std::string_view backend) noexcept {
  return backend == "fused"   ? perf::attention_library::cudnn
         : backend == "flash" ? perf::attention_library::flash
         : backend == "sdpa"  ? perf::attention_library::sdpa
                              : perf::attention_library::transformer_engine;
}
/// Megatron's --transformer-impl values; `local` (its own layers) computes the scores whole.
inline constexpr std::string_view transformer_impls[] = {"transformer_engine", "local"};

/// Whether `value` is one of `names`.
template <class Names>
constexpr bool one_of_names(std::string_view value, const Names& names) noexcept {
  for (const auto& n : names)
    if (n == value) return true;
  return false;
}

/// Whether Megatron's `flag` (with its dashes) changes nothing weft prices.
constexpr bool is_megatron_inert(std::string_view flag) noexcept {
  const auto is = [flag](std::string_view x) { return x == flag; };
  return std::any_of(std::begin(megatron_inert_with_value), std::end(megatron_inert_with_value),
                     is) ||
         std::any_of(std::begin(megatron_inert_with_values), std::end(megatron_inert_with_values),
                     is) ||
         std::any_of(std::begin(megatron_inert_switches), std::end(megatron_inert_switches), is);
}

/// What Megatron's `flag` (with its dashes) would change that weft does not price, or none.
constexpr std::optional<std::string_view> megatron_unpriced_reason(std::string_view flag) noexcept {
  for (const auto& [name, why] : megatron_unpriced)
    if (name == flag) return why;
  return std::nullopt;
}

/// The edit distance of two names (for "did you mean").
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// Of `known`, the name nearest `given` — within a third of its length — or empty.
template <class Names>
std::string_view nearest_name(std::string_view given, const Names& known) {
  std::string_view best;
  std::size_t closest = given.size() / 3 + 1;
  if (given.size() > 64) return best;  // no name is that long: nothing near it
  for (const auto& k : known)
    if (const std::size_t d = edit_distance(given, k); d < closest) {
      closest = d;
      best = k;
    }
  return best;
}

}  // namespace weft::plan
