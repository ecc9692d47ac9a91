// A model's work and memory: FLOPs against Korthikanti et al. 2022's and Narayanan et al.
// 2021's closed forms, a layer's activations against Korthikanti et al.'s (arXiv 2205.05198,
// section 4 and Table 2), and the model states of mixed-precision Adam.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>

#include <weft/plan/estimate.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/flops.hpp>
#include <weft/plan/memory.hpp>
#include "plan_fixtures.hpp"

using namespace weft::plan;

namespace {
// GPT-3 175B's layer as the paper counts it: hidden 12288, 96 heads, GeLU over 4h, dropout,
// LayerNorm and biases; sequence 2048, one sequence per micro-batch.
transformer gpt3() {
  transformer m;
  m.model_type = "gpt3";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = m.kv_heads = 96;
  m.head_dim = 128;
  m.ffn = 4 * 12288.0;
  m.vocab = 51200;
  m.mlp = mlp_kind::plain;
  m.layer_norm = m.linear_bias = m.dropout = true;
  return m;
}
constexpr double s = 2048, b = 1, h = 12288, a = 96;
}  // namespace

TEST_CASE("a GPT-3 layer's activations: Korthikanti et al.'s closed forms, term by term") {
  const transformer m = gpt3();
  const auto bytes = [&](int t, bool sp, recompute r) {
    return layer_activation_bytes(
        m, 0, {.seq = s, .micro_batch = b, .tp = t, .sequence_parallel = sp, .policy = r});
  };
  // No parallelism: 34sbh + 5as²b.
  CHECK(bytes(1, false, recompute::none) == doctest::Approx(34 * s * b * h + 5 * a * s * s * b));
  for (const int t : {2, 4, 8}) {
    CAPTURE(t);
    // Tensor parallelism: sbh(10 + 24/t + 5as/(ht)).
    CHECK(bytes(t, false, recompute::none) ==
          doctest::Approx(s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t))));
    // With sequence parallelism: (sbh/t)(34 + 5as/h).
    CHECK(bytes(t, true, recompute::none) == doctest::Approx(s * b * h / t * (34 + 5 * a * s / h)));
    // Selective recomputation: sbh(10 + 24/t); with sequence parallelism 34sbh/t.
    CHECK(bytes(t, false, recompute::selective) == doctest::Approx(s * b * h * (10 + 24.0 / t)));
    CHECK(bytes(t, true, recompute::selective) == doctest::Approx(34 * s * b * h / t));
    // Full recomputation: the layer's input, 2sbh (sharded with sequence parallelism).
    CHECK(bytes(t, false, recompute::full) == doctest::Approx(2 * s * b * h));
    CHECK(bytes(t, true, recompute::full) == doctest::Approx(2 * s * b * h / t));
  }
  // The paper's headline: for GPT-3 at t = 8, sequence parallelism and selective recomputation
  // together keep 34sbh/t, about 5x less than tensor parallelism alone keeps.
  CHECK(bytes(8, false, recompute::none) / bytes(8, true, recompute::selective) ==
        doctest::Approx((10 + 24.0 / 8 + 5 * a * s / (h * 8)) / (34.0 / 8)));
}

TEST_CASE("FP8 linears keep their inputs in half the bytes: 27sbh + 5as²b for GPT-3's layer") {
  // Of Korthikanti's 34sbh, the linears' inputs: QKV's (2sbh), the output projection's (2sbh),
  // the first MLP linear's (2sbh) and the second's (8sbh, the GeLU's output over 4h): 14sbh,
  // kept in FP8 half of it. The norms' inputs, Q, K, V, the masks and the scores stay.
  const transformer m = gpt3();
  const auto bytes = [&](int t, bool sp, bool fp8) {
    return layer_activation_bytes(
        m, 0, {.seq = s, .micro_batch = b, .tp = t, .sequence_parallel = sp, .fp8 = fp8});
  };
  CHECK(bytes(1, false, true) == doctest::Approx(27 * s * b * h + 5 * a * s * s * b));
  // With tensor parallelism the QKV and first MLP inputs are replicated (4sbh, of which 2sbh
  // saved), the other two sharded (10sbh/t, of which 5sbh/t saved).
  CHECK(bytes(8, false, true) ==
        doctest::Approx(s * b * h * (10 - 2 + (24.0 - 5) / 8 + 5 * a * s / (h * 8))));
  CHECK(bytes(8, true, true) == doctest::Approx(s * b * h / 8 * (27 + 5 * a * s / h)));
  // Full recomputation keeps the layer's input only, in bf16 as before.
  CHECK(layer_activation_bytes(
            m, 0, {.seq = s, .micro_batch = b, .tp = 8, .policy = recompute::full, .fp8 = true}) ==
        doctest::Approx(2 * s * b * h));
}

TEST_CASE("activations beyond GPT-3: no dropout, flash attention, grouped-query, gated, experts") {
  transformer m = gpt3();
  m.dropout = false;  // no masks: 2 + 2 for each block's norm and projection inputs
  const activation_layout one{.seq = s, .micro_batch = b};
  // Without dropout: 32sbh and the softmax output alone, 2as²b.
  CHECK(layer_activation_bytes(m, 0, one) == doctest::Approx(32 * s * b * h + 2 * a * s * s * b));
  // Flash attention keeps a 4-byte statistic per row and head instead of the scores.
  activation_layout flash = one;
  flash.flash_attention = true;
  CHECK(layer_activation_bytes(m, 0, flash) == doctest::Approx(32 * s * b * h + 4 * a * s * b));
  // Grouped-query attention with 8 key/value heads: K and V at 8/96 of h.
  m.kv_heads = 8;
  const double kv = h * 8 / 96;
  CHECK(layer_activation_bytes(m, 0, flash) ==
        doctest::Approx((4 + 4) * s * b * h + 2 * s * b * (h + kv) + 2 * s * b * kv +
                        2 * s * b * h + 16 * s * b * h + 4 * a * s * b));
  // A gated MLP of inner width f keeps 3 x 2sbf inside instead of 2 x 2sbf.
  m.kv_heads = 96;
  m.mlp = mlp_kind::gated;
  m.ffn = 8192;
  CHECK(layer_activation_bytes(m, 0, flash) ==
        doctest::Approx(16 * s * b * h + 6 * s * b * 8192 + 4 * a * s * b));
  // An MoE layer with 8 experts, top-2, experts of width 1024, a shared expert of 2048: each
  // token's two copies (2sbh each), the router's fp32 scores, the experts' and the shared
  // expert's insides.
  m.moe = {.routed = 8, .top_k = 2, .expert_ffn = 1024, .shared_ffn = 2048};
  CHECK(m.is_moe_layer(0));
  CHECK(layer_activation_bytes(m, 0, flash) ==
        doctest::Approx(16 * s * b * h + 2 * 2 * s * b * h + 4 * s * b * 8 +
                        6 * s * b * (2 * 1024 + 2048) + 4 * a * s * b));
  // Context parallelism shards the sequence: half the tokens, half the bytes (flash attention).
  activation_layout cp = flash;
  cp.cp = 2;
  CHECK(layer_activation_bytes(m, 0, cp) ==
        doctest::Approx(layer_activation_bytes(m, 0, flash) / 2));
}

TEST_CASE("selective recomputation of Megatron's modules drops what each would keep") {
  using enum weft::perf::recompute_module;
  transformer m = gpt3();
  const activation_layout core{.seq = s, .micro_batch = b, .policy = recompute::selective};
  // Attention's core (Megatron's default): Korthikanti's 34sbh without the 5as²b of scores.
  CHECK(layer_activation_bytes(m, 0, core) == doctest::Approx(34 * s * b * h));
  // The two input norms' outputs too: each was the next linears' 2sbh input.
  activation_layout norms = core;
  norms.modules = weft::perf::bit(core_attn) | weft::perf::bit(layernorm);
  CHECK(layer_activation_bytes(m, 0, norms) == doctest::Approx(30 * s * b * h));
  // A dense MLP's insides (GeLU over 4h: its input and the second linear's, 16sbh); its own
  // input stays, the norm's output it was computed from.
  activation_layout mlp_too = core;
  mlp_too.modules = weft::perf::bit(core_attn) | weft::perf::bit(mlp);
  CHECK(layer_activation_bytes(m, 0, mlp_too) == doctest::Approx(18 * s * b * h));
  // Nothing at all: the scores stay too.
  activation_layout nothing = core;
  nothing.modules = 0;
  CHECK(layer_activation_bytes(m, 0, nothing) ==
        doctest::Approx(34 * s * b * h + 5 * a * s * s * b));
  // Multi-latent attention's up projections: Q and K of 192 (128 + 64 rotary) and V of 128 per
  // head, 2sb x 128 x (2 x 192 + 128) bytes; an MoE layer's experts' activation outputs (their
  // second linears' inputs), 2sb x top-k x width.
  transformer d = m;
  d.heads = d.kv_heads = 128;
  d.mla = {.q_lora_rank = 1536,
           .kv_lora_rank = 512,
           .qk_rope_head_dim = 64,
           .qk_nope_head_dim = 128,
           .v_head_dim = 128};
  d.moe = {.routed = 64, .top_k = 6, .expert_ffn = 1408};
  d.mlp = mlp_kind::gated;
  activation_layout up = core;
  up.modules = weft::perf::bit(core_attn) | weft::perf::bit(mla_up_proj);
  CHECK(layer_activation_bytes(d, 0, core) - layer_activation_bytes(d, 0, up) ==
        doctest::Approx(2 * s * b * 128 * (2 * 192 + 128)));
  activation_layout act = core;
  act.modules = weft::perf::bit(core_attn) | weft::perf::bit(moe_act);
  CHECK(layer_activation_bytes(d, 0, core) - layer_activation_bytes(d, 0, act) ==
        doctest::Approx(2 * s * b * 6 * 1408));
  // FP8 kept the norms' outputs in half: recomputed, neither copy stays.
  activation_layout fp8 = core, fp8_norms = norms;
  fp8.fp8 = fp8_norms.fp8 = true;
  CHECK(layer_activation_bytes(m, 0, fp8) - layer_activation_bytes(m, 0, fp8_norms) ==
        doctest::Approx(2 * s * b * h));
}

TEST_CASE("torchtitan's per-op checkpointing keeps what its policy saves, runs the rest again") {
  // A Llama-style layer: hidden 1024 (8 heads of 128, 2 key-value heads: 256 wide), SwiGLU over
  // 4096; one 1024-token sequence. torchtitan's policy (its _save_list, every second aten.mm
  // in call order not saved) keeps the layer's input, wq's, wv's, w1's and w2's outputs,
  // attention's output and its fp32 statistic: 2 bytes x 1024 tokens x (1024 + 1024 + 256 +
  // 4096 + 1024 + 1024) + 4 bytes x 1024 x 8 heads.
  transformer m = testing::tiny_dense(2);
  m.mlp = mlp_kind::gated;
  m.kv_heads = 2;
  activation_layout a{.seq = 1024, .policy = recompute::selective, .ops = true};
  CHECK(layer_activation_bytes(m, 0, a) == 2.0 * 1024 * 8448 + 4.0 * 1024 * 8);
  // Under FP8 the matmuls are _scaled_mm, not on the list: the input, attention's output and
  // statistic.
  a.fp8 = true;
  CHECK(layer_activation_bytes(m, 0, a) == 2.0 * 1024 * 2048 + 4.0 * 1024 * 8);
  // tp 2 with sequence parallelism: the input on its shard, the heads and widths halved, w2's
  // partial sums whole, and the two reduce-scatters' outputs on their shards.
  a.fp8 = false;
  a.tp = 2;
  a.sequence_parallel = true;
  CHECK(layer_activation_bytes(m, 0, a) ==
        2.0 * 1024 * (512 + 512 + 128 + 2048 + 512 + 1024 + 2 * 512) + 4.0 * 1024 * 4);
  // Less than Megatron's selective recomputation keeps, more than full recomputation.
  activation_layout megatron{.seq = 1024, .policy = recompute::selective};
  activation_layout whole{.seq = 1024, .policy = recompute::full};
  a = {.seq = 1024, .policy = recompute::selective, .ops = true};
  CHECK(layer_activation_bytes(m, 0, a) < layer_activation_bytes(m, 0, megatron));
  CHECK(layer_activation_bytes(m, 0, a) > layer_activation_bytes(m, 0, whole));

  // Time: it runs again every elementwise kernel of the forward and wk, wo and w3 — 2 x 1024
  // tokens x 1024 x (256 + 1024 + 4096) FLOPs a layer at the ideal device's 1 PFLOP/s, two
  // layers on the one stage. With the memory-bound kernels free, that is all of it.
  const cluster c = testing::ideal_cluster();
  job j;
  j.seq = 1024;
  j.policy = recompute::selective;
  j.recompute_ops = true;
  const estimate_options o{.matmul_shapes = false, .memory_bound = false, .launches = false};
  const double mm = 2.0 * 1024 * 1024 * (256 + 1024 + 4096) / 1e15;
  CHECK(estimate_job(m, j, c, o).stages[0].backward.recompute.count() == doctest::Approx(2 * mm));
  // With them priced, the layers' elementwise kernels too: what full recomputation runs again
  // less attention's forward and the four matmuls whose outputs it saves (wq, wv, w1, w2:
  // 2 x 1024 tokens x 1024 x (1024 + 256 + 4096 + 4096) FLOPs a layer).
  const estimate_options priced{.matmul_shapes = false, .launches = false};
  const estimate ops = estimate_job(m, j, c, priced);
  j.recompute_ops = false;
  j.policy = recompute::full;
  const estimate full = estimate_job(m, j, c, priced);
  const double saved = 2.0 * 1024 * 1024 * (1024 + 256 + 4096 + 4096) / 1e15;
  CHECK(ops.stages[0].backward.recompute.count() ==
        doctest::Approx(full.stages[0].backward.recompute.count() -
                        full.stages[0].forward.attention.count() - 2 * saved));
  // Its own selective recomputation; a Llama block only, its norms sharded with tp.
  j.recompute_ops = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, j, c), doctest::Contains("--recompute selective"),
                       weft::config_error);
  j.policy = recompute::selective;
  CHECK_THROWS_WITH_AS(estimate_job(testing::tiny_dense(2), j, c),
                       doctest::Contains("not this model's MLP"), weft::config_error);
  transformer biased = m;
  biased.qkv_bias = true;
  CHECK_THROWS_WITH_AS(estimate_job(biased, j, c), doctest::Contains("biased linears"),
                       weft::config_error);
  job unfused = j;
  unfused.flash_attention = false;
  CHECK_THROWS_WITH_AS(estimate_job(m, unfused, c), doctest::Contains("without flash"),
                       weft::config_error);
  job tp2 = j;
  tp2.tp = 2;
  CHECK_THROWS_WITH_AS(estimate_job(m, tp2, c), doctest::Contains("give --sequence-parallel"),
                       weft::config_error);
  // Not Megatron's: priced as a trainer of its own, PyTorch's attention unless told.
  CHECK(j.own_trainer());
  CHECK(j.attention_kernel() == weft::perf::attention_library::sdpa);
}

TEST_CASE("selective recomputation re-prices exactly the parts it runs again") {
  using enum weft::perf::recompute_module;
  // tiny_dense(2) on one device, one 1024-token sequence: each input norm reads and writes
  // 1024 x 1024 bf16 values, 4 MiB, at the ideal device's 1 TB/s; recomputing them adds two a
  // layer to the backward. Launches free, so the bytes alone count; matmuls at the device's rate
  // whatever their shape (the ideal device's memory would bound these small ones).
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j;
  j.seq = 1024;
  j.policy = recompute::selective;
  const estimate_options o{.matmul_shapes = false, .launches = false};
  const estimate core = estimate_job(m, j, c, o);
  j.recompute_modules = weft::perf::bit(core_attn) | weft::perf::bit(layernorm);
  const estimate norms = estimate_job(m, j, c, o);
  const double norm = 2.0 * 2 * 1024 * 1024 / 1e12;
  CHECK(norms.stages[0].backward.recompute.count() - core.stages[0].backward.recompute.count() ==
        doctest::Approx(2 * 2 * norm));
  CHECK(norms.stages[0].activation_bytes < core.stages[0].activation_bytes);
  // The whole MLP again: its two matmuls (8Th^2 FLOPs at 1 PFLOP/s) and its GeLU (reading
  // and writing 1024 x 4096 values) a layer, and nothing of attention's core.
  j.recompute_modules = weft::perf::bit(mlp);
  const double mlp_time = 2 * 2.0 * 1024 * 1024 * 4096 / 1e15 + 2.0 * 2 * 1024 * 4096 / 1e12;
  CHECK(estimate_job(m, j, c, o).stages[0].backward.recompute.count() ==
        doctest::Approx(2 * mlp_time));
  // Named modules need selective recomputation; MLA's up projections need MLA; Megatron's
  // other modules are refused by name.
  j.policy = recompute::full;
  CHECK_THROWS_WITH_AS(estimate_job(m, j, c),
                       "--recompute-modules names what selective recomputation runs again: it "
                       "needs --recompute selective (Megatron's --recompute-granularity "
                       "selective)",
                       weft::config_error);
  j.policy = recompute::selective;
  j.recompute_modules = weft::perf::bit(mla_up_proj);
  CHECK_THROWS_WITH_AS(estimate_job(m, j, c),
                       "--recompute-modules mla_up_proj: the model has no multi-latent attention "
                       "to recompute the up projections of",
                       weft::config_error);
  CHECK(recompute_modules_of({"layernorm", "moe_act"}, "x") ==
        (weft::perf::bit(layernorm) | weft::perf::bit(moe_act)));
  CHECK_THROWS_WITH_AS(recompute_modules_of({"moe"}, "--recompute-modules"),
                       doctest::Contains("--recompute-modules: weft does not price recomputing "
                                         "'moe'"),
                       weft::config_error);
  CHECK_THROWS_WITH_AS(recompute_modules_of({"norms"}, "--recompute-modules"),
                       doctest::Contains("'norms' is not a module"), weft::config_error);
}

TEST_CASE("model states: 2 + 4 + 12 bytes a parameter, the optimizer's 12 sharded") {
  // Mixed-precision Adam: bf16 weights, fp32 gradients, fp32 master weights and two moments.
  CHECK(model_state_bytes(1e9, 1) == doctest::Approx(18e9));
  // The distributed optimizer over 8 data-parallel ranks: 2 + 4 + 12/8.
  CHECK(model_state_bytes(1e9, 8) == doctest::Approx(7.5e9));
  // Gradients kept in bf16.
  CHECK(model_state_bytes(1e9, 1, dp_sharding::optim, {.gradients = 2}) == doctest::Approx(16e9));
  // Megatron-FSDP's sharding strategies over 8 ranks: nothing (18), the optimizer (7.5), the
  // gradients too (2 + 4/8 + 12/8), the parameters too (18/8).
  CHECK(model_state_bytes(1e9, 8, dp_sharding::no_shard) == doctest::Approx(18e9));
  CHECK(model_state_bytes(1e9, 8, dp_sharding::optim_grads) == doctest::Approx(4e9));
  CHECK(model_state_bytes(1e9, 8, dp_sharding::optim_grads_params) == doctest::Approx(2.25e9));
}

TEST_CASE("model FLOPs: Korthikanti et al.'s 72BLsh^2(1 + s/6h + V/12hL) for GPT-3") {
  const transformer m = gpt3();
  const double B = 8, L = m.layers, V = m.vocab;
  // Per layer forward: QKV and the projection 8Bsh^2, the MLP 16Bsh^2, scores and values 4Bs^2h.
  const layer_flops f = forward_flops(m, 0, B * s, s);
  CHECK(f.projections == doctest::Approx(8 * B * s * h * h));
  CHECK(f.mlp == doctest::Approx(16 * B * s * h * h));
  CHECK(f.scores == doctest::Approx(4 * B * s * s * h));
  const double whole = model_flops(m, B * s, s, attention_count::whole);
  CHECK(whole == doctest::Approx(72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L))));
  // MFU's count: a causal model needs half the scores, 3 x 2Bs^2h a layer less.
  CHECK(model_flops(m, B * s, s) == doctest::Approx(whole - 3 * L * 2 * B * s * s * h));
  // With full recomputation the devices do Narayanan et al.'s 96Bslh^2(1 + s/6h + V/16lh).
  CHECK(whole + recomputed_flops(m, B * s, s, true) ==
        doctest::Approx(96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))));
  CHECK(recomputed_flops(m, B * s, s, false) == 0);
}

TEST_CASE("FLOPs beyond GPT-3: grouped-query, gated, experts, latent attention, MTP") {
  transformer m = gpt3();
  m.kv_heads = 8;
  m.mlp = mlp_kind::gated;
  m.ffn = 8192;
  const double T = 1000;
  const double kv = h * 8 / 96;
  layer_flops f = forward_flops(m, 0, T, s);
  CHECK(f.projections == doctest::Approx(2 * T * h * (h + 2 * kv) + 2 * T * h * h));
  CHECK(f.mlp == doctest::Approx(3 * 2 * T * h * 8192));
  // An MoE layer: the router over 16 experts, top-2 experts of width 1024, a shared one of 2048.
  m.moe = {.routed = 16, .top_k = 2, .expert_ffn = 1024, .shared_ffn = 2048};
  f = forward_flops(m, 0, T, s);
  CHECK(f.router == doctest::Approx(2 * T * h * 16));
  CHECK(f.experts == doctest::Approx(2 * 3 * 2 * T * h * 1024));
  CHECK(f.mlp == doctest::Approx(3 * 2 * T * h * 2048));
  // A token's FLOPs are twice its activated parameters' matmuls plus attention's scores: an
  // MoE model's forward is 2 x (activated parameters without the embedding) per token, the
  // norms and biases aside. DeepSeek-V3-like: latent attention, the scores over a sequence.
  transformer d;
  d.model_type = "deepseek_v3";
  d.layers = 4;
  d.hidden = 7168;
  d.heads = d.kv_heads = 128;
  d.head_dim = 56;
  d.ffn = 18432;
  d.vocab = 129280;
  d.moe = {.routed = 256, .top_k = 8, .expert_ffn = 2048, .shared_ffn = 2048, .first_dense = 1};
  d.mla = {.q_lora_rank = 1536,
           .kv_lora_rank = 512,
           .qk_rope_head_dim = 64,
           .qk_nope_head_dim = 128,
           .v_head_dim = 128};
  d.mtp_layers = 1;
  double scores = 0, matmul_params = activated_parameters(d) - edges(d).embedding;
  for (int l = 0; l < d.layers; ++l) {
    scores += forward_flops(d, l, 1, 4096).scores;
    const parameter_count c = layer_parameters(d, l);
    matmul_params -= c.norms;
  }
  matmul_params -= edges(d).final_norm + d.layers * (1536 + 512);  // the latents' norms
  CHECK(model_flops(d, 1, 4096, attention_count::whole) / 3 - mtp_flops(d, 1, 4096) ==
        doctest::Approx(2 * matmul_params + scores));
  // MFU's count halves every score the whole count has, the MTP layer's among them.
  const double mtp_scores = forward_flops(d, d.layers - 1, 1, 4096).scores;
  CHECK(model_flops(d, 1, 4096) == doctest::Approx(model_flops(d, 1, 4096, attention_count::whole) -
                                                   3 * (scores + mtp_scores) / 2));
}

namespace {
/// The two layers of `testing::tiny_dense(2)` on pp 2, one 1024-token sequence a micro-batch,
/// 2 micro-batches.
job two_stages() {
  job j;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 2;
  return j;
}

// The same on two data-parallel replicas: 2 micro-batches a rank.
job two_stages_two_replicas() {
  job j = two_stages();
  j.dp = 2;
  j.global_batch_size = 4;
  return j;
}
}  // namespace

TEST_CASE("a planned job's stages: FLOPs at the device's rates, memory in bytes, the whole step") {
  // Two layers of hidden 1024 (8 heads, GeLU over 4096, no biases, 1000 tokens of vocabulary)
  // on pp 2, one 1024-token sequence per micro-batch, 2 micro-batches: a device of 1 PFLOP/s
  // that sustains all of it, 1 TB/s of HBM. Matmuls at the sustained rate whatever their shape
  // (perf/matmul.hpp's roof would bound these, 1 PFLOP/s over 1 TB/s being a steep ratio), the
  // memory-bound kernels priced apart (below).
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const job j = two_stages();
  const estimate e =
      estimate_job(m, j, c, {.matmul_shapes = false, .memory_bound = false, .launches = false});
  REQUIRE(e.stages.size() == 2);
  // A layer's forward: projections 8Th^2, MLP 16Th^2, scores 4T s h of which flash attention
  // computes the causal half; the head 2ThV on the last stage. The backward: every weight's
  // matmul twice (dX, dW) and flash attention's backward, 2.5 times its forward (it computes
  // the scores again; FlashAttention-2, arXiv 2307.08691, counts it so).
  const double T = 1024, H = 1024;
  const double weighted = 8 * T * H * H + 16 * T * H * H, causal = 2 * T * 1024 * H;
  const double layer = weighted + causal;
  CHECK(e.stages[0].cost.F.count() == doctest::Approx(layer / 1e15));
  CHECK(e.stages[1].cost.F.count() == doctest::Approx((layer + 2 * T * H * 1000) / 1e15));
  CHECK(e.stages[0].cost.B.count() == doctest::Approx((2 * weighted + 2.5 * causal) / 1e15));
  CHECK(e.stages[0].cost.W.count() == doctest::Approx(weighted / 1e15));
  // Parameters: 4h^2 + 8h^2 + 2 norms of h per layer; the embedding on the first, the final
  // norm and the head on the last.
  CHECK(e.stages[0].params == doctest::Approx(12 * H * H + 2 * H + 1000 * H));
  CHECK(e.stages[1].params == doctest::Approx(12 * H * H + 2 * H + H + 1000 * H));
  // Activations (no dropout, flash attention): 32sbh + 4asb a layer; the embedding's output
  // 2sbh on the first stage, the head's fp32 logits and its input on the last.
  const double per_layer = 32 * T * H + 4 * 8 * T;
  CHECK(e.stages[0].activation_bytes == doctest::Approx(per_layer + 2 * T * H));
  CHECK(e.stages[1].activation_bytes == doctest::Approx(per_layer + 4 * T * 1000 + 2 * T * H));
  // 1F1B on 2 ranks: rank 0 holds its first micro-batch's activations while the second's
  // forward runs, rank 1 one at a time; the states 18 bytes a parameter.
  CHECK(e.memory_per_rank[0] ==
        doctest::Approx(18 * e.stages[0].params + 2 * e.stages[0].activation_bytes));
  CHECK(e.memory_per_rank[1] ==
        doctest::Approx(18 * e.stages[1].params + e.stages[1].activation_bytes));
  // One data-parallel rank: no gradient reduction. The optimizer step at 1 TB/s: the gradients'
  // norm reads 4 bytes a parameter, Adam reads 16 and writes 12, the bf16 copy reads 4 and
  // writes 2, zeroing the fp32 gradients writes 4 — 42.
  CHECK(e.grad_sync.count() == 0);
  CHECK(e.optimizer.count() == doctest::Approx(42 * e.stages[1].params / 1e12));
  CHECK(e.step.count() == doctest::Approx((e.pipeline + e.optimizer).count()));
  // MFU: the model FLOPs of 2 sequences (the causal half of the scores) over the step and 2
  // devices' peak.
  const double needed = 3 * (2 * layer + 2 * T * H * 1000) * 2;
  CHECK(model_flops(m, 2 * T, T) == doctest::Approx(needed));
  CHECK(e.mfu == doctest::Approx(needed / (e.step.count() * 2 * 1e15)));
}

TEST_CASE("a stage's memory-bound kernels: the bytes they move at the HBM's bandwidth") {
  // The same two layers (RMSNorm, rotary, GeLU, no dropout), E = T h elements an activation:
  // each norm reads and writes E (4E bytes in bf16), rotary the queries' and keys' 2E (8E), each
  // residual add reads two and writes one (6E), the GeLU reads and writes the MLP's 4E (16E):
  // 44E bytes a layer's forward. The embedding writes E (2E bytes) on the first stage; the
  // loss reads the bf16 logits and writes fp32 ones (6 T V bytes) on the last.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const job j = two_stages();
  const estimate with = estimate_job(m, j, c, {.matmul_shapes = false, .launches = false}),
                 without = estimate_job(
                     m, j, c, {.matmul_shapes = false, .memory_bound = false, .launches = false});
  const double E = 1024.0 * 1024, T = 1024, V = 1000;
  CHECK((with.stages[0].cost.F - without.stages[0].cost.F).count() ==
        doctest::Approx((44 * E + 2 * E) / 1e12));
  CHECK((with.stages[1].cost.F - without.stages[1].cost.F).count() ==
        doctest::Approx((44 * E + 6 * T * V) / 1e12));
  // Backward: norms read x and dy and write dx (6E each), rotary 8E, the GeLU 3 x 4E x 2 = 24E,
  // the residuals pass their gradient through: 44E; the embedding's gradient 4E, the loss 6TV.
  CHECK((with.stages[0].cost.B - without.stages[0].cost.B).count() ==
        doctest::Approx((44 * E + 4 * E) / 1e12));
  CHECK(with.stages[0].cost.W == without.stages[0].cost.W);  // the dW are matmuls
}

TEST_CASE("data-parallel sharding: the states each rank keeps, what it gathers, what it syncs") {
  // The two layers of the test above on pp 2 x dp 2, one layer a rank, 2 micro-batches a rank.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j = two_stages_two_replicas();
  j.overlap_grad_reduce = true;
  const auto with = [&](dp_sharding s) {
    job x = j;
    x.sharding = s;
    return estimate_job(m, x, c);
  };
  const estimate optim = with(dp_sharding::optim), grads = with(dp_sharding::optim_grads),
                 fsdp = with(dp_sharding::optim_grads_params), whole = with(dp_sharding::no_shard);
  const double p0 = optim.stages[0].params, p1 = optim.stages[1].params;
  // Per parameter: 2 + 4 + 12/2 with the optimizer sharded; 18 for nothing sharded; ZeRO-2's
  // 2 + 4/2 + 12/2 and a layer's fp32 bucket (4) waiting for its reduce-scatter; FSDP's 18/2,
  // the bucket, and two layers' gathered bf16 weights (the one computing, the next).
  CHECK(optim.states_per_rank[0] == doctest::Approx(12 * p0));
  CHECK(whole.states_per_rank[0] == doctest::Approx(18 * p0));
  CHECK(grads.states_per_rank[0] == doctest::Approx((10 + 4) * p0));
  CHECK(fsdp.states_per_rank[0] == doctest::Approx((9 + 4 + 4) * p0));
  // The sync: a reduce-scatter of fp32 gradients and an all-gather of bf16 weights, FSDP's
  // twice (forward and backward); overlapped, a layer's worth of it (the rank's one layer).
  // 2 ranks, tp (1) devices apart: inside a node, at NCCL's bus bandwidth over NVLink (230
  // GB/s on the A100s the cluster copies; the ideal cluster has no device facts, so no curve
  // of that bandwidth by size: the peak whatever the size).
  const auto dp = [&](double) { return weft::link_model{c.intra.alpha, weft::seconds(1 / 230e9)}; };
  const auto sync = [&](double params, double gathers) {
    return (weft::collective::ring_reduce_scatter(dp(4 * params), 2, 4 * params) +
            gathers * weft::collective::ring_all_gather(dp(2 * params), 2, 2 * params))
        .count();
  };
  CHECK(p1 > p0);  // the last rank's head and final norm
  CHECK(optim.grad_sync.count() == doctest::Approx(sync(p1, 1)));
  CHECK(grads.grad_sync.count() == doctest::Approx(sync(p1, 1)));
  // FSDP's every micro-batch (Megatron-FSDP's optim_grads_params): 2 micro-batches a rank
  // gather twice and reduce-scatter once each. With 1024 tokens the rank's compute is too short
  // to hide all but the last micro-batch's layer, so more than that is exposed, never more than
  // the whole; with 32 times the tokens a micro-batch (the same parameters) it hides all but
  // that layer's worth.
  CHECK(fsdp.grad_sync.count() > doctest::Approx(sync(p1, 2)));
  CHECK(fsdp.grad_sync.count() <= doctest::Approx(2 * sync(p1, 2)));
  job longer = j;
  longer.sharding = dp_sharding::optim_grads_params;
  const auto [reduce, gather] = detail::dp_traffic_of(longer, c, p1, 0);
  CHECK(reduce.count() ==
        doctest::Approx(2 * weft::collective::ring_reduce_scatter(dp(4 * p1), 2, 4 * p1).count()));
  CHECK(gather.count() ==
        doctest::Approx(4 * weft::collective::ring_all_gather(dp(2 * p1), 2, 2 * p1).count()));
  longer.seq = 32 * 1024;
  // Exposed: one micro-batch's layer's worth, and the interference of the hidden rest (its
  // compute slower by s / (1 + s) of the time it hides, s the cluster's 0.189).
  const double exposed = estimate_job(m, longer, c).grad_sync.count();
  const double s = c.overlap.compute_slowdown;
  CHECK(exposed >= doctest::Approx(sync(p1, 2)));
  CHECK(exposed <= doctest::Approx(sync(p1, 2) * (1 + 1.05 * s / (1 + s))));
  // The optimizer step: 38 bytes a parameter of the shard (all of them unsharded), and the
  // fp32 gradient buffer zeroed (4 bytes), whole unless the gradients are sharded too.
  CHECK(optim.optimizer.count() == doctest::Approx((38 * p1 / 2 + 4 * p1) / 1e12));
  CHECK(whole.optimizer.count() == doctest::Approx(42 * p1 / 1e12));
  CHECK(grads.optimizer.count() == doctest::Approx(42 * p1 / 2 / 1e12));
  CHECK(fsdp.optimizer.count() == doctest::Approx(42 * p1 / 2 / 1e12));
}

TEST_CASE("a tied embedding on two pipeline ranks: its two copies' gradients all-reduced") {
  // Four layers on pp 2 (two a rank, each rank on its own node: 8 devices apart, tp 8) and a
  // vocabulary of 128,000, with the head reading the embedding: the first rank's embedding and
  // the last's copy of it sum their fp32 gradients after the backward, an all-reduce of two ranks
  // across nodes, exposed — on a DGX A100 over each device's own HDR NIC at NCCL's 24 GB/s (one
  // member a node). Untied, or with both copies on one rank (a V: the embedding and the head on
  // rank 0), none.
  transformer m = testing::tiny_dense(4);
  m.vocab = 128000;
  m.tied_embeddings = true;
  const cluster c = testing::ideal_cluster();
  job j;
  j.tp = 8;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 4;
  const estimate tied = estimate_job(m, j, c);
  const double V = 128000, H = 1024, bytes = 4 * V * H / 8;
  const weft::link_model nic{c.inter.alpha, weft::seconds(1 / 24e9)};
  CHECK(tied.grad_sync.count() ==
        doctest::Approx(weft::collective::ring_all_reduce(nic, 2, bytes).count()));
  CHECK(tied.grad_sync.count() > 0);
  // Between two ranks a ring all-reduce moves the whole buffer once each way: about 4 V h / tp
  // bytes over 24 GB/s.
  CHECK(tied.grad_sync.count() == doctest::Approx(bytes / 24e9).epsilon(0.01));
  // The interleaved schedule: the embedding on rank 0's first chunk, the head on rank 1's last.
  job interleaved = j;
  interleaved.schedule = "interleaved";
  interleaved.chunks = 2;
  CHECK(estimate_job(m, interleaved, c).grad_sync.count() ==
        doctest::Approx(tied.grad_sync.count()));
  // The whole job in one node (pp 4 x tp 2 on 8 devices): over NVLink, NCCL's 230 GB/s (the ideal
  // cluster has no curve by size), not over a NIC.
  job one_node = j;
  one_node.tp = 2;
  one_node.pp = 4;
  const double shard = 4 * V * H / 2;
  const weft::link_model nvlink{c.intra.alpha, weft::seconds(1 / 230e9)};
  CHECK(estimate_job(m, one_node, c).grad_sync.count() ==
        doctest::Approx(weft::collective::ring_all_reduce(nvlink, 2, shard).count()));
  m.tied_embeddings = false;
  CHECK(estimate_job(m, j, c).grad_sync.count() == 0);
  m.tied_embeddings = true;
  for (const char* vee : {"zb-v", "dualpipev"}) {
    job v = j;
    v.schedule = vee;
    CHECK(estimate_job(m, v, c).grad_sync.count() == 0);
  }
}

TEST_CASE("--eager: PyTorch's RMSNorm, gated activation and rotary as a kernel each") {
  // Bytes a value (2 a bf16 value, 4 an fp32 one), op by op as PyTorch runs Llama's reference
  // RMSNorm: x.float(), pow(2), mean, x * rsqrt, back to bf16, times the weight; autograd the
  // weight's product (dy w; dy y summed for dW), the cast, the product's two gradients (g r;
  // g x summed), the mean's, pow's grad * 2 * x.pow(1), the two paths' sum, the cast. Fused:
  // read x, write y; read x and dy, write dx.
  const double norm_forward = (2 + 4) + (4 + 4) + 4 + (4 + 4) + (4 + 2) + (2 + 2);
  const double norm_backward = (2 + 2) + (2 + 2 + 2 + 2) + (2 + 4) + (4 + 4) + (4 + 4 + 4 + 4) + 4 +
                               (4 + 4 + 4 + 4 + 4 + 4 + 4) + (4 + 4 + 4) + (4 + 2);
  // silu then the product: (2 + 2) + (2 + 2 + 2); backward the product's two gradients and
  // silu's, 3 x (2 + 2 + 2); fused 6 and 10. Rotary as a complex product in fp32: a cast in,
  // the product, a cast out, (2 + 4) + (4 + 4) + (4 + 2) either way; fused 4 and 4. A layer of
  // hidden 1024 on 1024 tokens (E = T h values; q and k 2E, the MLP's width 4E) on the first
  // of two stages, at 1 TB/s.
  transformer m = testing::tiny_dense(2);
  m.mlp = mlp_kind::gated;
  const cluster c = testing::ideal_cluster();
  const estimate_options o{.matmul_shapes = false, .launches = false};
  job j = two_stages();
  const estimate fused = estimate_job(m, j, c, o);
  j.eager = true;
  const estimate eager = estimate_job(m, j, c, o);
  const double E = 1024.0 * 1024;
  const double rotary = (2 + 4) + (4 + 4) + (4 + 2);
  const double forward = 2 * (norm_forward - 4) * E + (rotary - 4) * 2 * E + (10 - 6) * 4 * E;
  const double backward = 2 * (norm_backward - 6) * E + (rotary - 4) * 2 * E + (18 - 10) * 4 * E;
  CHECK((eager.stages[0].cost.F - fused.stages[0].cost.F).count() ==
        doctest::Approx(forward / 1e12));
  CHECK((eager.stages[0].cost.B - fused.stages[0].cost.B).count() ==
        doctest::Approx(backward / 1e12));
  // Kept for the backward: each RMSNorm's fp32 input and normalized output, 4 bytes a value
  // more than the fused norm's bf16 input (two norms: 8E); silu's output, 2 bytes over the
  // MLP's width (8E).
  const activation_layout lay{.seq = 1024, .flash_attention = true};
  activation_layout eager_lay = lay;
  eager_lay.eager = true;
  CHECK(layer_activation_bytes(m, 0, eager_lay) - layer_activation_bytes(m, 0, lay) ==
        doctest::Approx(8 * E + 8 * E));
  // LayerNorm is one native kernel, eager or not.
  transformer ln = m;
  ln.layer_norm = true;
  job fused_ln = two_stages();
  CHECK((estimate_job(ln, j, c, o).stages[0].cost.F -
         estimate_job(ln, fused_ln, c, o).stages[0].cost.F)
            .count() == doctest::Approx(((rotary - 4) * 2 * E + (10 - 6) * 4 * E) / 1e12));
  // Each op its own kernel, for the host to launch: the norm's 8 forward and 15 backward.
  const auto kernels_named = [](const std::vector<weft::perf::kernel>& ks, std::string_view n) {
    return std::count_if(ks.begin(), ks.end(), [&](const auto& k) { return k.name == n; });
  };
  const weft::perf::layer_kernels ek =
      weft::perf::layer_kernels_of(m, 0, detail::layer_shard_of(j));
  CHECK(kernels_named(ek.forward, "input norm") == 8);
  CHECK(kernels_named(ek.backward, "input norm") == 15);
  const weft::perf::layer_kernels fk =
      weft::perf::layer_kernels_of(m, 0, detail::layer_shard_of(two_stages()));
  CHECK(kernels_named(fk.forward, "input norm") == 1);
  // Only PyTorch runs it so: weft's flags say it; Megatron's code runs none of it.
  const std::vector<std::string> own = weft_flags(j);
  CHECK(std::find(own.begin(), own.end(), "--eager") != own.end());
  CHECK_FALSE(megatron_arguments(j).has_value());
  CHECK_FALSE(runs(j, runs_on::megatron));
  CHECK(runs(j, runs_on::torchtitan));

  // --fused-rms-norm: the norms one fused kernel (4 and 6 bytes, 1 kernel each way, the fused
  // norm's bf16 input kept), the activation and rotary still eager.
  job norm_fused = j;
  norm_fused.fused_rms_norm = true;
  const estimate nf = estimate_job(m, norm_fused, c, o);
  CHECK((nf.stages[0].cost.F - fused.stages[0].cost.F).count() ==
        doctest::Approx(((rotary - 4) * 2 * E + (10 - 6) * 4 * E) / 1e12));
  CHECK((nf.stages[0].cost.B - fused.stages[0].cost.B).count() ==
        doctest::Approx(((rotary - 4) * 2 * E + (18 - 10) * 4 * E) / 1e12));
  activation_layout nf_lay = eager_lay;
  nf_lay.fused_norm = true;
  CHECK(layer_activation_bytes(m, 0, nf_lay) - layer_activation_bytes(m, 0, lay) ==
        doctest::Approx(8 * E));  // silu's output alone
  const weft::perf::layer_kernels nk =
      weft::perf::layer_kernels_of(m, 0, detail::layer_shard_of(norm_fused));
  CHECK(kernels_named(nk.forward, "input norm") == 1);
  CHECK(kernels_named(nk.forward, "rotary") == 3);
  const std::vector<std::string> nf_flags = weft_flags(norm_fused);
  CHECK(std::find(nf_flags.begin(), nf_flags.end(), "--fused-rms-norm") != nf_flags.end());
  // Without --eager every norm is fused already: refused, by name.
  job alone = two_stages();
  alone.fused_rms_norm = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, alone, c, o), doctest::Contains("it needs --eager"),
                       weft::config_error);
}

TEST_CASE("--eager-loss: the logits gathered over tp, in fp32, PyTorch's cross_entropy") {
  // Per logit, as PyTorch runs `F.cross_entropy(logits.float(), target)`: the cast (read 2,
  // write 4); log_softmax over a row longer than a block keeps on chip reads it for its max,
  // for its sum of exponentials and for the output it writes (3 x 4 + 4); backward nll_loss's
  // gradient written zero-filled (4), log_softmax's summed (4) and then read with the output to
  // write the input's gradient (4 + 4 + 4), the cast back (4 + 2). Megatron's
  // vocabulary-parallel loss on its shard: (2 + 4) and (4 + 2). On the last of two stages, 1024
  // tokens of a vocabulary of 1000, at 1 TB/s.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const estimate_options o{.matmul_shapes = false, .launches = false};
  const double TV = 1024.0 * 1000;
  const double forward = (2 + 4) + (4 + 4 + 4 + 4);
  const double backward = 4 + (4 + 4 + 4 + 4) + (4 + 2);
  for (const int tp : {1, 2}) {
    CAPTURE(tp);
    job j = two_stages();
    j.tp = tp;
    const estimate vocab_parallel = estimate_job(m, j, c, o);
    j.eager_loss = true;
    const estimate eager = estimate_job(m, j, c, o);
    // Whole logits on every rank, gathered in bf16 over tp first (forward only): `all_gather`
    // into a list, copied out of PyTorch's flat buffer (2 + 2), then `torch.cat` (2 + 2);
    // backward each rank's slice of the gradient made contiguous (2 + 2 over its 1/tp).
    const double gather = tp > 1 ? detail::tp_ring(c, j, 2 * TV).count() : 0.0;
    const double copies = tp > 1 ? (2 + 2) + (2 + 2) : 0.0, slice = tp > 1 ? (2 + 2.0) / tp : 0.0;
    CHECK((eager.stages[1].cost.F - vocab_parallel.stages[1].cost.F).count() ==
          doctest::Approx((forward + copies - 6.0 / tp) * TV / 1e12 + gather));
    CHECK((eager.stages[1].cost.B - vocab_parallel.stages[1].cost.B).count() ==
          doctest::Approx((backward + slice - 6.0 / tp) * TV / 1e12));
    CHECK(eager.stages[0].cost.F == vocab_parallel.stages[0].cost.F);  // no loss there
    // Kept: log_softmax's fp32 output over the whole vocabulary (4 bytes a logit, not 4 / tp);
    // for a moment in the backward, two more of its size (nll_loss's gradient, the input's).
    CHECK(eager.stages[1].activation_bytes - vocab_parallel.stages[1].activation_bytes ==
          doctest::Approx(4 * TV - 4 * TV / tp));
    CHECK(eager.states_per_rank[1] - vocab_parallel.states_per_rank[1] == doctest::Approx(8 * TV));
    CHECK(eager.states_per_rank[0] == vocab_parallel.states_per_rank[0]);
    CHECK(eager.memory_per_rank[1] - vocab_parallel.memory_per_rank[1] ==
          doctest::Approx(8 * TV + 4 * TV - 4 * TV / tp));
    // Only PyTorch runs it so; --eager implies it (and does not print it again).
    const std::vector<std::string> own = weft_flags(j);
    CHECK(std::find(own.begin(), own.end(), "--eager-loss") != own.end());
    CHECK_FALSE(megatron_arguments(j).has_value());
    CHECK_FALSE(runs(j, runs_on::megatron));
    job both = j;
    both.eager = true;
    const std::vector<std::string> implied = weft_flags(both);
    CHECK(std::find(implied.begin(), implied.end(), "--eager-loss") == implied.end());
    job implied_only = both;
    implied_only.eager_loss = false;
    CHECK(implied_only.loss_eager());
    CHECK(estimate_job(m, implied_only, c, o).memory_per_rank[1] ==
          estimate_job(m, both, c, o).memory_per_rank[1]);
  }
}

TEST_CASE("--no-gradient-accumulation-fusion: each micro-batch's dW added in a pass of its own") {
  // Without the fused add (Megatron's `main_grad.add_`, PyTorch's AccumulateGrad) every
  // weight's new bf16 gradient is read and the accumulated one read and written: 2 + 4 + 4
  // bytes a weight with fp32 main gradients, 2 + 2 + 2 in 16 bits. A layer of hidden 1024 (GeLU
  // over 4096) has 12 h^2 linear weights (qkv 3h^2, out h^2, fc1 and fc2 4h^2 each); the last
  // stage's head h V more. At 1 TB/s, with the dW: in B and in W alike.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const estimate_options o{.matmul_shapes = false, .launches = false};
  job j = two_stages();
  const estimate fused = estimate_job(m, j, c, o);
  j.gradient_accumulation_fusion = false;
  const estimate apart = estimate_job(m, j, c, o);
  const double h = 1024, V = 1000, layer = 12 * h * h;
  const auto added = [](const estimate& a, const estimate& b, int st) {
    return std::pair{(a.stages[st].cost.B - b.stages[st].cost.B).count(),
                     (a.stages[st].cost.W - b.stages[st].cost.W).count()};
  };
  CHECK(added(apart, fused, 0).first == doctest::Approx(10 * layer / 1e12));
  CHECK(added(apart, fused, 0).second == doctest::Approx(10 * layer / 1e12));
  CHECK(added(apart, fused, 1).second == doctest::Approx(10 * (layer + h * V) / 1e12));
  CHECK(apart.step > fused.step);
  job half = j;
  half.grad_reduce_in_bf16 = true;
  job half_fused = half;
  half_fused.gradient_accumulation_fusion = true;
  CHECK(added(estimate_job(m, half, c, o), estimate_job(m, half_fused, c, o), 0).second ==
        doctest::Approx(6 * layer / 1e12));
  // Sharded gradients (FSDP) add a 1/dp shard after each reduce-scatter: not priced.
  job fsdp = j;
  fsdp.dp = 2;
  fsdp.global_batch_size = 4;
  fsdp.sharding = dp_sharding::optim_grads_params;
  job fsdp_fused = fsdp;
  fsdp_fused.gradient_accumulation_fusion = true;
  CHECK(estimate_job(m, fsdp, c, o).step == estimate_job(m, fsdp_fused, c, o).step);
  // Replayed in both Megatron's arguments and weft's flags; Megatron-FSDP's launch has it once.
  const auto count = [](const std::vector<std::string>& a) {
    return std::count(a.begin(), a.end(), "--no-gradient-accumulation-fusion");
  };
  CHECK(count(*megatron_arguments(j)) == 1);
  CHECK(count(weft_flags(j)) == 1);
  CHECK(count(*megatron_arguments(fsdp)) == 1);
  CHECK(count(*megatron_arguments(fsdp_fused)) == 1);
  CHECK(count(*megatron_arguments(half_fused)) == 0);
}

TEST_CASE("Megatron's --grad-reduce-in-bf16 and --fp8-param-gather: the bytes they save") {
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j = two_stages_two_replicas();
  j.overlap_grad_reduce = true;
  const estimate plain = estimate_job(m, j, c);
  job bf16 = j;
  bf16.grad_reduce_in_bf16 = true;
  const estimate half = estimate_job(m, bf16, c);
  const double p0 = plain.stages[0].params, p1 = plain.stages[1].params;
  // The main gradients in bf16: 2 + 2 + 12/2 bytes a parameter, and reduce-scattered in bf16.
  CHECK(half.states_per_rank[0] == doctest::Approx(10 * p0));
  const auto dp = [&](double) { return weft::link_model{c.intra.alpha, weft::seconds(1 / 230e9)}; };
  CHECK(half.grad_sync.count() ==
        doctest::Approx((weft::collective::ring_reduce_scatter(dp(2 * p1), 2, 2 * p1) +
                         weft::collective::ring_all_gather(dp(2 * p1), 2, 2 * p1))
                            .count()));
  // The layers' weights in FP8 (one byte), the embedding's, head's and final norm's in bf16:
  // rank 0 holds the embedding, rank 1 the head and final norm (or, tied, its copy of the
  // embedding). On
  // devices with FP8 units.
  const cluster& h100 = *find_cluster("h100-sxm");
  job fp8 = j;
  fp8.fp8 = fp8_recipe::hybrid;
  const estimate wide = estimate_job(m, fp8, h100);
  fp8.fp8_param_gather = true;
  const estimate eight = estimate_job(m, fp8, h100);
  const edge_parameters e = edges(m);
  const double edge0 = e.embedding;
  const double edge1 = e.head + e.final_norm + (m.tied_embeddings ? e.embedding : 0);
  CHECK(eight.states_per_rank[0] == doctest::Approx(12 * p0 - (p0 - edge0)));
  CHECK(eight.states_per_rank[1] == doctest::Approx(12 * p1 - (p1 - edge1)));
  CHECK(eight.grad_sync < wide.grad_sync);  // half the layers' weights gathered
  job no_fp8 = j;
  no_fp8.fp8_param_gather = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, no_fp8, c),
                       doctest::Contains("--fp8-param-gather keeps the weights in FP8"),
                       weft::config_error);
}

TEST_CASE("--grad-all-reduce-fp32: Scaling's ZeRO-1, the whole gradients all-reduced in fp32") {
  // Aleph Alpha's Scaling (optimizer/allreduce.py, parameter_group.py): after the backward each
  // bucket of bf16 gradients is flattened, divided by dp, cast to fp32, all-reduced, cast back
  // and copied into the gradients; after Adam on its shard each rank's updated bf16 parameters
  // are all-gathered. Against Megatron's distributed optimizer, which reduce-scatters.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();  // 1e12 bytes/s of memory
  job j;
  j.pp = 2;
  j.dp = 2;
  j.seq = 1024;
  j.global_batch_size = 4;
  j.grad_reduce_in_bf16 = true;
  const estimate megatron = estimate_job(m, j, c);
  job scaling = j;
  scaling.grad_all_reduce_fp32 = true;
  const estimate e = estimate_job(m, scaling, c);
  const double p1 = megatron.stages[1].params;
  REQUIRE(p1 > megatron.stages[0].params);  // rank 1, with the head, is the slowest
  const auto dp = [&](double) { return weft::link_model{c.intra.alpha, weft::seconds(1 / 230e9)}; };
  CHECK(e.grad_sync.count() ==
        doctest::Approx((weft::collective::ring_all_reduce(dp(4 * p1), 2, 4 * p1) +
                         weft::collective::ring_all_gather(dp(2 * p1), 2, 2 * p1))
                            .count()));
  CHECK(e.grad_sync > megatron.grad_sync);
  // Its step, bytes a parameter. Of the whole 16-bit gradients: the bucket's copies, 2+2
  // (flatten), 2+2 (divide), 2+4 and 4+2 (the casts) and 2+2 (into the gradients), 24; unscaled
  // in place (2+2) and read for the norm (2), 6; set to None, not zeroed. Of the shard (half,
  // dp 2): zeros_like 4, the gradient to fp32 2+4, PyTorch's foreach AdamW 80 (weight decay
  // 4+4, lerp 8+4, mul 4+4, addcmul 8+4, sqrt 4+4, div 4+4, add 4+4, addcdiv 12+4), the master
  // weight to 16 bits 4+2: 96.
  CHECK(e.optimizer.count() == doctest::Approx((96 * p1 / 2 + 30 * p1) / 1e12));
  // The same states kept, the gradients in 16 bits; and for a moment the bucket, 16 bits and
  // fp32 of each gradient (fewer than its 5e8). The last stage holds besides the logits its
  // pipeline engine keeps in two output buffers (parallel_module.py reads them with `get`),
  // bf16 and whole: two micro-batches of 1024 tokens, 2 x 1024 x vocab bytes each.
  const double logits = 2 * 1024.0 * m.vocab;
  for (std::size_t r = 0; r < 2; ++r) {
    CHECK(e.states_per_rank[r] - e.buffers_per_rank[r] ==
          doctest::Approx(megatron.states_per_rank[r]));
    CHECK(e.buffers_per_rank[r] ==
          doctest::Approx(6 * megatron.stages[r].params + (r == 1 ? 2 * logits : 0)));
  }
  CHECK(e.pipeline == megatron.pipeline);
  // Its gradients are 16-bit whether or not --grad-reduce-in-bf16 says so.
  job implied = scaling;
  implied.grad_reduce_in_bf16 = false;
  CHECK(estimate_job(m, implied, c).states_per_rank == e.states_per_rank);
  CHECK(estimate_job(m, implied, c).step == e.step);
  // Without data parallelism Scaling returns before any copy or collective: its step only.
  job alone = scaling;
  alone.dp = 1;
  alone.global_batch_size = 2;
  const estimate one = estimate_job(m, alone, c);
  CHECK(one.optimizer.count() == doctest::Approx((96 + 6) * p1 / 1e12));
  CHECK(one.grad_sync == weft::seconds(0));
  CHECK(one.buffers_per_rank[1] == doctest::Approx(2 * logits));  // no bucket: the buffers
  job single = alone;  // one micro-batch: one buffer written
  single.global_batch_size = 1;
  CHECK(estimate_job(m, single, c).buffers_per_rank[1] == doctest::Approx(logits));

  // Its flag, and no Megatron-LM arguments: Megatron's distributed optimizer reduce-scatters.
  const std::vector<std::string> own = weft_flags(scaling);
  CHECK(std::find(own.begin(), own.end(), "--grad-all-reduce-fp32") != own.end());
  CHECK_FALSE(megatron_arguments(scaling).has_value());
  CHECK_FALSE(runs(scaling, runs_on::megatron));
  CHECK(runs(scaling, runs_on::any));
  CHECK(runtime_for(scaling).find("Megatron") == std::string::npos);
  // Scaling's ZeRO-1 only, and after the backward.
  job whole = scaling;
  whole.sharding = dp_sharding::no_shard;
  CHECK_THROWS_WITH_AS(estimate_job(m, whole, c),
                       doctest::Contains("needs the distributed optimizer's sharding "
                                         "(--data-parallel-sharding-strategy optim, the default), "
                                         "not no_shard (--no-distributed-optimizer)"),
                       weft::config_error);
  job overlapped = scaling;
  overlapped.overlap_grad_reduce = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, overlapped, c),
                       doctest::Contains("does not combine with --overlap-grad-reduce"),
                       weft::config_error);
  job context = scaling;  // Scaling has no context parallelism
  context.cp = 2;
  context.dp = 1;
  CHECK_THROWS_WITH_AS(estimate_job(m, context, c),
                       doctest::Contains("neither context nor expert parallelism: it needs --cp 1 "
                                         "and --ep 1, not --cp 2 and --ep 1"),
                       weft::config_error);
  // Its pipeline engine runs 1F1B alone (core/nn/pipeline_schedule/train.py, DeepSpeed's
  // TrainSchedule ported): no other schedule runs, nor is priced.
  CHECK(runtime_for(scaling) == "Aleph Alpha's Scaling (its 1F1B pipeline engine)");
  CHECK_FALSE(runs(scaling, runs_on::torchtitan));  // Scaling runs itself
  job zero_bubble = scaling;
  zero_bubble.schedule = "zb-h1";
  CHECK_FALSE(runs(zero_bubble, runs_on::any));
  CHECK_THROWS_WITH_AS(estimate_job(m, zero_bubble, c),
                       doctest::Contains("whose pipeline engine runs 1F1B: it needs --schedule "
                                         "1f1b, not --schedule zb-h1"),
                       weft::config_error);
}

TEST_CASE("--deepspeed-bf16-optimizer: DeepSpeed's BF16_Optimizer keeps the 16-bit gradients") {
  // DeepSpeed's runtime/bf16_optimizer.py as Megatron-DeepSpeed's bf16 runs use it: after each
  // micro-batch's backward its 16-bit gradients are added into fp32 ones (update_hp_grads, a
  // pass of its own: the 2-byte gradient read, the 4-byte one read and written) and kept until
  // the next backward begins (clear_lp_grads=False): 2 bytes a parameter more than Megatron's
  // distributed optimizer holds, which frees them. Its all-reduce of the whole gradients in bf16
  // moves the bytes of the fp32 reduce-scatter weft prices for Megatron.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const job j = two_stages_two_replicas();
  const estimate megatron = estimate_job(m, j, c);
  job deepspeed = j;
  deepspeed.deepspeed_bf16 = true;
  const estimate e = estimate_job(m, deepspeed, c);
  for (std::size_t r = 0; r < 2; ++r)
    CHECK(e.states_per_rank[r] - megatron.states_per_rank[r] ==
          doctest::Approx(2 * megatron.stages[r].params));
  CHECK(e.grad_sync == megatron.grad_sync);
  // The accumulation pass whatever Megatron's fusion flag says: as Megatron without it, with
  // fp32 main gradients.
  job unfused = j;
  unfused.gradient_accumulation_fusion = false;
  CHECK(e.stages[1].cost.W == estimate_job(m, unfused, c).stages[1].cost.W);
  CHECK(e.stages[1].cost.W > megatron.stages[1].cost.W);
  // Its flag, no Megatron-LM arguments, DeepSpeed's pipeline engine.
  const std::vector<std::string> own = weft_flags(deepspeed);
  CHECK(std::find(own.begin(), own.end(), "--deepspeed-bf16-optimizer") != own.end());
  CHECK_FALSE(megatron_arguments(deepspeed).has_value());
  CHECK(runtime_for(deepspeed) == "Megatron-DeepSpeed (DeepSpeed's 1F1B pipeline engine)");
  job alone = deepspeed;
  alone.pp = 1;
  CHECK(runtime_for(alone) == "Megatron-DeepSpeed (no pipeline)");
  // What it runs with, else refused by name.
  const auto refused = [&](job x, const char* why) {
    CHECK_THROWS_WITH_AS(estimate_job(m, x, c), doctest::Contains(why), weft::config_error);
  };
  job fp16 = deepspeed;
  fp16.fp16 = true;
  refused(fp16,
          "--deepspeed-bf16-optimizer is DeepSpeed's BF16_Optimizer: it trains in bf16: "
          "drop --fp16");
  job sixteen = deepspeed;
  sixteen.grad_reduce_in_bf16 = true;
  refused(sixteen, "it accumulates the gradients in fp32 itself; drop --grad-reduce-in-bf16");
  job fsdp = deepspeed;
  fsdp.sharding = dp_sharding::optim_grads_params;
  refused(fsdp,
          "it needs --data-parallel-sharding-strategy optim, the default, not "
          "optim_grads_params");
  job whole = deepspeed;
  whole.sharding = dp_sharding::no_shard;
  refused(whole, "not no_shard (--no-distributed-optimizer)");
  job scaling = deepspeed;
  scaling.grad_all_reduce_fp32 = true;
  refused(scaling, "drop --grad-all-reduce-fp32");
  job overlapped = deepspeed;
  overlapped.overlap_grad_reduce = true;
  refused(overlapped, "after the backward: drop --overlap-grad-reduce");
  job context = deepspeed;
  context.cp = 2;
  context.dp = 1;
  refused(context, "it needs --cp 1 and --ep 1, not --cp 2 and --ep 1");
  job zero_bubble = deepspeed;
  zero_bubble.schedule = "zb-h1";
  refused(zero_bubble, "DeepSpeed's pipeline engine runs 1F1B: it needs --schedule 1f1b");
}

TEST_CASE("recomputation holds what it makes again until the layer's backward ends") {
  // GPT-3's layer (GeLU over 4h, dropout, no flash attention) keeps 34sbh + 5as^2b bytes a
  // micro-batch (Korthikanti et al. 2022, eq. 1); with full recomputation only its input, 2sbh —
  // and for a moment, while its forward runs again and its backward runs, the rest: 32sbh +
  // 5as^2b beyond the checkpoints, on top of every micro-batch in flight, less what that
  // micro-batch freed before (the layers after it and the loss, whose backwards ran first).
  // Selective recomputation of the core attention makes the scores again: 5as^2b.
  transformer m = testing::tiny_dense(2);
  m.dropout = true;
  const cluster c = testing::ideal_cluster();
  job j = two_stages();
  j.flash_attention = false;
  const double s = 1024, b = 1, h = 1024, a = 8;
  const double scores = 5 * a * s * s * b, rest = 32 * s * b * h + scores;
  CHECK(estimate_job(m, j, c).buffers_per_rank[0] == 0);  // nothing recomputed: no moment
  j.policy = recompute::full;
  const estimate full = estimate_job(m, j, c);
  CHECK(full.stages[0].rematerialized_bytes == doctest::Approx(rest));
  CHECK(full.buffers_per_rank[0] == doctest::Approx(rest));
  // Rank 1's layer is recomputed once the loss has freed its fp32 logits (4 bytes x 1024 tokens
  // x 1000) and the head's input (2sbh).
  const double loss = 4 * s * 1000 + 2 * s * b * h;
  CHECK(full.buffers_per_rank[1] == doctest::Approx(rest - loss));
  // Beside what Scaling's pipeline engine holds through the step, not instead of it: the last
  // stage's output buffers, two micro-batches' bf16 logits (2 x 1024 x 1000 bytes each).
  job scaling = j;
  scaling.grad_all_reduce_fp32 = scaling.grad_reduce_in_bf16 = true;
  CHECK(estimate_job(m, scaling, c).buffers_per_rank[1] ==
        doctest::Approx(2 * (2 * s * 1000) + rest - loss));
  // The moment counts toward the peak: the states as before, the buffers beside them.
  job kept = j;
  kept.policy = recompute::none;
  const estimate whole = estimate_job(m, kept, c);
  CHECK(full.states_per_rank[0] - full.buffers_per_rank[0] ==
        doctest::Approx(whole.states_per_rank[0]));
  // Megatron's block method, on one stage of both layers: the first recomputed, the second kept
  // whole — freed before the first's backward, and more than it makes again: no moment. Both
  // recomputed: the second's, after the loss.
  job block = j;
  block.pp = 1;
  block.recompute_method = "block";
  block.recompute_num_layers = 1;
  CHECK(estimate_job(m, block, c).buffers_per_rank[0] == 0);
  block.recompute_num_layers = 2;
  CHECK(estimate_job(m, block, c).buffers_per_rank[0] == doctest::Approx(rest - loss));
  j.policy = recompute::selective;
  j.recompute_modules = weft::perf::bit(weft::perf::recompute_module::core_attn);
  CHECK(estimate_job(m, j, c).buffers_per_rank[0] == doctest::Approx(scores));
  // Each module at its own backward: with the MLP's insides too (GeLU's input and the second
  // linear's, 2 x 2 x 4sbh), the larger of the two, not their sum.
  j.recompute_modules |= weft::perf::bit(weft::perf::recompute_module::mlp);
  const double mlp = 16 * s * b * h;
  REQUIRE(mlp < scores);
  CHECK(estimate_job(m, j, c).buffers_per_rank[0] == doctest::Approx(scores));
}

TEST_CASE("DeepSpeed's BF16_Optimizer casts each gradient to fp32 for a moment") {
  // After every micro-batch's backward, update_hp_grads adds each 16-bit gradient into its fp32
  // one through an fp32 copy (hp_grad.add_(lp.grad.to(hp_grad.dtype))): the largest parameter's
  // 4 bytes an element at once, when that micro-batch has freed what it kept. With a vocabulary
  // of 64,000 the embedding (64,000 x 1024 on one device) is rank 0's largest and its copy
  // 262 MB, above what a micro-batch keeps there.
  transformer m = testing::tiny_dense(2);
  m.vocab = 64000;
  const cluster c = testing::ideal_cluster();
  job j = two_stages_two_replicas();
  j.deepspeed_bf16 = true;
  const estimate e = estimate_job(m, j, c);
  const double cast = 4 * 64000.0 * 1024;
  REQUIRE(cast > e.stages[0].activation_bytes);
  CHECK(e.buffers_per_rank[0] == doctest::Approx(cast - e.stages[0].activation_bytes));
  // The head's weight is as large on the last rank, but a micro-batch keeps more there: its
  // fp32 logits alone, 4 x 1024 tokens x 64,000, are the size of the copy. No moment beyond.
  REQUIRE(cast < e.stages[1].activation_bytes);
  CHECK(e.buffers_per_rank[1] == 0);
  m.vocab = 1000;  // small: rank 0's largest, the first linear's 4 x 4096 x 1024 bytes, is below
  const estimate small = estimate_job(m, j, c);
  REQUIRE(4 * 4096.0 * 1024 < small.stages[0].activation_bytes);
  CHECK(small.buffers_per_rank[0] == 0);
  j.deepspeed_bf16 = false;  // Megatron's distributed optimizer adds them in fp32 in place
  m.vocab = 64000;
  CHECK(estimate_job(m, j, c).buffers_per_rank[0] == 0);
}

TEST_CASE("Megatron's --fp16: its gradients copied to fp32 and unscaled before the step") {
  // Megatron's optimizer (megatron/core/optimizer), kernel by kernel, bytes a parameter with
  // nothing sharded: fp32 gradients 4 (norm) + 28 (Adam) + 6 (weights to 16 bits) + 4 (zeroed)
  // = 42; 16-bit ones first copied to fp32 (2 read, 4 written) and zeroed in 2: 46; fp16's
  // scaler unscales and checks each fp32 gradient (4 read, 4 written): 54, or 50 with fp32
  // gradients.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();  // 1e12 bytes/s of memory
  job j;
  j.pp = 2;
  j.dp = 2;
  j.seq = 1024;
  j.global_batch_size = 4;
  j.sharding = dp_sharding::no_shard;
  const estimate plain = estimate_job(m, j, c);
  const double p1 = plain.stages[1].params;
  const auto optimizer_of = [&](bool fp16, bool half_gradients) {
    job k = j;
    k.fp16 = fp16;
    k.grad_reduce_in_bf16 = half_gradients;
    const estimate e = estimate_job(m, k, c);
    CHECK(e.pipeline == plain.pipeline);  // the same tensor-core rate and bytes as bf16
    return e.optimizer.count();
  };
  CHECK(optimizer_of(false, false) == doctest::Approx(42 * p1 / 1e12));
  CHECK(optimizer_of(false, true) == doctest::Approx(46 * p1 / 1e12));
  CHECK(optimizer_of(true, true) == doctest::Approx(54 * p1 / 1e12));
  CHECK(optimizer_of(true, false) == doctest::Approx(50 * p1 / 1e12));

  // Replayed as fp16, never as bf16: Megatron's --fp16, its gradients' precision in its words.
  const auto has = [](const std::vector<std::string>& a, std::string_view flag) {
    return std::find(a.begin(), a.end(), flag) != a.end();
  };
  job fp16 = j;
  fp16.fp16 = fp16.grad_reduce_in_bf16 = true;
  const std::vector<std::string> megatron = *megatron_arguments(fp16), own = weft_flags(fp16);
  CHECK(has(megatron, "--fp16"));
  CHECK_FALSE(has(megatron, "--bf16"));
  CHECK_FALSE(has(megatron, "--grad-reduce-in-bf16"));
  CHECK(has(own, "--fp16"));
  CHECK_FALSE(has(own, "--grad-reduce-in-bf16"));
  fp16.grad_reduce_in_bf16 = false;
  CHECK(has(*megatron_arguments(fp16), "--accumulate-allreduce-grads-in-fp32"));
  CHECK(has(weft_flags(fp16), "--accumulate-allreduce-grads-in-fp32"));
  CHECK(has(*megatron_arguments(j), "--bf16"));
  // torchtitan trains in bf16: an fp16 job is Megatron's alone.
  CHECK(runs(fp16, runs_on::megatron));
  CHECK_FALSE(runs(fp16, runs_on::torchtitan));
}

TEST_CASE("Megatron's parallel folding: whole experts, their ranks over tp's, the same work") {
  // 8 experts of width 1024, top-2, on tp 2 x dp 2: ep 2 with the experts tp-sharded as the
  // dense layers (Megatron's default), or ep 4 folded over the tensor-parallel ranks with each
  // expert whole (--expert-tensor-parallel-size 1).
  transformer m = testing::tiny_dense(2);
  m.moe.routed = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 1024;
  const cluster c = testing::ideal_cluster();
  job j;
  j.tp = 2;
  j.dp = 2;
  j.seq = 1024;
  j.sequence_parallel = true;
  j.ep = 2;
  job folded = j;
  folded.ep = 4;
  folded.expert_tp = 1;
  CHECK(folded.expert_dp() == 1);
  CHECK(folded.expert_stride() == 1);
  CHECK(j.expert_dp() == 1);
  CHECK(j.expert_stride() == 2);
  // The experts' matmuls: the same FLOPs a device, shaped as each runs them — half the tokens a
  // device, each expert whole.
  const auto experts = [&](const job& x) {
    double flops = 0, widest = 0;
    for (const weft::perf::kernel& k :
         weft::perf::layer_kernels_of(m, 0, detail::layer_shard_of(x)).forward)
      if (k.name.starts_with("experts") && k.kind == weft::perf::kernel_kind::matmul) {
        flops += k.shape.flops();
        widest = std::max({widest, k.shape.m, k.shape.n, k.shape.k});
      }
    return std::pair{flops, widest};
  };
  CHECK(experts(folded).first == doctest::Approx(experts(j).first));
  CHECK(experts(folded).second == 1024);  // the whole expert's width
  // Each device holds its 8 / 4 experts whole: the same bytes as 8 / 2 halves.
  const estimate a = estimate_job(m, j, c), b = estimate_job(m, folded, c);
  const double expert = layer_parameters(m, 0).experts;
  CHECK(a.stages[0].expert_params == doctest::Approx(2 * expert / 2 / 2));
  CHECK(b.stages[0].expert_params == doctest::Approx(2 * expert / 1 / 4));
  // The tensor-parallel collectives of an MoE layer, one micro-batch's forward: the attention
  // block's gather and scatter of the activation (sequence parallelism), then Megatron's
  // dispatcher's around the experts — over tp, of what the all-to-all brought (top-2 copies of
  // each token), and none at all around whole experts.
  const double act = 1024 * 1024 * 2;  // tokens x hidden, bf16
  const auto gather_scatter = [&](double bytes) {
    return weft::collective::tensor_parallel_block(collective_link(c, 2, 1, bytes), 2, bytes, true);
  };
  CHECK(detail::layer_comm_of(m, j, c, 0).tp.count() ==
        doctest::Approx((gather_scatter(act) + gather_scatter(2 * act)).count()));
  CHECK(detail::layer_comm_of(m, folded, c, 0).tp.count() ==
        doctest::Approx(gather_scatter(act).count()));
  CHECK(b.breakdown.front().work.tp < a.breakdown.front().work.tp);
  // A shared expert keeps the dense layers' tensor parallelism, and its gather and scatter.
  m.moe.shared_ffn = 1024;
  CHECK(detail::layer_comm_of(m, folded, c, 0).tp.count() ==
        doctest::Approx(2 * gather_scatter(act).count()));
}

TEST_CASE("sequence parallelism's backward gathers each column-parallel input again") {
  // Megatron's column-parallel linear keeps its input's sequence shard and all-gathers the
  // whole input again in the backward for the weight gradient: one all-gather more per
  // attention block and dense MLP than the forward's mirror (an all-gather and a
  // reduce-scatter a block); none without sequence parallelism, where the all-reduces mirror.
  transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j;
  j.tp = 2;
  j.seq = 1024;
  j.sequence_parallel = true;
  const double act = 1024 * 1024 * 2;  // tokens x hidden, bf16
  const double gather =
      weft::collective::ring_all_gather(collective_link(c, 2, 1, act), 2, act).count();
  const auto extra = [&](const transformer& mm, const job& jj) {
    const stage_estimate& st = estimate_job(mm, jj, c).stages[0];
    return (st.backward.tp - st.forward.tp).count();
  };
  CHECK(extra(m, j) == doctest::Approx(2 * 2 * gather));  // 2 layers x 2 blocks
  job plain = j;
  plain.sequence_parallel = false;
  CHECK(extra(m, plain) == doctest::Approx(0));
  // An MoE layer's routed experts gather through the dispatcher, which keeps what it gathered:
  // only the attention's again — and a shared expert's, a dense MLP of its own.
  m.moe.routed = 4;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 1024;
  CHECK(extra(m, j) == doctest::Approx(2 * 1 * gather));
  m.moe.shared_ffn = 1024;
  CHECK(extra(m, j) == doctest::Approx(2 * 2 * gather));
  // Latent attention (Megatron's multi_latent_attention.py): the down projections work on each
  // device's tokens; the up projections' column-parallel inputs — the query's latent and the
  // keys' and values' — are gathered (the keys' rotary part too, in the forward) and gathered
  // again in the backward; the output is scattered at the model's width.
  transformer mla = testing::tiny_dense(2);
  mla.mla = {.q_lora_rank = 256,
             .kv_lora_rank = 128,
             .qk_rope_head_dim = 32,
             .qk_nope_head_dim = 96,
             .v_head_dim = 128};
  const auto ag = [&](double width) {
    const double bytes = 1024 * 2 * width;
    return weft::collective::ring_all_gather(collective_link(c, 2, 1, bytes), 2, bytes).count();
  };
  CHECK(detail::layer_comm_of(mla, j, c, 0).tp.count() ==
        doctest::Approx(ag(256 + 128 + 32) + ag(1024) + 2 * ag(1024)));
  CHECK(detail::layer_comm_of(mla, j, c, 0).regather.count() ==
        doctest::Approx(ag(256 + 128) + ag(1024)));
  mla.mla.q_lora_rank = 0;  // queries projected from the hidden states, gathered whole
  CHECK(detail::layer_comm_of(mla, j, c, 0).regather.count() ==
        doctest::Approx(ag(1024 + 128) + ag(1024)));
}

TEST_CASE("--tp-comm-overlap: each dense linear's collective beside its GEMM") {
  // Transformer Engine's userbuffers with its defaults: a column-parallel linear (qkv, fc1)
  // gathers its input by ring exchange (tp GEMMs of 1/tp of the tokens, each but the last
  // beside one shard's transfer) and in the backward gathers it again beside the input
  // gradient's GEMM and reduce-scatters that gradient beside the weight gradient's; a
  // row-parallel one (proj, fc2) reduce-scatters its output in 4 pipelined splits and gathers
  // its output's gradient by ring exchange. A GEMM runs x slower while a collective is in flight.
  const transformer m = testing::tiny_dense(1);
  cluster c = testing::ideal_cluster();
  c.device.memory_bytes_per_s = 1e15;  // every GEMM bound by its FLOPs: 1e15 FLOP/s
  c.intra.alpha = weft::seconds(0);    // collectives by bandwidth alone
  job j;
  j.tp = 2;
  j.seq = 1024;
  j.sequence_parallel = true;
  job on = j;
  on.tp_comm_overlap = true;
  const double T = 1024, act = T * 1024 * 2;
  const auto gemm = [&](double n, double k) { return 2 * T * n * k / 1e15; };
  const double qkv = gemm(1536, 1024), proj = gemm(1024, 512), fc1 = gemm(2048, 1024),
               fc2 = gemm(1024, 2048);
  const auto ag = [&](double bytes) {
    return weft::collective::ring_all_gather(collective_link(c, 2, 1, bytes), 2, bytes).count();
  };
  const auto tp_of = [&](const job& x) {
    const stage_estimate& st = estimate_job(m, x, c).stages[0];
    return std::pair{st.forward.tp.count(), st.backward.tp.count()};
  };
  // Serial: a gather and a scatter a block forward; mirrored backward, and the gathers again.
  CHECK(tp_of(j).first == doctest::Approx(4 * ag(act)));
  CHECK(tp_of(j).second == doctest::Approx(6 * ag(act)));

  // Links far faster than the GEMMs: what stays is each pipelined scatter's last split, and
  // the GEMMs' slowdown while the collectives run (x / (1 + x) of each collective's time).
  c.fabric.nvlink_busbw = 1e14;
  const double x = c.overlap.compute_slowdown, slowed = x / (1 + x);
  REQUIRE(x > 0);
  const double a = ag(act), split = ag(act / 4);
  REQUIRE(a < qkv / 2);
  const double forward_block = a * slowed + split + 3 * split * slowed;
  CHECK(tp_of(on).first == doctest::Approx(2 * forward_block).epsilon(1e-9));
  CHECK(tp_of(on).second == doctest::Approx(2 * 3 * a * slowed).epsilon(1e-9));

  // Links far slower: every collective exposed but for the GEMM time it overlaps — half a
  // 2-way ring's GEMM, three of the four splits, the bulk GEMMs whole.
  c.fabric.nvlink_busbw = 1e9;
  const double slow = ag(act);
  REQUIRE(4 * ag(act / 4) == doctest::Approx(slow));
  CHECK(tp_of(on).first ==
        doctest::Approx(2 * slow - qkv / 2 - 0.75 * proj + 2 * slow - fc1 / 2 - 0.75 * fc2));
  CHECK(tp_of(on).second ==
        doctest::Approx(3 * slow - proj / 2 - qkv - qkv + 3 * slow - fc2 / 2 - fc1 - fc1));

  // Over 4 devices a ring takes 3 steps of a third of the gather each, beside GEMMs of a quarter
  // of the tokens: three quarters of each ring's GEMM hide its gather.
  job four = on;
  four.tp = 4;
  const double slow4 =
      weft::collective::ring_all_gather(collective_link(c, 4, 1, act), 4, act).count();
  const double qkv4 = gemm(768, 1024), proj4 = gemm(1024, 256), fc14 = gemm(1024, 1024),
               fc24 = gemm(1024, 1024);
  const auto tp4 = [&] {
    const stage_estimate& st = estimate_job(m, four, c).stages[0];
    return std::pair{st.forward.tp.count(), st.backward.tp.count()};
  }();
  CHECK(tp4.first == doctest::Approx(4 * slow4 - 0.75 * (qkv4 + proj4 + fc14 + fc24)));
  CHECK(tp4.second ==
        doctest::Approx(6 * slow4 - 0.75 * proj4 - 2 * qkv4 - 0.75 * fc24 - 2 * fc14));

  // FP8: the gathers move the FP8 copy the GEMMs read, half the bytes; the reduce-scatters stay
  // bf16 — serial (a block's input gathered, its output scattered; backward the input's
  // gradient scattered, the output's gradient and the input gathered) and overlapped alike.
  // (FP8 at bf16's rate here, so the GEMMs take as long.)
  c.chip.peak_fp8 = 1e15;
  c.chip.fp8_share = 1;
  job fp8 = on;
  fp8.fp8 = fp8_recipe::hybrid;
  const double half = ag(act / 2);
  job fp8_serial = fp8;
  fp8_serial.tp_comm_overlap = false;
  CHECK(tp_of(fp8_serial).first == doctest::Approx(2 * (half + slow)));
  CHECK(tp_of(fp8_serial).second == doctest::Approx(2 * (slow + 2 * half)));
  CHECK(tp_of(fp8).first ==
        doctest::Approx(half - qkv / 2 + slow - 0.75 * proj + half - fc1 / 2 + slow - 0.75 * fc2));
  CHECK(tp_of(fp8).second == doctest::Approx(half - proj / 2 + half - qkv + slow - qkv + half -
                                             fc2 / 2 + half - fc1 + slow - fc1));

  // A schedule that defers the weight gradients leaves the backward's reduce-scatter nothing to
  // hide behind: refused, as Megatron's schedules keep each backward whole.
  job deferred = on;
  deferred.pp = 2;
  deferred.schedule = "zb-h1";
  CHECK_THROWS_WITH_AS(estimate_job(testing::tiny_dense(2), deferred, c),
                       doctest::Contains("which --schedule zb-h1 runs apart"), weft::config_error);

  // Megatron's rule: sequence parallelism (and so tp above 1).
  job alone = on;
  alone.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(estimate_job(m, alone, c),
                       doctest::Contains("needs --tp above 1 and --sequence-parallel"),
                       weft::config_error);
  // The flags that replay it, weft's and Megatron's.
  CHECK(joined(weft_flags(on)).find("--tp-comm-overlap") != std::string::npos);
  on.runtime = pipeline_runtime::megatron;
  REQUIRE(megatron_arguments(on).has_value());
  CHECK(joined(*megatron_arguments(on)).find("--tp-comm-overlap") != std::string::npos);
}

TEST_CASE("FP8 current scaling reads each cast tensor once more, for its amax") {
  // Megatron's --fp8-recipe tensorwise (Transformer Engine's current scaling) against its
  // default, delayed scaling: the same casts, and before each one more read of the bf16 tensor
  // for its scale — 2 bytes a value of every linear's input (forward) and output gradient
  // (backward), at the memory's bandwidth.
  const transformer m = testing::tiny_dense(1);
  cluster c = testing::ideal_cluster();  // memory at 1e12 B/s
  c.chip.peak_fp8 = 1e15;
  c.chip.fp8_share = 1;
  job delayed;
  delayed.seq = 1024;
  delayed.fp8_format = "hybrid";
  job current = delayed;
  current.fp8_recipe_name = "tensorwise";
  CHECK(with_megatron_forms(m, current).fp8_current_scaling);
  CHECK(!with_megatron_forms(m, delayed).fp8_current_scaling);
  const double T = 1024, h = 1024, ffn = 4096;
  // The out projection reads h a token and fc2 ffn; qkv and fc1 read their norm's output, whose
  // amax the norm computed as it wrote it (Transformer Engine's fused norm and linear). The
  // gradients: qkv's 3h, the out projection's h, fc1's ffn, fc2's h.
  const double inputs = T * (h + ffn), gradients = T * (3 * h + h + ffn + h);
  const auto cost = [&](const job& x) {
    return estimate_job(m, x, c, {.launches = false}).stages[0].cost;
  };
  CHECK((cost(current).F - cost(delayed).F).count() == doctest::Approx(2 * inputs / 1e12));
  CHECK((cost(current).B - cost(delayed).B).count() == doctest::Approx(2 * gradients / 1e12));
  // The recipe replays in Megatron's spelling, in weft's flags and Megatron's arguments.
  const job resolved = with_megatron_forms(m, current);
  CHECK(joined(weft_flags(resolved)).find("--fp8-format hybrid --fp8-recipe tensorwise") !=
        std::string::npos);
  REQUIRE(megatron_arguments(resolved).has_value());
  CHECK(joined(*megatron_arguments(resolved)).find("--fp8-recipe tensorwise") != std::string::npos);
  // With sequence parallelism a linear's gathered operand is cast on this device's shard,
  // before its FP8 all-gather: qkv's and fc1's inputs, the out projection's and fc2's
  // gradients, at 1/tp of the tokens (tp 2: each device holds heads 512 and ffn 2048 wide).
  weft::perf::layer_shard shard{.seq = 1024, .tp = 2, .sequence_parallel = true};
  shard.type = weft::perf::dtype::fp8;
  const auto cast_bytes = [&](const std::vector<weft::perf::kernel>& pass) {
    double bytes = 0;
    for (const weft::perf::kernel& k : pass)
      if (k.kind == weft::perf::kernel_kind::streamed &&
          (k.name == "qkv" || k.name == "out projection" || k.name == "fc1" || k.name == "fc2"))
        bytes += k.bytes;
    return bytes;
  };
  const weft::perf::layer_kernels sp = weft::perf::layer_kernels_of(m, 0, shard);
  CHECK(cast_bytes(sp.forward) ==
        doctest::Approx(4 * (T / 2 * h + T * 512 + T / 2 * h + T * 2048)));
  CHECK(cast_bytes(sp.backward) ==
        doctest::Approx(4 * (T * 1536 + T / 2 * h + T * 2048 + T / 2 * h)));
  // Cast before its gather, each such tensor takes one scale on every tensor-parallel rank: a
  // scalar all-reduce (max) of its amax over the group, serial — qkv's and fc1's inputs in
  // the forward, the out projection's and fc2's gradients in the backward (Transformer
  // Engine's amax_reduction_group). Delayed scaling reduces none; nor does a job without
  // sequence parallelism, which gathers nothing.
  job tp2 = with_megatron_forms(m, delayed);
  tp2.tp = 2;
  tp2.sequence_parallel = true;
  job tp2_current = tp2;
  tp2_current.fp8_current_scaling = true;
  const auto comm = [&](const job& x) { return detail::layer_comm_of(m, x, c, 0); };
  const weft::link_model two = collective_link(c, 2, 1, 4);
  const double reduce = 2 * (2 - 1) * two.alpha.count() + 2 * (2 - 1) / 2.0 * 4 * two.beta.count();
  CHECK(reduce > 0);
  CHECK((comm(tp2_current).tp - comm(tp2).tp).count() == doctest::Approx(2 * reduce));
  CHECK((comm(tp2_current).tp_backward - comm(tp2).tp_backward).count() ==
        doctest::Approx(2 * reduce));
  job whole = tp2_current;
  whole.sequence_parallel = false;
  job whole_delayed = tp2;
  whole_delayed.sequence_parallel = false;
  CHECK(comm(whole).tp == comm(whole_delayed).tp);

  // Only per-tensor recipes scale so: DeepSeek's blockwise tiles have their own.
  job tiles;
  tiles.seq = 1024;
  tiles.fp8 = fp8_recipe::blockwise;
  tiles.fp8_current_scaling = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, tiles, c),
                       doctest::Contains("current scaling (--fp8-recipe tensorwise) scales whole "
                                         "tensors"),
                       weft::config_error);
}

TEST_CASE("a launch script's silence as Megatron runs it") {
  const transformer model = testing::tiny_dense(8);
  job j;
  j.pp = 4;
  j.layers_per_virtual_stage = 1;  // 8 layers over 4 ranks: 2 virtual stages a rank
  const job m = as_megatron_runs(model, j, {});
  CHECK(m.runtime == pipeline_runtime::megatron);
  CHECK(m.schedule == "interleaved");  // virtual stages are its interleaved schedule
  CHECK(m.overlap_p2p_comm);           // overlap_p2p_comm on unless told
  const job told = as_megatron_runs(model, j, {.p2p_overlap = false});
  CHECK(!told.overlap_p2p_comm);
  // One virtual stage a rank (layers per virtual stage 2, or a layout of one stage a rank) is
  // plain 1F1B, without the overlap (arguments.py turns it off there).
  job one = j;
  one.layers_per_virtual_stage = 2;
  CHECK(as_megatron_runs(model, one, {}).schedule == "1f1b");
  CHECK(!as_megatron_runs(model, one, {}).overlap_p2p_comm);
  one.layers_per_virtual_stage = 0;
  one.layout = "Et*2|t*2|t*2|t*2L";
  CHECK(as_megatron_runs(model, one, {}).schedule == "1f1b");
  // What the script says stays: a schedule given, PyTorch's runtime asked for (whose transfers
  // have no such overlap).
  job given = j;
  given.schedule = "1f1b";
  given.layers_per_virtual_stage = 0;
  const job kept = as_megatron_runs(model, given, {.runtime = false, .schedule = false});
  CHECK(kept.runtime == pipeline_runtime::pytorch);
  CHECK(kept.schedule == "1f1b");
  CHECK(!kept.overlap_p2p_comm);
  const job pytorch = as_megatron_runs(model, j, {.runtime = false});
  CHECK(pytorch.schedule == "interleaved");
  CHECK(!pytorch.overlap_p2p_comm);
  // The overlap makes the interleaved step no longer (one transfer in flight behind each step).
  job a = j;
  a.global_batch_size = 8;
  a.seq = 1024;
  const job on = as_megatron_runs(model, a, {});
  const job off = as_megatron_runs(model, a, {.p2p_overlap = false});
  const cluster c = testing::ideal_cluster();
  CHECK(estimate_job(model, on, c).step <= estimate_job(model, off, c).step);
}

TEST_CASE("Megatron's combined 1F1B: each forward beside another micro-batch's backward") {
  // Megatron's --overlap-moe-expert-parallel-comm without a pipeline (schedules.py,
  // combined_1f1b_schedule_for_no_pipelining): F(0), then F(i+1) beside B(i), then the last
  // B. A pair costs each half's compute and what of the other's all-to-alls that compute cannot
  // hide, the compute slowed by the published interference while they run together.
  transformer m = testing::tiny_dense(2);
  m.moe.routed = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 1024;
  const cluster c = testing::ideal_cluster();
  job j;
  j.dp = 2;
  j.ep = 2;
  j.seq = 1024;
  j.global_batch_size = 8;                 // 4 micro-batches a data-parallel rank
  j.runtime = pipeline_runtime::megatron;  // Megatron's code runs it
  job o = j;
  o.overlap_moe_ep_comm = true;
  const estimate plain = estimate_job(m, j, c), paired = estimate_job(m, o, c);
  const auto& x = paired.stages[0].cost;
  REQUIRE(x.comm_F.count() > 0);
  const double s = c.overlap.compute_slowdown;
  REQUIRE(s == doctest::Approx(0.189));
  const auto side = [s](double comm, double compute) {
    return comm >= compute * (1 + s) ? comm : compute + comm * s / (1 + s);
  };
  const double pair = side(x.comm_F.count(), (x.B - x.comm_B).count()) +
                      side(x.comm_B.count(), (x.F - x.comm_F).count());
  CHECK(paired.pipeline.count() == doctest::Approx(x.F.count() + 3 * pair + x.B.count()));
  CHECK(plain.pipeline.count() == doctest::Approx(4 * (x.F + x.B).count()));
  CHECK(paired.step < plain.step);
  CHECK(weft::plan::runtime_for(o) == "Megatron-LM (its combined 1F1B)");
  const auto has = [](const std::vector<std::string>& flags, const char* flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  };
  REQUIRE(weft::plan::megatron_arguments(o));
  CHECK(has(*weft::plan::megatron_arguments(o), "--overlap-moe-expert-parallel-comm"));
  // Megatron's default dispatcher is allgather, which its combined 1F1B refuses: named.
  CHECK(weft::plan::joined(*weft::plan::megatron_arguments(o))
            .find("--moe-token-dispatcher-type alltoall") != std::string::npos);
  CHECK(has(weft::plan::weft_flags(o), "--overlap-moe-expert-parallel-comm"));

  // With a pipeline, Megatron's interleaved schedule and one more warm-up micro-batch: each rank
  job p = j;
  p.pp = 4;
  p.schedule = "interleaved";
  p.chunks = 2;
  p.global_batch_size = 16;  // 8 a rank
  m.layers = 8;
  job q = p;
  q.overlap_moe_ep_comm = q.delay_wgrad_compute = true;
  const estimate e = estimate_job(m, p, c), f = estimate_job(m, q, c);
  // keeps one more (micro-batch, chunk) unit at its peak: one of its two chunks' bytes.
  for (std::size_t r = 0; r < 4; ++r) {
    const double more = f.memory_per_rank[r] - e.memory_per_rank[r];
    CHECK((more == doctest::Approx(f.chunk_activation_bytes[r]) ||
           more == doctest::Approx(f.chunk_activation_bytes[r + 4])));
  }

  // Megatron's rules (transformer_config.py).
  const auto refused = [&](const transformer& mm, const job& jj, const char* why) {
    CHECK_THROWS_WITH_AS(estimate_job(mm, jj, c), doctest::Contains(why), weft::config_error);
  };
  job r = q;
  r.schedule = "1f1b";
  r.chunks = 1;
  refused(m, r, "with --pp > 1 it needs --schedule interleaved");
  r = q;
  r.chunks = 1;  // the interleaved schedule without virtual stages: Megatron has none to pair
  refused(m, r, "and more than one virtual stage a rank");
  r = q;
  r.runtime = pipeline_runtime::pytorch;
  refused(m, r, "is Megatron's code: it needs --pipeline-runtime megatron");
  r = q;
  r.policy = recompute::full;
  refused(m, r, "does not combine with full recomputation");
  r = q;
  r.ep = 1;
  refused(m, r, "it needs an MoE model and --ep > 1");
  r.ep = 1;
  refused(testing::tiny_dense(8), r, "it needs an MoE model and --ep > 1");
  r = p;
  r.delay_wgrad_compute = true;
  refused(m, r, "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm");
  transformer deep = m;
  deep.mtp_layers = 2;
  refused(deep, q, "takes at most one MTP layer");
}

TEST_CASE("collectives across nodes run over every NIC their members own (rails)") {
  // DGX A100: 8 GPUs and 8 HDR NICs a node, 24 GB/s a NIC as NCCL measures it (192 GB/s for 8),
  // NVLink 230 GB/s. A tensor-parallel group of 16 over two nodes has 8 members a node: a ring
  // a NIC, 8 x 24 = 192 GB/s; a data-parallel group one rank a node (stride 8) has one NIC; a
  // group of 2 a node (stride 4), two.
  const cluster& a100 = *find_cluster("a100-80g");
  CHECK(1 / collective_link(a100, 8, 1).beta.count() == doctest::Approx(230e9));
  CHECK(1 / collective_link(a100, 16, 1).beta.count() == doctest::Approx(192e9));
  CHECK(1 / collective_link(a100, 64, 8).beta.count() == doctest::Approx(24e9));
  CHECK(1 / collective_link(a100, 4, 4).beta.count() == doctest::Approx(48e9));
  CHECK(collective_link(a100, 16, 1).alpha == a100.inter.alpha);
  // Groups that do not tile the nodes: some group of tp 3 straddles two nodes (ranks 6, 7, 8),
  // and a data-parallel group of 6 ranks 2 apart has 4 members on one node and 2 on the next;
  // the ring runs at its slowest node, priced at one member a node.
  CHECK_FALSE(inside_a_node(3, 1, 8));
  CHECK(1 / collective_link(a100, 3, 1).beta.count() == doctest::Approx(24e9));
  CHECK(1 / collective_link(a100, 6, 2).beta.count() == doctest::Approx(24e9));
  CHECK(group_link(a100, 3, 1).beta == a100.inter.beta);
  // Fewer NICs than GPUs: a GPU's share of them (4 NICs for 8 GPUs: half a NIC each).
  cluster four = a100;
  four.fabric.nics_per_node = 4;
  CHECK(1 / collective_link(four, 16, 1).beta.count() == doctest::Approx(8 * 24e9 / 2));
  // An all-to-all (and a point-to-point transfer) leaves through each rank's own NIC.
  CHECK(group_link(a100, 16, 1).beta == a100.inter.beta);
  // A cluster without the collectives' figures: its links' own bandwidth, a NIC a device.
  cluster file = a100;
  file.fabric = {};
  CHECK(1 / collective_link(file, 8, 1).beta.count() == doctest::Approx(300e9));
  CHECK(1 / collective_link(file, 16, 1).beta.count() == doctest::Approx(8 * 25e9));
  // TP 16 on two nodes: each layer's two all-reduces (no sequence parallelism) of its 1024 x
  // 1024 bf16 activation at 192 GB/s, 10 us a step between nodes.
  transformer m = testing::tiny_dense(2);
  m.heads = m.kv_heads = 16;
  m.head_dim = 64;
  job j;
  j.tp = 16;
  j.seq = 1024;
  const weft::link_model rails{weft::seconds(10e-6), weft::seconds(1 / 192e9)};
  CHECK(
      detail::layer_comm_of(m, j, a100, 0).total.count() ==
      doctest::Approx(2 * weft::collective::ring_all_reduce(rails, 16, 2.0 * 1024 * 1024).count()));
}

TEST_CASE("a job that cannot train the model is refused, naming the numbers") {
  transformer m;
  m.layers = 6;
  m.hidden = 1024;
  m.heads = 12;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn = 4096;
  m.vocab = 1000;
  const auto refusal = [&](auto&& change) -> std::string {
    job j;
    change(j);
    try {
      check_job(m, j);
    } catch (const weft::config_error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal([](job& j) { j.tp = 8; }) ==
        "the model's 12 attention heads do not split over --tp 8");
  CHECK(refusal([](job& j) { j.tp = 3; }) ==
        "the model's 4 key/value heads do not split over --tp 3");
  CHECK(refusal([](job& j) { j.pp = 4; }) ==
        "the model's 6 layers do not split evenly over 4 pipeline ranks x 1 chunks; give "
        "--pipeline-layout for an uneven split");
  CHECK(refusal([](job& j) { j.ep = 2; }) == "--ep 2 needs a model with experts");
  CHECK(refusal([](job& j) {
          j.dp = 4;
          j.micro_batch_size = 3;
          j.global_batch_size = 16;
        }) == "--global-batch-size 16 is not a multiple of --micro-batch-size x --dp (12)");
  CHECK(refusal([](job& j) {
          j.cp = 3;
          j.seq = 1000;
        }) ==
        "--seq-length 1000 must be a multiple of 2 x --cp (6) for context parallelism's "
        "balanced halves");
  CHECK(refusal([](job& j) {
          j.tp = 1 << 12;
          j.pp = 1 << 12;
          j.dp = 1 << 12;
        }).find("devices is more than") != std::string::npos);
  CHECK(refusal([](job& j) {
          j.dp = 1 << 20;
          j.micro_batch_size = 1 << 16;
        }) ==
        "--micro-batch-size x --dp = 68719476736 sequences a step is more than weft plans "
        "for (2^30)");
  m.moe = {.routed = 6, .top_k = 2, .expert_ffn = 512};
  CHECK(refusal([](job& j) {
          j.dp = 4;
          j.ep = 4;
        }) == "the model's 6 experts do not split over --ep 4");
  CHECK(refusal([](job& j) {
          j.dp = 2;
          j.ep = 3;
        }) ==
        "--ep 3 must divide the data-parallel ranks (dp x cp = 2) it is carved from (or fold it "
        "over the tensor-parallel ranks too, with --expert-tensor-parallel-size below --tp)");
  CHECK(refusal([](job& j) {
          j.pp = 2;
          j.layout = "Et|t*5|L";
        }) ==
        "--pipeline-layout: 3 stages are not a multiple of the 2 pipeline ranks (\"Et|t*5|L\")");
  CHECK(refusal([](job& j) { j.seq = 4096.5; }) == "--seq-length must be a whole number of tokens");
  // Each size within its flag's range (plan::job_limits), so the device count cannot wrap: at
  // 2^16 x 2^16 x 2^20 x 2^16 it was taken in 64 bits, wrapped to 16 and passed.
  CHECK(refusal([](job& j) { j.dp = (1 << 20) + 1; }) ==
        "--dp must be at most 1048576, got 1048577");
  CHECK(refusal([](job& j) {
          j.tp = j.pp = j.cp = 1 << 16;
          j.dp = 1 << 20;
        }).find("devices is more than weft plans for (16777216)") != std::string::npos);
  CHECK(refusal([](job& j) { j.global_batch_size = (1 << 30) + 1; }) ==
        "--global-batch-size must be at most 1073741824");
  // The layout's own entry point refuses what it would divide by.
  job none;
  none.pp = 0;
  CHECK_THROWS_WITH_AS(stages_of(m, none), "--pp and --chunks must be at least 1, got 0 and 1",
                       weft::config_error);
  CHECK(refusal([](job& j) { j.global_batch_size = 1 << 20; }) ==
        "--global-batch-size 1048576 over --micro-batch-size x --dp (1) is 1048576 micro-batches "
        "a step; a schedule takes at most 65535");
}

TEST_CASE("MFU never above the fastest rate the device is priced at, however long the context") {
  // MFU counts the causal half of attention, which is what the time prices: a model whose work
  // is nearly all attention (a small one at a long context) once reached 108-118 % (the full
  // square counted, the half priced). Whatever the model, the context, recomputation, flash or
  // FP8, the step's model FLOPs over the device-seconds stay within the best sustained share of
  // the peak (bf16's, or FP8's with an FP8 recipe) the cluster gives any op.
  std::mt19937 rng(7);
  int judged = 0;
  for (const cluster& base : clusters)
    for (int trial = 0; trial < 24; ++trial) {
      const auto pick = [&](int lo, int hi) {
        return std::uniform_int_distribution<int>(lo, hi)(rng);
      };
      transformer m = testing::tiny_dense(pick(1, 4));
      m.hidden = 64 << pick(0, 5);
      m.heads = m.kv_heads = 2 << pick(0, 2);  // tp (1 or 2) divides them
      m.head_dim = m.hidden / m.heads * pick(1, 2);
      m.ffn = m.hidden * pick(1, 4);
      m.vocab = 100 << pick(0, 9);
      cluster c = base;
      if (trial % 3 == 1) c.device.attention_efficiency = 1.0;  // attention faster than matmuls
      job j;
      j.pp = 1 << pick(0, 1);
      j.tp = 1 << pick(0, 1);
      j.seq = 1 << pick(8, 20);
      j.global_batch_size = j.pp * pick(1, 3);
      j.flash_attention = pick(0, 3) != 0;
      j.policy = static_cast<recompute>(pick(0, 2));
      if (m.layers % j.pp != 0) j.pp = 1;
      // FP8 where the device has it: its linears then run faster than bf16's peak allows.
      if (c.chip.has_fp8() && trial % 2 == 0) j.fp8 = fp8_recipe::hybrid;
      CAPTURE(base.name);
      CAPTURE(j.seq);
      CAPTURE(m.hidden);
      const estimate e = estimate_job(m, j, c);
      // MFU against the peak of the linears' precision (FP8's with an FP8 recipe), whose
      // largest sustained share any op reaches bounds it.
      const bool fp8 = j.fp8 != fp8_recipe::none;
      const double peak = fp8 ? c.chip.peak(weft::perf::dtype::fp8) : c.device.peak_flops;
      const double fp8_share = fp8 ? c.chip.fp8_share : 0;
      const double best_share =
          std::max({c.device.efficiency, c.device.attention_flops() / peak, fp8_share});
      CHECK(e.mfu > 0);
      CHECK(e.mfu <= best_share * (1 + 1e-9));
      CHECK(e.mfu < 1);
      CHECK(e.tflops_per_device * 1e12 <= peak * best_share * (1 + 1e-9));
      ++judged;
    }
  CHECK(judged == 4 * 24);
}

TEST_CASE("a job's attention at its library's measured rate") {
  // The two-layer job at 8192 tokens on the H100: Megatron's default leaves the kernel to
  // Transformer Engine, which takes cuDNN's on Hopper; torchtitan's PyTorch calls
  // FlashAttention-2; the flash-attn package FlashAttention-3. At 8k tokens, head dim 128,
  // FlashAttention-3's paper (Figs. 5 and 6) measured forward 529, 333 and 602 TFLOP/s,
  // backward 518, 318 and 559: the times stand in those ratios, whatever the FLOPs.
  const transformer m = testing::tiny_dense(2);
  const cluster& c = *find_cluster("h100-sxm");
  job j = two_stages();
  j.seq = 8192;
  const auto attention = [&](weft::perf::attention_library l) {
    job x = j;
    x.attention = l;
    const estimate e = estimate_job(m, x, c);
    return std::pair{e.stages[0].forward.attention.count(), e.stages[0].backward.attention.count()};
  };
  using lib = weft::perf::attention_library;
  const auto [flash_f, flash_b] = attention(lib::flash);
  const auto [te_f, te_b] = attention(lib::transformer_engine);
  const auto [fused_f, fused_b] = attention(lib::cudnn);
  const auto [sdpa_f, sdpa_b] = attention(lib::sdpa);
  CHECK(te_f / flash_f == doctest::Approx(602.0 / 529));
  CHECK(te_b / flash_b == doctest::Approx(559.0 / 518));
  CHECK(fused_f == doctest::Approx(te_f));
  CHECK(sdpa_f / flash_f == doctest::Approx(602.0 / 333));
  CHECK(sdpa_b / flash_b == doctest::Approx(559.0 / 318));
  // Megatron-LM runs cuDNN's and the flash-attn package's, not PyTorch's.
  job megatron = j;
  megatron.pp = 1;
  megatron.attention = lib::cudnn;
  const auto args = megatron_arguments(megatron);
  REQUIRE(args);
  const auto flag = std::find(args->begin(), args->end(), "--attention-backend");
  REQUIRE(flag != args->end());
  REQUIRE(flag + 1 != args->end());
  CHECK(*(flag + 1) == "fused");
  megatron.attention = lib::sdpa;
  CHECK_FALSE(megatron_arguments(megatron));
  // A trainer of its own (--eager) calls PyTorch's unless told otherwise.
  j.eager = true;
  CHECK(j.attention_kernel() == lib::sdpa);
  j.attention = lib::flash;
  CHECK(j.attention_kernel() == lib::flash);
  // The A100 runs FlashAttention-2 whichever library calls it.
  job a = two_stages();
  a.attention = lib::sdpa;
  const double a100_sdpa = estimate_job(m, a, *find_cluster("a100-80g")).step.count();
  a.attention = lib::flash;
  CHECK(estimate_job(m, a, *find_cluster("a100-80g")).step.count() == doctest::Approx(a100_sdpa));
}

TEST_CASE("where a step goes: each kernel in its part, and the parts add up to the step") {
  // The two-layer job above, matmuls at the sustained rate: a layer's forward matmuls are
  // 24Th^2 FLOPs at 1 PFLOP/s, its attention the causal half of 4Tsh; the head's matmul is a
  // matmul too. Nothing memory-bound is priced, so nothing is elementwise.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  const job j = two_stages();
  const estimate e =
      estimate_job(m, j, c, {.matmul_shapes = false, .memory_bound = false, .launches = false});
  const double T = 1024, H = 1024;
  const double weighted = 24 * T * H * H, causal = 2 * T * 1024 * H;
  CHECK(e.stages[0].forward.matmul.count() == doctest::Approx(weighted / 1e15));
  CHECK(e.stages[1].forward.matmul.count() ==
        doctest::Approx((weighted + 2 * T * H * 1000) / 1e15));
  CHECK(e.stages[0].forward.attention.count() == doctest::Approx(causal / 1e15));
  CHECK(e.stages[0].backward.attention.count() == doctest::Approx(2.5 * causal / 1e15));
  CHECK(e.stages[0].forward.elementwise.count() == 0);
  CHECK(e.stages[0].backward.recompute.count() == 0);
  // Per rank, one step: 2 micro-batches through its one chunk, forward and backward.
  REQUIRE(e.breakdown.size() == 2);
  CHECK(e.breakdown[0].work.matmul.count() == doctest::Approx(2 * 3 * weighted / 1e15));
  CHECK(e.breakdown[0].F.count() == doctest::Approx(e.stages[0].cost.F.count()));
  CHECK(e.breakdown[1].W.count() == doctest::Approx(e.stages[1].cost.W.count()));
  // 1F1B pairs nothing, so overlap hides nothing; the passes run as priced but for the
  // transfers' share of the links and the device (the A100 cluster's contention facts), a
  // transfer's worth at most.
  for (const rank_breakdown& b : e.breakdown) {
    CHECK(b.hidden.count() == 0);
    CHECK(b.slowed.count() < 1e-2 * e.step.count());
  }
  CHECK(e.breakdown[0].optimizer.count() == doctest::Approx(e.optimizer.count()));
}

TEST_CASE("where a step goes, on any job: the parts add up, recomputation is what it reruns") {
  std::mt19937 rng(11);
  int judged = 0;
  for (const cluster& base : clusters)
    for (int trial = 0; trial < 12; ++trial) {
      const auto pick = [&](int lo, int hi) {
        return std::uniform_int_distribution<int>(lo, hi)(rng);
      };
      transformer m = testing::tiny_dense(4);
      m.hidden = 256 << pick(0, 3);
      m.heads = m.kv_heads = 8;
      m.head_dim = m.hidden / m.heads;
      m.ffn = 4 * m.hidden;
      job j;
      j.pp = 2 << pick(0, 1);
      j.tp = 1 << pick(0, 2);
      j.dp = 1 << pick(0, 1);
      j.seq = 1024 << pick(0, 3);
      j.global_batch_size = j.dp * j.pp * pick(1, 4);
      j.policy = static_cast<recompute>(pick(0, 2));
      const char* schedules[] = {"1f1b", "zb-h1", "dualpipev", "dualpipe"};
      j.schedule = schedules[pick(0, 3)];
      if (j.schedule == "dualpipev" || j.schedule == "dualpipe") {
        j.pp = 2;
        j.global_batch_size = j.dp * 2 * pick(2, 4);
      }
      CAPTURE(base.name);
      CAPTURE(j.schedule);
      CAPTURE(j.pp);
      const estimate e = estimate_job(m, j, base);
      // Without contention the pipeline runs each pass as priced: its busy time is its work.
      cluster quiet = base;
      quiet.overlap = {};
      for (const rank_breakdown& b : estimate_job(m, j, quiet).breakdown) {
        CHECK(b.hidden.count() <= 1e-9 * e.step.count());
        CHECK(b.slowed.count() <= 1e-9 * e.step.count());
      }
      for (const stage_estimate& st : e.stages) {
        CHECK(st.forward.total().count() == doctest::Approx(st.cost.F.count()).epsilon(1e-9));
        CHECK(st.backward.total().count() == doctest::Approx(st.cost.B.count()).epsilon(1e-9));
        if (j.policy == recompute::none) CHECK(st.backward.recompute.count() == 0);
        if (j.policy == recompute::selective)
          CHECK(st.backward.recompute.count() == doctest::Approx(st.forward.attention.count()));
        if (j.policy == recompute::full)
          CHECK(st.backward.recompute.count() > st.forward.attention.count());
      }
      for (const rank_breakdown& b : e.breakdown) {
        const weft::seconds sum = b.work.total() - b.hidden + b.slowed + b.transfers + b.bubble +
                                  b.grad_sync + b.optimizer;
        CHECK(sum.count() == doctest::Approx(e.step.count()).epsilon(1e-9));
        CHECK(b.bubble.count() >= 0);
        CHECK(b.transfers.count() >= 0);
        CHECK((b.hidden.count() == 0 || b.slowed.count() == 0));
        // Only overlapped forward/backward pairs hide anything, and without experts there is
        // no all-to-all for them to hide.
        CHECK(b.hidden.count() <= 1e-9 * e.step.count());
      }
      ++judged;
    }
  CHECK(judged == 12 * 4);
}

TEST_CASE("FP8: the layers' linears at the FP8 rate with their casts; attention and head in bf16") {
  // A Llama-like layer on one H100 (989 TFLOP/s bf16, 1979 fp8): the linears go to the FP8
  // units, attention's core and the LM head do not, and each FP8 linear adds its casts (4
  // bytes a value of its input, forward, and of its output gradient, backward).
  transformer m = testing::tiny_dense(2);
  m.hidden = 4096;
  m.heads = m.kv_heads = 32;
  m.head_dim = 128;
  m.ffn = 4 * 4096;
  m.vocab = 32000;
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.seq = 4096;
  const estimate bf16 = estimate_job(m, j, c);
  j.fp8 = fp8_recipe::hybrid;
  const estimate fp8 = estimate_job(m, j, c);
  const stage_estimate &x = bf16.stages[0], &y = fp8.stages[0];
  CHECK(y.forward.attention.count() == doctest::Approx(x.forward.attention.count()));
  CHECK(y.forward.matmul < x.forward.matmul);
  // The casts are elementwise: 4 bytes a value of each linear's input (QKV and fc1 read h
  // wide, the output projection h, fc2 4h) for 2 layers' 4096 tokens, at the H100's
  // sustained 2.8 TB/s.
  const double casts = 2 * 4 * 4096.0 * (4096 + 4096 + 4096 + 4 * 4096);
  CHECK((y.forward.elementwise - x.forward.elementwise).count() == doctest::Approx(casts / 2.8e12));
  CHECK(fp8.step < bf16.step);
  CHECK(fp8.memory_per_rank[0] < bf16.memory_per_rank[0]);
  // No FP8 units, no FP8: the A100's facts have no FP8 peak.
  CHECK_THROWS_WITH_AS(estimate_job(m, j, *find_cluster("a100-80g")),
                       "--fp8 hybrid: the a100-80g cluster's devices have no FP8 units (their "
                       "facts give no FP8 peak)",
                       weft::config_error);
}

TEST_CASE("context parallelism as the job runs it: a ring behind the scores, or an all-gather") {
  // Two layers with 8 key/value heads of 128 on tp 8 x cp 2 H100s (16 devices: the cp group's
  // two members 8 devices apart, in two nodes, one a node). Each device holds 4096 of the 8192
  // tokens: its K and V are 2 x 4096 x (8 x 128 / 8) bf16 values, 2 MiB; gathered, 4 MiB,
  // over a ring of one NDR NIC a node (47 GB/s, 10 us a step): 10 us + (1/2) 4 MiB / 47 GB/s.
  transformer m = testing::tiny_dense(2);
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 4 * 4096;
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.tp = 8;
  j.cp = 2;
  j.seq = 8192;
  j.sequence_parallel = true;
  j.cp_comm_type = cp_comm::all_gather;
  const estimate gathered = estimate_job(m, j, c);
  const double all = 2.0 * 2 * 4096 * (2 * 8 * 128 / 8);
  const double per_layer = 10e-6 + 0.5 * all / 47e9;
  CHECK(gathered.stages[0].forward.cp.count() == doctest::Approx(2 * per_layer));
  // The backward reduce-scatters the keys' and values' gradients: the same volume, the same ring.
  CHECK(gathered.stages[0].backward.cp.count() == doctest::Approx(2 * per_layer));
  // The ring: each step passes 2 MiB to the next member while the scores compute, which here
  // take longer than the transfer: nothing exposed.
  j.cp_comm_type = cp_comm::p2p;
  const estimate ring = estimate_job(m, j, c);
  CHECK(ring.stages[0].forward.cp.count() == 0);
  CHECK(ring.step < gathered.step);

  // cp 8 (a member a node): each device holds 1024 of the 8192 tokens, its K and V 2 x 1024 x
  // (8 x 128 / 8) bf16 values, 0.5 MiB, passed 7 times at 10 us + 0.5 MiB / 50 GB/s (the
  // link a device has across nodes). Behind each it computes the causal half of its queries'
  // scores against the sequence, 4 x 1024 x 8192 x 4096 / 2 / tp FLOPs, at the rate
  // FlashAttention-3 measured at the 1024 keys a call attends over: 423 TFLOP/s (arXiv
  // 2407.08608, Fig. 5), not the 616 it reaches at 16k.
  j.cp = 8;
  const double ring_time = 7 * (10e-6 + 2.0 * 1024 * (8 * 128 / 8) * 2 / 50e9);
  const double scores = 4.0 * 1024 * 8192 * 4096 / 2 / 8 / 423e12;
  CHECK(estimate_job(m, j, c).stages[0].forward.cp.count() ==
        doctest::Approx(2 * (ring_time - scores)));
}

TEST_CASE("the MoE all-to-all: DeepEP sends a token once to each node its routing allows") {
  // 256 experts in 8 groups, top-8 from the best 4 groups (DeepSeek-V3's routing), on ep 64:
  // 8 nodes of 8 H800s, 4 experts a GPU, 32 a node — a group a node. A token reaches at most 4
  // nodes and crosses the network once to each: 4 copies, 7/8 of them to other nodes, where
  // an all-to-all without the limit sends 8 copies, 63/64 to other ranks. Each at one 50 GB/s
  // NIC a GPU, 10 us a step; dispatch and combine, 2 bytes a value each.
  transformer m = testing::tiny_dense(2);
  m.hidden = 1024;
  m.heads = m.kv_heads = 8;
  m.head_dim = 128;
  m.moe = {.routed = 256, .top_k = 8, .expert_ffn = 256, .groups = 8, .group_top_k = 4};
  const cluster& c = *find_cluster("h800");
  job j;
  j.ep = 64;
  j.dp = 64;
  j.seq = 4096;
  j.dispatcher = moe_dispatcher::flex;
  const auto ep_of = [&](const transformer& x, const job& y) {
    return estimate_job(x, y, c).stages[0].forward.ep.count();
  };
  // Per layer: 63 steps of 10 us each way, and the bytes; the stage has 2 layers.
  const double steps = 2 * 63 * 10e-6, T = 4096, h = 1024;
  CHECK(ep_of(m, j) == doctest::Approx(2 * (steps + 7.0 / 8 * T * 4 * h * (2 + 2) / 50e9)));
  // DeepSeek's FP8 dispatch: 1 byte a value out, 2 back.
  job fp8 = j;
  fp8.fp8 = fp8_recipe::blockwise;
  CHECK(ep_of(m, fp8) == doctest::Approx(2 * (steps + 7.0 / 8 * T * 4 * h * (1 + 2) / 50e9)));
  // Megatron's all-to-all dispatcher sends every copy to every other rank, in bf16 whatever the
  // recipe: 8 copies, 63/64 of them leaving.
  job alltoall = fp8;
  alltoall.dispatcher = moe_dispatcher::alltoall;
  CHECK(ep_of(m, alltoall) == doctest::Approx(2 * (steps + 63.0 / 64 * T * 8 * h * 4 / 50e9)));
  // No group limit: DeepEP still sends a token once to each node its 8 experts fall on — each
  // of the 7 other nodes unless all 8 of its experts are among the 224 elsewhere.
  transformer any = m;
  any.moe.groups = any.moe.group_top_k = 0;
  double none = 1;
  for (int i = 0; i < 8; ++i) none *= (256.0 - 32 - i) / (256 - i);
  CHECK(ep_of(any, j) == doctest::Approx(2 * (steps + 7 * (1 - none) * T * h * 4 / 50e9)));
  // Groups that straddle nodes (64 experts a group, 32 a node) limit nothing node-wise.
  transformer wide = m;
  wide.moe.groups = 4;
  wide.moe.group_top_k = 2;
  CHECK(ep_of(wide, j) == doctest::Approx(ep_of(any, j)));
}

TEST_CASE("Megatron's pipeline runtime: the host waits for each batched transfer") {
  // tiny_dense(2) on pp 2, 2 micro-batches, 1F1B: stage 0 takes F0 and B0 a micro-batch, stage 1
  // F1 and B1 (the head), a transfer t either way. PyTorch's runtime sends and computes on: rank
  // 0 runs F(1) F(2) B(1) B(2), rank 1 F(1) B(1) F(2) B(2), and the last backward ends at
  // F0 + 2 F1 + 2 B1 + B0 + 2t. Megatron's host waits for F(1)'s send before F(2); then rank 1
  // exchanges B(1)'s gradient for F(2)'s activation in one batched call, posted after its
  // B(1) — later than rank 0's send, so its clear-to-send crosses the link first (the link's
  // latency a): rank 1 starts F(2) at F0 + F1 + B1 + 2t + a, one transfer and a latency later.
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j = two_stages();
  const estimate pytorch = estimate_job(m, j, c);
  j.runtime = pipeline_runtime::megatron;
  const estimate megatron = estimate_job(m, j, c);
  const double t = pytorch.cost.of(weft::kind::send, weft::phase::F).count();
  REQUIRE(t > 0);
  CHECK(megatron.step.count() - pytorch.step.count() == doctest::Approx(t + c.intra.alpha.count()));
  // A schedule Megatron has no code for runs as PyTorch runs it.
  j.schedule = "zb-h1";
  job k = j;
  k.runtime = pipeline_runtime::pytorch;
  CHECK(estimate_job(m, j, c).step == estimate_job(m, k, c).step);
  // Its interleaved schedule (pp 4, 2 chunks, 8 micro-batches) with --overlap-p2p-communication
  // keeps one transfer in flight behind each step of the steady state rather than waiting.
  job v;
  v.pp = 4;
  v.chunks = 2;
  v.seq = 1024;
  v.global_batch_size = 8;
  v.schedule = "interleaved";
  v.runtime = pipeline_runtime::megatron;
  const weft::seconds waited = estimate_job(testing::tiny_dense(8), v, c).step;
  v.overlap_p2p_comm = true;
  CHECK(estimate_job(testing::tiny_dense(8), v, c).step < waited);
  // Megatron-LM's scatter/gather (until 2022), tp 2 without sequence parallelism: a device
  // sends half of a micro-batch's 1024 x 1024 bf16 activation (1 MiB) over NVLink (2 us, 300
  // GB/s), then the pair all-gathers the whole 2 MiB at NCCL's bus bandwidth of an A100 node
  // (230 GB/s): one step of 2 us and half the bytes.
  job sg = two_stages();
  sg.tp = 2;
  sg.runtime = pipeline_runtime::megatron;
  sg.scatter_gather_transfers = true;
  const double MiB = 1 << 20;
  const double sent = 2e-6 + MiB / 300e9, gathered = 2e-6 + 0.5 * 2 * MiB / 230e9;
  CHECK(estimate_job(m, sg, c).cost.of(weft::kind::send, weft::phase::F).count() ==
        doctest::Approx(sent + gathered));
  // Only Megatron's code scatters: zero-bubble runs as PyTorch runs it, sending the whole.
  job zb = sg;
  zb.schedule = "zb-h1";
  CHECK(estimate_job(m, zb, c).cost.of(weft::kind::send, weft::phase::F).count() ==
        doctest::Approx(2e-6 + 2 * MiB / 300e9));
  // With sequence parallelism each device holds its 1/tp already and sends only that.
  sg.sequence_parallel = true;
  CHECK(estimate_job(m, sg, c).cost.of(weft::kind::recv, weft::phase::B).count() ==
        doctest::Approx(sent));
  sg.runtime = pipeline_runtime::pytorch;
  CHECK_THROWS_WITH_AS(estimate_job(m, sg, c),
                       "--scatter-gather-tensors-in-pipeline is Megatron-LM's (until 2022): it "
                       "needs --pipeline-runtime megatron",
                       weft::config_error);
  // Megatron's flag for its interleaved schedule only means something with its runtime.
  k.overlap_p2p_comm = true;
  CHECK_THROWS_WITH_AS(estimate_job(m, k, c),
                       "--overlap-p2p-communication is Megatron's: it needs --pipeline-runtime "
                       "megatron (PyTorch's runtime already waits for a transfer only where its "
                       "data is needed)",
                       weft::config_error);
}

TEST_CASE("Megatron's data-parallel overlap: buckets beside the last backward and first forward") {
  // Two layers of hidden 4096 on one pipeline rank, dp 2 inside an A100 node: P parameters a
  // device (403M), in Megatron's buckets of max(40M, 1M x dp) = 40M: 11. The gradients'
  // reduce-scatter moves 4P bytes, the parameters' all-gather 2P, each (2 - 1) steps of 2 us and
  // half the bytes at NCCL's 230 GB/s (the ideal device has no curve by size).
  transformer m = testing::tiny_dense(2);
  m.hidden = 4096;
  m.heads = m.kv_heads = 32;
  m.ffn = 4 * 4096;
  const cluster c = testing::ideal_cluster();
  job j;
  j.dp = 2;
  j.seq = 4096;
  const estimate plain = estimate_job(m, j, c);
  const double P = plain.stages[0].params, n = std::ceil(P / 40e6);
  REQUIRE(n == 11);
  const double rs = 2e-6 + 0.5 * 4 * P / 230e9, ag = 2e-6 + 0.5 * 2 * P / 230e9;
  CHECK(plain.grad_sync.count() == doctest::Approx(rs + ag));
  // Overlapped: the step's one rank has no wait after its backward (B) nor before its forward
  // (F). All but the last bucket reduce beside B (at most 10/11 of it) and the rest after it;
  // the compute beside them takes 1.189 times as long meanwhile, B longer by 0.189 / 1.189 of
  // the time they overlap. The gather alike beside F.
  const double B = plain.stages[0].cost.B.count(), F = plain.stages[0].cost.F.count();
  const double s = c.overlap.compute_slowdown;
  REQUIRE(s == doctest::Approx(0.189));
  const auto exposed = [&](double comm, double beside) {
    const double after = std::max(comm / n, comm - beside * (n - 1) / n);
    return after + (comm - after) * s / (1 + s);
  };
  j.overlap_grad_reduce = true;
  CHECK(estimate_job(m, j, c).grad_sync.count() == doctest::Approx(exposed(rs, B) + ag));
  j.overlap_param_gather = true;
  CHECK(estimate_job(m, j, c).grad_sync.count() ==
        doctest::Approx(exposed(rs, B) + exposed(ag, F)));
  // However slow compute gets beside a collective, overlapping never costs more than not.
  cluster slow = c;
  slow.overlap.compute_slowdown = 10;
  j.overlap_param_gather = false;
  CHECK(estimate_job(m, j, slow).grad_sync < plain.grad_sync);
  j.overlap_param_gather = true;
  // Without the distributed optimizer, one all-reduce (reduce and gather) overlapped whole.
  job ddp = j;
  ddp.sharding = dp_sharding::no_shard;
  ddp.overlap_param_gather = false;
  CHECK(estimate_job(m, ddp, c).grad_sync.count() == doctest::Approx(exposed(rs + ag, B)));
  // One bucket (a model of fewer than 40M parameters a device) has nothing to overlap with.
  job small = j;
  small.overlap_param_gather = false;
  job small_plain = small;
  small_plain.overlap_grad_reduce = false;
  CHECK(estimate_job(testing::tiny_dense(2), small, c).grad_sync ==
        estimate_job(testing::tiny_dense(2), small_plain, c).grad_sync);
  // Megatron's rules for the gather's overlap.
  j.overlap_grad_reduce = false;
  CHECK_THROWS_WITH_AS(estimate_job(m, j, c),
                       doctest::Contains("--overlap-param-gather needs the distributed optimizer "
                                         "and --overlap-grad-reduce"),
                       weft::config_error);
}

TEST_CASE("Megatron's forms that need the model: chunks from layers, first and last stages, FP8") {
  // Ten layers on pp 4 with one in the first stage and three in the last: the six between
  // split over the two middle stages, three each.
  transformer m = testing::tiny_dense(10);
  CHECK(first_last_layout(m, 4, 1, 3) == "Et*1|(t*3|)*2,t*3L");
  // Only the first given: the other three stages share the rest (3 each); with an MTP layer,
  // the last stage ends with it, before the loss.
  m.mtp_layers = 1;
  CHECK(first_last_layout(m, 4, 1, 0) == "Et*1|(t*3|)*2,t*3mL");
  CHECK(first_last_layout(m, 2, 4, 6) == "Et*4|t*6mL");
  CHECK_THROWS_WITH_AS(first_last_layout(m, 4, 2, 0),
                       "--decoder-first/last-pipeline-num-layers: the model's 10 layers less 2 "
                       "first and 0 last do not split evenly over the other 3 stages",
                       weft::config_error);
  job j;
  j.pp = 4;
  j.decoder_first = 1;
  j.decoder_last = 3;
  const job written = with_megatron_forms(testing::tiny_dense(10), j);
  CHECK(written.layout == "Et*1|(t*3|)*2,t*3L");
  CHECK(written.decoder_first == 0);
  // --num-layers-per-virtual-pipeline-stage 1 on pp 2 of 10 layers: 5 chunks a rank.
  job v;
  v.pp = 2;
  v.layers_per_virtual_stage = 1;
  CHECK(with_megatron_forms(testing::tiny_dense(10), v).chunks == 5);
  v.chunks = 5;
  CHECK_THROWS_WITH_AS(with_megatron_forms(testing::tiny_dense(10), v),
                       doctest::Contains("say the same thing: give one"), weft::config_error);
  // Megatron's FP8 flags: the format turns it on, the recipe picks the scaling.
  CHECK(megatron_fp8("e4m3", "") == fp8_recipe::e4m3);
  CHECK(megatron_fp8("hybrid", "delayed") == fp8_recipe::hybrid);
  CHECK(megatron_fp8("hybrid", "tensorwise") == fp8_recipe::hybrid);
  CHECK(megatron_fp8("e4m3", "blockwise") == fp8_recipe::blockwise);
  CHECK_THROWS_WITH_AS(megatron_fp8("e4m3", "mxfp8"),
                       "--fp8-recipe mxfp8: MX formats (Blackwell's) are not priced",
                       weft::config_error);
  CHECK_THROWS_WITH_AS(megatron_fp8("", "blockwise"),
                       "--fp8-recipe blockwise needs --fp8-format e4m3 or hybrid (Megatron turns "
                       "FP8 on with the format)",
                       weft::config_error);
  job both;
  both.fp8 = fp8_recipe::hybrid;
  both.fp8_format = "e4m3";
  CHECK_THROWS_WITH_AS(with_megatron_forms(testing::tiny_dense(2), both),
                       "give weft's --fp8 or Megatron's --fp8-format, not both",
                       weft::config_error);
}

TEST_CASE("what nvidia-smi shows: the allocator's reserve and the CUDA context on top") {
  // Megatron-Bridge's Moonlight-16B run: 36.618 GB allocated at its peak, about 40 GB reserved;
  // the CUDA context and kernels: 1573 MiB (BigScience's BLOOM chronicles).
  CHECK(as_nvidia_smi(36.618e9) == doctest::Approx(40e9 + 1573.0 * 1024 * 1024));
  CHECK(as_nvidia_smi(0) == doctest::Approx(1573.0 * 1024 * 1024));
}

TEST_CASE("what a job may allocate: the device less the CUDA context, over the reserve") {
  // An 80 GB device: (80e9 - 1573 MiB) / (40 / 36.618) = 78.35e9 / 1.09236 = 71.73e9 bytes,
  // 66.8 GiB; a job allocating that shows the whole device in nvidia-smi.
  CHECK(allocatable_bytes(80e9) == doctest::Approx(71.726e9).epsilon(1e-4));
  CHECK(gibibytes(allocatable_bytes(80e9)) == "66.8 GiB");
  CHECK(as_nvidia_smi(allocatable_bytes(80e9)) == doctest::Approx(80e9));
  CHECK(allocatable_text(80e9) == "66.8 GiB a job may allocate of the device's 74.5 GiB");
  // A device no larger than the context leaves nothing, never a negative size.
  CHECK(allocatable_bytes(1e9) == 0);
  CHECK(allocatable_bytes(0) == 0);
}

TEST_CASE("a pass of short kernels takes at least their launches") {
  // A layer of hidden 64 on 64 tokens: every kernel far shorter than the 5 us the host takes to
  // launch one (PyTorch's Holistic Trace Analysis: 5-20 us). The forward pass then takes its
  // kernels' launches: the layer's, the embedding's lookup, the head's matmul and its loss.
  transformer m = testing::tiny_dense(1);
  m.hidden = 64;
  m.heads = m.kv_heads = 2;
  m.head_dim = 32;
  m.ffn = 256;
  m.vocab = 100;
  job j;
  j.seq = 64;
  const cluster& c = *find_cluster("h100-sxm");
  const estimate e = estimate_job(m, j, c);
  const auto layer =
      weft::perf::layer_kernels_of(m, 0, {.micro_batch = 1, .seq = 64, .flash_attention = true});
  const double kernels = static_cast<double>(layer.forward.size()) + 1 + 2;
  const stage_estimate& st = e.stages[0];
  CHECK(st.forward.launch.count() > 0);
  CHECK((st.forward.compute() + st.forward.launch).count() == doctest::Approx(kernels * 5e-6));
  // Off, nothing of it; and GPT-3's layers, milliseconds each, are never launch-bound.
  CHECK(estimate_job(m, j, c, {.launches = false}).stages[0].forward.launch.count() == 0);
  job big;
  big.tp = 8;
  big.seq = 2048;
  CHECK(estimate_job(gpt3(), big, *find_cluster("a100-80g")).stages[0].forward.launch.count() == 0);
}

TEST_CASE("a collective inside a node at the bandwidth its size reaches on the device's curve") {
  // A100: 230 GB/s at a gigabyte and more; 128 MiB reaches 176.92 of the curve's 234.61 GB/s.
  const cluster& a100 = *find_cluster("a100-80g");
  const double MiB = 1 << 20;
  CHECK(collective_link(a100, 8, 1, 128 * MiB).beta.count() ==
        doctest::Approx(1 / (230e9 * 176.92 / 234.61)));
  CHECK(collective_link(a100, 8, 1, 16384 * MiB).beta.count() == doctest::Approx(1 / 230e9));
  // Across nodes the NICs' figure, whatever the size: 16 ranks over two nodes, eight NICs of
  // 24 GB/s.
  CHECK(collective_link(a100, 16, 1, 128 * MiB).beta.count() ==
        doctest::Approx(collective_link(a100, 16, 1).beta.count()));
}

TEST_CASE(
    "full recomputation of some layers: Megatron's first N of a stage, torchtitan's every N-th") {
  // Eight identical layers in one stage: recomputing k of them costs k / 8 of recomputing all,
  // and keeps k layer inputs where the rest keep everything.
  const transformer m = testing::tiny_dense(8);
  const cluster c = testing::ideal_cluster();
  job j;
  j.seq = 1024;
  const layout_stage st{.embedding = false, .loss = false, .first_layer = 0, .layers = 8};
  j.policy = recompute::none;
  const stage_estimate none = detail::stage_costs(m, j, c, st);
  j.policy = recompute::full;
  const stage_estimate all = detail::stage_costs(m, j, c, st);
  j.recompute_method = "block";
  j.recompute_num_layers = 2;
  const stage_estimate block = detail::stage_costs(m, j, c, st);
  j.recompute_method.clear();
  j.recompute_num_layers = 0;
  j.recompute_every = 4;  // layers 3 and 7
  const stage_estimate every = detail::stage_costs(m, j, c, st);
  REQUIRE(all.backward.recompute.count() > 0);
  CHECK(block.backward.recompute.count() ==
        doctest::Approx(all.backward.recompute.count() * 2 / 8));
  CHECK(every.backward.recompute.count() == doctest::Approx(block.backward.recompute.count()));
  CHECK(none.backward.recompute.count() == 0);
  const double kept_input = all.activation_bytes / 8, kept_whole = none.activation_bytes / 8;
  CHECK(block.activation_bytes == doctest::Approx(2 * kept_input + 6 * kept_whole));
  CHECK(every.activation_bytes == doctest::Approx(block.activation_bytes));
  // Every layer of the stage: the same as recomputing all of them.
  j.recompute_every = 1;
  CHECK(detail::stage_costs(m, j, c, st).cost.B == all.cost.B);
  j.recompute_every = 0;
  j.recompute_method = "block";
  j.recompute_num_layers = 8;
  CHECK(detail::stage_costs(m, j, c, st).cost.B == all.cost.B);
  // Megatron's forms checked: block needs its count, uniform keeps each layer's input only.
  j.recompute_num_layers = 0;
  CHECK_THROWS_WITH_AS(check_job(m, j), doctest::Contains("give it (1 or more)"),
                       weft::config_error);
  j.recompute_method = "uniform";
  j.recompute_num_layers = 2;
  CHECK_THROWS_WITH_AS(check_job(m, j), doctest::Contains("--recompute-num-layers 2 with"),
                       weft::config_error);
  job selective;
  selective.recompute_every = 2;
  CHECK_THROWS_AS(check_job(m, selective), weft::config_error);
}

TEST_CASE("every N-th layer counts on through a rank's stages, as torchtitan's counter does") {
  // 32 layers, pp 2, two stages a rank of 8, 9, 8 and 7 layers (torchtitan's split): rank 1
  // holds stages 1 and 3. Every second layer of the rank: stage 1 its 2nd, 4th, 6th and 8th
  // (4); stage 3 continues at the rank's 10th layer: its 10th, 12th, 14th, 16th (4, where a
  // count restarting at the stage would give 3).
  const transformer m = testing::tiny_dense(32);
  const cluster c = testing::ideal_cluster();
  job j;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 4;
  j.schedule = "interleaved";
  j.chunks = 2;
  j.layout = "Et*8|t*9|t*8|t*7L";
  j.policy = recompute::full;
  j.recompute_every = 2;
  const estimate e = estimate_job(m, j, c);
  const double one = e.stages[1].backward.recompute.count() / 4;
  REQUIRE(one > 0);
  CHECK(e.stages[3].backward.recompute.count() == doctest::Approx(4 * one));
  CHECK(e.stages[0].backward.recompute.count() == doctest::Approx(4 * one));
  CHECK(e.stages[2].backward.recompute.count() == doctest::Approx(4 * one));
}
