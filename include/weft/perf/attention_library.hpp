// Which library's fused attention a job's code calls: the one fact of a job that chooses the
// measured rates its attention is priced at (perf/device.hpp holds the rates).
#pragma once

#include <string_view>

namespace weft::perf {

/// The fused attention a job's code calls: on one H100 the libraries differ by up to 1.8 times
/// (FlashAttention-3's paper, arXiv 2407.08608, Figs. 5 and 6, times FlashAttention-2, cuDNN
/// and FlashAttention-3 on one device), so a job is priced with its own.
enum class attention_library : unsigned char {
  /// Transformer Engine's choice, Megatron's `--attention-backend auto`: cuDNN's fused
  /// attention on Hopper and later, FlashAttention before (its `get_attention_backend`
  /// disables FlashAttention "to give FusedAttention preference on Hopper+")
  transformer_engine,
  cudnn,  ///< cuDNN's fused attention (Megatron's `--attention-backend fused`)
  flash,  ///< the flash-attn package at its best on the device (FlashAttention-3 on Hopper)
  /// PyTorch's scaled_dot_product_attention (torchtitan's): FlashAttention-2, cuDNN's kernel
  /// being opt-in on Hopper since PyTorch 2.5.1 (pytorch/pytorch#138522, #142132) until a
  /// cuDNN newer than 9.15
  sdpa,
};
inline constexpr std::string_view attention_library_names[] = {"auto", "fused", "flash", "sdpa"};

}  // namespace weft::perf
