// What NCCL's ring collectives reach as a function of the message: nccl-tests' bus bandwidth
// grows with the size (each ring step moves a 1/n slice; small slices pay the protocol's fixed
// costs), from a few percent of the peak at 1 MB to all of it by a gigabyte. A tensor-parallel
// all-gather of one micro-batch's activation (tens to a few hundred MB) runs well below the
// peak a gigabyte-sized test reports. The curves are measured, one per node type, each cited.
#pragma once

#include <weft/perf/curve.hpp>

namespace weft::perf {

/// A measured bus-bandwidth curve (perf/curve.hpp): x the collective's whole buffer (nccl-tests'
/// "size", bytes), y its busbw (bytes/s).
using busbw_curve = curve;

namespace detail {
inline constexpr double MiB = 1024.0 * 1024.0, GB_s = 1e9;
}  // namespace detail

/// One DGX A100 node, 8 GPUs over NVLink 3 / NVSwitch, `all_reduce_perf -b 32k -e 16G -f 2 -g 8`
/// (stas00/ml-engineering, network/README.md, "Real network throughput"; its 1 GiB row:
/// 8203.9 us, algbw 130.88, busbw 229.04 GB/s). The only per-size table of an 8-GPU A100 node
/// we found; an all-gather or reduce-scatter of a buffer moves the same 1/n slices round the
/// same ring, so its shape stands for theirs.
inline constexpr busbw_curve a100_nvlink{{{{1 * detail::MiB, 18.00 * detail::GB_s},
                                           {4 * detail::MiB, 72.33 * detail::GB_s},
                                           {16 * detail::MiB, 106.16 * detail::GB_s},
                                           {32 * detail::MiB, 138.49 * detail::GB_s},
                                           {64 * detail::MiB, 171.54 * detail::GB_s},
                                           {128 * detail::MiB, 176.92 * detail::GB_s},
                                           {256 * detail::MiB, 194.07 * detail::GB_s},
                                           {512 * detail::MiB, 222.72 * detail::GB_s},
                                           {1024 * detail::MiB, 229.04 * detail::GB_s},
                                           {2048 * detail::MiB, 231.41 * detail::GB_s},
                                           {4096 * detail::MiB, 233.88 * detail::GB_s},
                                           {8192 * detail::MiB, 234.61 * detail::GB_s}}},
                                         12};

/// H100 SXM over NVLink 4 / NVSwitch, `all_gather_perf`, out of place (nccl-collectives-bench,
/// results/quiet, NCCL 2.29; four GPUs of an 8-GPU HGX H100 node — no 8-GPU per-size table was
/// found; its 8 GiB row: busbw 343.53 GB/s, near the ~370 GB/s NCCL's developers give for
/// rings on H100, nccl-tests#212). Used for the H800 too (the same GPU and NVSwitch).
inline constexpr busbw_curve h100_nvlink{{{{1 * detail::MiB, 28.22 * detail::GB_s},
                                           {4 * detail::MiB, 81.46 * detail::GB_s},
                                           {16 * detail::MiB, 187.12 * detail::GB_s},
                                           {32 * detail::MiB, 230.47 * detail::GB_s},
                                           {64 * detail::MiB, 258.23 * detail::GB_s},
                                           {128 * detail::MiB, 287.67 * detail::GB_s},
                                           {256 * detail::MiB, 305.56 * detail::GB_s},
                                           {512 * detail::MiB, 317.02 * detail::GB_s},
                                           {1024 * detail::MiB, 327.47 * detail::GB_s},
                                           {2048 * detail::MiB, 333.36 * detail::GB_s},
                                           {4096 * detail::MiB, 341.39 * detail::GB_s},
                                           {8192 * detail::MiB, 343.53 * detail::GB_s}}},
                                         12};

}  // namespace weft::perf
