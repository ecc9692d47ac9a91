// What a device computes and moves, from public spec sheets and measurements: its peak per data
// type, the share of it a GEMM library sustains, the SMs it runs tiles on, its memory and the
// bandwidth a kernel streams at. One parameter set per device, every value with its source
// (docs/planning.md, "Devices"); nothing here is fitted to a run it is checked against.
#pragma once

#include <string_view>

#include <weft/perf/attention_library.hpp>
#include <weft/perf/collectives.hpp>

namespace weft::perf {

/// The data type of a matmul's operands.
enum class dtype : unsigned char { bf16, fp8 };
constexpr double bytes_of(dtype t) noexcept { return t == dtype::fp8 ? 1 : 2; }

/// The output tile one thread block computes: what a GEMM library picks for large matmuls.
struct gemm_tile {
  double m = 256, n = 128;
};

/// Flash attention's backward computes 2.5 times its forward's FLOPs (the scores again;
/// FlashAttention-2, arXiv 2307.08691, counts it so).
inline constexpr double flash_backward_work = 2.5;

/// A forward at `forward` FLOP/s and its backward at `backward`, as a step's time combines them.
constexpr double flash_pair_rate(double forward, double backward) noexcept {
  return (1 + flash_backward_work) / (1 / forward + flash_backward_work / backward);
}

/// A fused attention kernel's measured FLOP/s, causal (the causal half counted), by the tokens
/// of a sequence it attends over: forward and backward at head dim 128, and at 64 and 256
/// where published (empty: not).
struct attention_curves {
  curve forward{}, backward{}, forward_64{}, backward_64{}, forward_256{}, backward_256{};
  constexpr bool empty() const noexcept { return forward.empty(); }
};

struct device {
  std::string_view name;
  double peak_bf16 = 0;     ///< dense bf16 FLOP/s (the spec sheet's, without sparsity)
  double matmul_share = 0;  ///< the best sustained share of it a bf16 matmul reaches (measured)
  double peak_fp8 = 0;      ///< dense fp8 FLOP/s; 0: no fp8 units (bf16's rate and share)
  double fp8_share = 0;     ///< the best sustained share of it an fp8 matmul reaches (measured)
  int sms = 0;              ///< streaming multiprocessors: the tiles of a wave; 0: no tiles
                            ///< modelled (every shape at the sustained rate)
  gemm_tile tile{};
  double hbm_bytes = 0;        ///< memory CUDA gives a process (PyTorch's "total capacity")
  double hbm_bytes_per_s = 0;  ///< peak memory bandwidth (spec sheet)
  double hbm_share = 0;        ///< the share of it a streaming kernel sustains (measured)
  /// Its node's NVLink ring collectives by size, as a share of their peak (perf/collectives.hpp;
  /// empty: the peak at any size).
  busbw_curve nvlink_by_size{};
  /// A causal flash-attention kernel's FLOP/s (the causal half counted), head dim 128, by the
  /// tokens of a sequence it attends over: its forward and its backward. Empty: no curve (the
  /// cluster's attention efficiency at any length).
  curve flash_forward{}, flash_backward{};
  /// The same at head dim 64 and 256 where they are published (empty: not), for `flash_rate`.
  curve flash_forward_64{}, flash_backward_64{}, flash_forward_256{}, flash_backward_256{};
  /// Other libraries' kernels on the device where they are published (empty: the flash
  /// curves above): cuDNN's, and FlashAttention-2's where the flash curves are another's.
  attention_curves cudnn{}, flash2{};

  constexpr bool has_fp8() const noexcept { return peak_fp8 > 0; }
  constexpr double peak(dtype t) const noexcept {
    return t == dtype::fp8 && has_fp8() ? peak_fp8 : peak_bf16;
  }
  /// A matmul's sustained rate in whole waves of whole tiles.
  constexpr double matmul_flops(dtype t) const noexcept {
    return t == dtype::fp8 && has_fp8() ? peak_fp8 * fp8_share : peak_bf16 * matmul_share;
  }
  /// The bandwidth a memory-bound kernel streams at.
  constexpr double memory_bytes_per_s() const noexcept { return hbm_bytes_per_s * hbm_share; }

  /// The device as `library`'s attention runs on it: its flash curves that library's where
  /// they are published.
  constexpr device attending_with(attention_library library) const noexcept {
    const attention_curves& own = library == attention_library::sdpa ? flash2
                                  : library == attention_library::flash
                                      ? attention_curves{}
                                      : cudnn;  // Transformer Engine's or cuDNN's
    device d = *this;
    if (own.empty()) return d;
    d.flash_forward = own.forward;
    d.flash_backward = own.backward;
    d.flash_forward_64 = own.forward_64;
    d.flash_backward_64 = own.backward_64;
    d.flash_forward_256 = own.forward_256;
    d.flash_backward_256 = own.backward_256;
    return d;
  }

  /// A flash kernel's FLOP/s over `tokens` at head dim `head_dim`: linear in the head dim
  /// between the published 64, 128 and 256 (a smaller head reuses less of what a tile loads);
  /// beyond the published ones, the nearest. 0 without curves.
  double flash_rate(bool backward, double tokens, double head_dim = 128) const noexcept {
    const curve& mid = backward ? flash_backward : flash_forward;
    if (mid.empty()) return 0;
    const double at128 = mid.at(tokens);
    const curve& edge = head_dim < 128 ? (backward ? flash_backward_64 : flash_forward_64)
                                       : (backward ? flash_backward_256 : flash_forward_256);
    if (head_dim == 128 || edge.empty()) return at128;
    const double other = head_dim < 128 ? 64 : 256;
    const double share = (head_dim - 128) / (other - 128);
    return share >= 1 ? edge.at(tokens) : at128 + share * (edge.at(tokens) - at128);
  }
};

/// The built-in devices. Sources (docs/planning.md, "Devices"):
/// - peaks: NVIDIA's A100 and H100 SXM data sheets (bf16 dense 312 and 989 TFLOP/s, fp8 1979;
///   HBM2e 2.039 TB/s, HBM3 3.35 TB/s); SMs: the Ampere and Hopper whitepapers (108, 132).
/// - hbm_bytes: what CUDA gives a process of the "80 GB" (80 GiB of HBM, less the driver's
///   reserve), as PyTorch's out-of-memory message states the device's total capacity: an A100
///   80GB 79.35 GiB, an H100 80GB HBM3 79.11 GiB (e.g. vllm-project/vllm#27508). A job holds
///   the CUDA context and the allocator's reserve within it (plan::allocatable_bytes).
/// - matmul_share: the maximum achievable matmul FLOP/s measured by stas00/ml-engineering's
///   mamf-finder (compute/accelerator/README.md): A100 SXM bf16 271.2, H100 SXM bf16 794.5 and
///   fp8 1402.6 TFLOP/s (of 1979: 70.9 %).
/// - tile: 256 x 128, the large-GEMM tile of NVIDIA's "Matrix Multiplication Background"
///   guide (§2.3) and of arXiv 2401.14489's wave analysis.
/// - flash attention (causal, head dim 128, by sequence length): A100, FlashAttention-2's
///   forward and backward together (arXiv 2307.08691, Fig. 4d: 99, 133, 155, 173, 182, 189
///   TFLOP/s at 512 ... 16k tokens), for either pass; H100, FlashAttention-3's forward (arXiv
///   2407.08608, Fig. 5: 292, 423, 521, 579, 602, 616) and backward (Fig. 6, published without a
///   causal mask only: 316, 424, 501, 542, 559, 561). Head dim 64: FlashAttention-2's Fig. 4c
///   (88, 119, 140, 156, 165, 171); FlashAttention-3's Fig. 5b forward (197, 265, 371, 420,
///   460, 473) and Fig. 6a backward, without a mask (272, 363, 422, 453, 472, 474). Head dim
///   256: FlashAttention-3's Fig. 5f forward (286, 427, 537, 612, 628, 642); no backward
///   published (head dim 128's), nor any at 256 on the A100.
/// - the H100's other attention libraries, from the same figures (the bars beside
///   FlashAttention-3's): cuDNN's forward (315, 410, 484, 518, 529, 539) and backward (305, 408,
///   465, 499, 518, 516), head dim 64 (225, 288, 334, 363, 379, 388; 266, 348, 395, 417, 432,
///   433), 256 forward (308, 391, 450, 483, 497, 509); FlashAttention-2's forward (191, 260,
///   298, 319, 333, 335) and backward (214, 260, 291, 310, 318, 322), head dim 64 (180, 229,
///   262, 284, 295, 299; 198, 238, 264, 279, 287, 291), 256 forward (208, 251, 278, 293, 297,
///   298). On the A100 FlashAttention-2 is what each library runs (Transformer Engine prefers
///   it before Hopper): its flash curves.
/// - hbm_share: a streaming kernel's measured bandwidth — A100 80GB SXM 1.80 of 2.04 TB/s
///   (88 %, Nsight Compute; NVIDIA developer forum, "Trouble to reach peak bandwidth of A100"),
///   H100 SXM coalesced loads 2.8 of 3.35 TB/s (84 %, Nsight Compute).
/// - h800: the H100 SXM's compute and memory (its NVLink is cut; plan/cluster.hpp).
/// - ascend-910b: 313 TFLOP/s fp16, 60 % sustained, 1.6 TB/s (the MindSpeed notes' device); no
///   tile model (`sms` 0), its HBM at the A100's measured share; its memory the data sheet's
///   64 GB (no published figure of what its runtime gives a process was found).
namespace detail {
/// A curve of TFLOP/s at 512, 1k, 2k, 4k, 8k and 16k tokens.
constexpr curve by_tokens(double a, double b, double c, double d, double e, double f) noexcept {
  return {{{{512, a * 1e12},
            {1024, b * 1e12},
            {2048, c * 1e12},
            {4096, d * 1e12},
            {8192, e * 1e12},
            {16384, f * 1e12}}},
          6};
}
}  // namespace detail

inline constexpr device a100_sxm{
    .name = "a100-80g",
    .peak_bf16 = 312e12,
    .matmul_share = 271.2 / 312,
    .sms = 108,
    .hbm_bytes = 79.35 * 1024 * 1024 * 1024,
    .hbm_bytes_per_s = 2.039e12,
    .hbm_share = 1.80 / 2.04,
    .nvlink_by_size = a100_nvlink,
    .flash_forward = detail::by_tokens(99, 133, 155, 173, 182, 189),
    .flash_backward = detail::by_tokens(99, 133, 155, 173, 182, 189),
    .flash_forward_64 = detail::by_tokens(88, 119, 140, 156, 165, 171),
    .flash_backward_64 = detail::by_tokens(88, 119, 140, 156, 165, 171)};
inline constexpr device h100_sxm{
    .name = "h100-sxm",
    .peak_bf16 = 989e12,
    .matmul_share = 794.5 / 989,
    .peak_fp8 = 1979e12,
    .fp8_share = 1402.6 / 1979,
    .sms = 132,
    .hbm_bytes = 79.11 * 1024 * 1024 * 1024,
    .hbm_bytes_per_s = 3.35e12,
    .hbm_share = 2.8 / 3.35,
    .nvlink_by_size = h100_nvlink,
    .flash_forward = detail::by_tokens(292, 423, 521, 579, 602, 616),
    .flash_backward = detail::by_tokens(316, 424, 501, 542, 559, 561),
    .flash_forward_64 = detail::by_tokens(197, 265, 371, 420, 460, 473),
    .flash_backward_64 = detail::by_tokens(272, 363, 422, 453, 472, 474),
    .flash_forward_256 = detail::by_tokens(286, 427, 537, 612, 628, 642),
    .cudnn = {.forward = detail::by_tokens(315, 410, 484, 518, 529, 539),
              .backward = detail::by_tokens(305, 408, 465, 499, 518, 516),
              .forward_64 = detail::by_tokens(225, 288, 334, 363, 379, 388),
              .backward_64 = detail::by_tokens(266, 348, 395, 417, 432, 433),
              .forward_256 = detail::by_tokens(308, 391, 450, 483, 497, 509)},
    .flash2 = {.forward = detail::by_tokens(191, 260, 298, 319, 333, 335),
               .backward = detail::by_tokens(214, 260, 291, 310, 318, 322),
               .forward_64 = detail::by_tokens(180, 229, 262, 284, 295, 299),
               .backward_64 = detail::by_tokens(198, 238, 264, 279, 287, 291),
               .forward_256 = detail::by_tokens(208, 251, 278, 293, 297, 298)}};
inline constexpr device h800 = [] {
  device d = h100_sxm;
  d.name = "h800";
  return d;
}();
inline constexpr device ascend_910b{.name = "ascend-910b",
                                    .peak_bf16 = 313e12,
                                    .matmul_share = 0.6,
                                    .hbm_bytes = 64e9,
                                    .hbm_bytes_per_s = 1.6e12,
                                    .hbm_share = 1.80 / 2.04};

/// The built-in devices, by the name a cluster file's "device" key gives.
inline constexpr const device* devices[] = {&a100_sxm, &h100_sxm, &h800, &ascend_910b};

/// The built-in device called `name`, or nullptr.
constexpr const device* find_device(std::string_view name) noexcept {
  for (const device* d : devices)
    if (d->name == name) return d;
  return nullptr;
}

}  // namespace weft::perf
