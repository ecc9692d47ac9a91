// What work costs on a device (weft/perf/): a matmul's tiles in waves over the SMs, its memory
// roof, and the devices' facts. Expected values are worked by hand from the model's definition
// (NVIDIA's "Matrix Multiplication Background": tiles of 256 x 128 outputs, one per SM at a
// time, a partial tile or wave computed whole) and the data sheets, never read off the code.
#include <doctest/doctest.h>

#include <cmath>

#include <weft/perf/collectives.hpp>
#include <weft/perf/device.hpp>
#include <weft/perf/layer.hpp>
#include <weft/perf/matmul.hpp>

using namespace weft;
using namespace weft::perf;

TEST_CASE("the devices' facts, from their data sheets and measurements") {
  CHECK(a100_sxm.matmul_flops(dtype::bf16) == doctest::Approx(271.2e12));
  CHECK(h100_sxm.matmul_flops(dtype::bf16) == doctest::Approx(794.5e12));
  CHECK(h100_sxm.matmul_flops(dtype::fp8) == doctest::Approx(1402.6e12));
  CHECK(a100_sxm.matmul_flops(dtype::fp8) == a100_sxm.matmul_flops(dtype::bf16));  // no fp8 units
  CHECK(a100_sxm.memory_bytes_per_s() == doctest::Approx(2.039e12 * 1.80 / 2.04));
  CHECK(h800.sms == 132);
  CHECK(h800.name == "h800");
}

TEST_CASE("a matmul whose tiles fill whole waves runs at the sustained rate") {
  // 12 x 9 tiles of 256 x 128 = 108: one wave on the A100's 108 SMs; k deep enough that the
  // reads are a fraction of the time.
  const gemm g{.m = 256 * 12, .n = 128 * 9, .k = 8192};
  const gemm_time t = time_of(a100_sxm, g);
  CHECK(t.tiles == 108);
  CHECK(t.waves == 1);
  CHECK(t.time.count() == doctest::Approx(2.0 * 3072 * 1152 * 8192 / 271.2e12));
  CHECK(t.efficiency == doctest::Approx(1));
  CHECK(t.memory < t.math);
}

TEST_CASE("a partial wave leaves SMs idle; a partial tile is computed whole") {
  // One tile more than a wave: two waves for 109 tiles' work.
  const gemm wave_and_one{.m = 256 * 109, .n = 128, .k = 8192};
  const gemm_time w = time_of(a100_sxm, wave_and_one);
  CHECK(w.waves == 2);
  CHECK(w.efficiency == doctest::Approx(109.0 / 216));
  // m = 257: two rows of tiles, the second one row deep — as long as m = 512.
  const gemm_time ragged = time_of(a100_sxm, {.m = 257, .n = 128 * 54, .k = 8192});
  const gemm_time whole = time_of(a100_sxm, {.m = 512, .n = 128 * 54, .k = 8192});
  CHECK(ragged.tiles == 108);
  CHECK(ragged.time == whole.time);
  CHECK(ragged.efficiency == doctest::Approx(257.0 / 512));
}

TEST_CASE("GPT-3 175B's QKV projection at tp 8: 288 tiles in 3 waves") {
  // Korthikanti et al.'s 175B: 2048 tokens, h = 12288, its QKV split 8 ways: 3h/8 = 4608
  // outputs. 8 x 36 = 288 tiles; 288 / 108 = 2.67 waves, run as 3.
  const gemm_time t = time_of(a100_sxm, {.m = 2048, .n = 4608, .k = 12288});
  CHECK(t.tiles == 288);
  CHECK(t.waves == 3);
  CHECK(t.efficiency == doctest::Approx(288.0 / 324));
}

TEST_CASE("a matmul too thin to reuse its reads runs at the memory's bandwidth") {
  // k = 16: 2 x 8192 x 8192 x 16 FLOPs, but it writes 8192 x 8192 bf16 outputs.
  const gemm g{.m = 8192, .n = 8192, .k = 16};
  const gemm_time t = time_of(a100_sxm, g);
  const double bytes = 2.0 * (8192 * 16 * 2 + 8192.0 * 8192);
  CHECK(t.memory.count() == doctest::Approx(bytes / (2.039e12 * 1.80 / 2.04)));
  CHECK(t.time == t.memory);
  // Its FLOPs would take 7.9 us at the sustained rate; the bytes take 74.9 us.
  CHECK(t.efficiency == doctest::Approx(g.flops() / 271.2e12 / t.memory.count()));
  CHECK(t.efficiency == doctest::Approx(0.1057).epsilon(1e-3));
}

TEST_CASE("batched matmuls share the waves; fp8 moves half the bytes at its own rate") {
  // Attention's scores per head: 12 heads of 2048 x 2048 over k = 128, 8 x 16 tiles each.
  const gemm_time scores = time_of(a100_sxm, {.m = 2048, .n = 2048, .k = 128, .batch = 12});
  CHECK(scores.tiles == 1536);
  CHECK(scores.waves == 15);                               // 1536 / 108 = 14.2
  const gemm g{.m = 256 * 12, .n = 128 * 11, .k = 16384};  // 132 tiles: one H100 wave
  const gemm_time bf16 = time_of(h100_sxm, g);
  gemm g8 = g;
  g8.type = dtype::fp8;
  const gemm_time fp8 = time_of(h100_sxm, g8);
  CHECK(bf16.waves == 1);
  CHECK(fp8.time.count() == doctest::Approx(g.flops() / 1402.6e12));
  CHECK(g8.bytes() == doctest::Approx(g.bytes() / 2));
}

TEST_CASE("a device without a tile model runs every shape at its sustained rate") {
  const gemm_time t = time_of(ascend_910b, {.m = 257, .n = 129, .k = 65536});
  CHECK(t.waves == 0);
  CHECK(t.math.count() == doctest::Approx(2.0 * 257 * 129 * 65536 / (313e12 * 0.6)));
}

TEST_CASE("an empty matmul takes no time") {
  CHECK(time_of(a100_sxm, {.m = 0, .n = 128, .k = 128}).time.count() == 0);
  CHECK(time_of(a100_sxm, {.m = 128, .n = 128, .k = 128, .batch = 0}).time.count() == 0);
}

TEST_CASE("a collective's bus bandwidth grows with its size, as nccl-tests measured it") {
  // The A100 node's all_reduce_perf rows (stas00/ml-engineering): 1 MiB 18.00, 64 MiB 171.54,
  // 128 MiB 176.92, 8 GiB 234.61 GB/s. A row's share is its busbw over the 8 GiB row's.
  const weft::perf::busbw_curve& a = weft::perf::a100_nvlink;
  constexpr double MiB = 1 << 20;
  CHECK(a.share(128 * MiB) == doctest::Approx(176.92 / 234.61));
  CHECK(a.share(8192 * MiB) == doctest::Approx(1));
  CHECK(a.share(1e13) == 1);
  // Between rows, linear in log2 of the size: 96 MiB is 0.585 of the way from 64 to 128.
  const double t = std::log2(96.0 / 64);
  CHECK(a.share(96 * MiB) == doctest::Approx((171.54 + t * (176.92 - 171.54)) / 234.61));
  // Below the first row the time stays the first row's: half the bytes, half the bandwidth.
  CHECK(a.share(0.5 * MiB) == doctest::Approx(18.00 / 234.61 / 2));
  // Monotone over the whole range, and no curve is the peak at any size.
  double last = 0;
  for (double bytes = 1024; bytes < 1e11; bytes *= 1.5) {
    CHECK(a.share(bytes) >= last);
    last = a.share(bytes);
  }
  CHECK(weft::perf::busbw_curve{}.share(1e6) == 1);
  CHECK(a.share(0) == 1);  // nothing to move: no share is asked of the link
}

TEST_CASE("fused attention at the rate measured for its length, forward and backward") {
  // A100: FlashAttention-2, causal, head dim 128, forward and backward together (its Fig. 4d):
  // 155 TFLOP/s at 2k tokens, 182 at 8k, 189 at 16k; beyond the table, its nearest row.
  kernel k{"attention", kernel_kind::attention, {}, 0, 1e12, true, false, 2048};
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 155.0));
  k.seq = 16384;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 189.0));
  k.seq = 1 << 20;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 189.0));
  k.seq = 100;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 99.0));
  // Between rows, linear in log2 of the length: 12k is 0.585 of the way from 8k to 16k.
  k.seq = 12288;
  CHECK(time_of(a100_sxm, k, 1).count() ==
        doctest::Approx(1 / (182 + std::log2(1.5) * (189 - 182))));
  // H100: FlashAttention-3's forward (Fig. 5, causal) and backward (Fig. 6) differ: 579 and
  // 542 TFLOP/s at 4k tokens.
  k.seq = 4096;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 579.0));
  k.backward = true;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 542.0));
  // A device without curves: the rate it is given.
  CHECK(time_of(ascend_910b, k, 250e12).count() == doctest::Approx(1 / 250.0));
}

TEST_CASE("fused attention at the rate its library measured") {
  // FlashAttention-3's paper times three libraries on one H100 (Figs. 5 and 6): at 8k tokens,
  // causal, head dim 128, forward FlashAttention-2 333, cuDNN 529, FlashAttention-3 602
  // TFLOP/s; backward 318, 518, 559; head dim 64's forward 295, 379, 460.
  kernel k{"attention", kernel_kind::attention, {}, 0, 1e12, true, false, 8192};
  const auto rate = [&](const device& d) { return 1 / time_of(d, k, 1).count(); };
  using lib = attention_library;
  CHECK(rate(h100_sxm.attending_with(lib::sdpa)) == doctest::Approx(333));
  CHECK(rate(h100_sxm.attending_with(lib::cudnn)) == doctest::Approx(529));
  CHECK(rate(h100_sxm.attending_with(lib::transformer_engine)) == doctest::Approx(529));
  CHECK(rate(h100_sxm.attending_with(lib::flash)) == doctest::Approx(602));
  k.backward = true;
  CHECK(rate(h100_sxm.attending_with(lib::sdpa)) == doctest::Approx(318));
  CHECK(rate(h100_sxm.attending_with(lib::cudnn)) == doctest::Approx(518));
  CHECK(rate(h100_sxm.attending_with(lib::flash)) == doctest::Approx(559));
  k.backward = false;
  k.head_dim = 64;
  CHECK(rate(h100_sxm.attending_with(lib::sdpa)) == doctest::Approx(295));
  CHECK(rate(h100_sxm.attending_with(lib::cudnn)) == doctest::Approx(379));
  CHECK(rate(h100_sxm.attending_with(lib::flash)) == doctest::Approx(460));
  // The A100 runs FlashAttention-2 whichever library calls it (182 TFLOP/s at 8k, Fig. 4d of
  // its paper, head dim 128).
  k.head_dim = 128;
  for (lib l : {lib::transformer_engine, lib::cudnn, lib::flash, lib::sdpa})
    CHECK(rate(a100_sxm.attending_with(l)) == doctest::Approx(182));
}

TEST_CASE("fused attention at the rate measured for its head dimension") {
  // A100, FlashAttention-2's Fig. 4c (causal, head dim 64, forward and backward): 140 TFLOP/s
  // at 2k tokens against head dim 128's 155 (Fig. 4d); between them linear in the head dim;
  // past 128 head dim 128's, the A100's only larger one published.
  kernel k{"attention", kernel_kind::attention, {}, 0, 1e12, true, false, 2048};
  k.head_dim = 64;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 140.0));
  k.head_dim = 32;  // below the published ones: the nearest
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 140.0));
  k.head_dim = 96;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 147.5));
  k.head_dim = 256;
  CHECK(time_of(a100_sxm, k, 1).count() == doctest::Approx(1 / 155.0));
  // H100 at 4k tokens: FlashAttention-3's forward at head dim 64 420 TFLOP/s (Fig. 5b), 128
  // 579 (5d), 256 612 (5f); DeepSeek-V3's 192 halfway between 128 and 256. Its backward at 64
  // 453 (Fig. 6a); none published past 128, where head dim 128's 542 stays.
  k.seq = 4096;
  k.head_dim = 64;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 420.0));
  k.head_dim = 192;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 595.5));
  k.backward = true;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 542.0));
  k.head_dim = 64;
  CHECK(time_of(h100_sxm, k, 1).count() == doctest::Approx(1 / 453.0));
  // A layer's fused attention carries its queries' head dim: GPT-2's 64.
  transformer m;
  m.layers = 1;
  m.hidden = 768;
  m.heads = m.kv_heads = 12;
  m.head_dim = 64;
  m.ffn = 3072;
  m.vocab = 50257;
  const layer_kernels ks = layer_kernels_of(m, 0, {.micro_batch = 1, .seq = 1024});
  bool seen = false;
  for (const kernel& x : ks.forward)
    if (x.kind == kernel_kind::attention) {
      CHECK(x.head_dim == 64);
      seen = true;
    }
  CHECK(seen);
}
