// torchtitan's TOML job configs read as weft's job: the sizes, the batch and the stages as
// torchtitan derives them (torchtitan/distributed/parallel_dims.py, train.py and
// pipeline_parallel.py: dp_shard -1 takes the devices left, global batch local x dp, pipeline
// micro-batches of pipeline_parallel_microbatch_size, the embedding and the output each weighed
// as a layer in the split), and every setting weft does not price refused by name.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <weft/plan/estimate.hpp>
#include <weft/plan/torchtitan_file.hpp>
#include "plan_fixtures.hpp"

using namespace weft::plan;
using weft::config_error;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/torchtitan/" + name);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `text` with `key = old` replaced by `key = value` (the first such line).
std::string with(std::string text, const std::string& line, const std::string& replacement) {
  const auto at = text.find(line);
  REQUIRE(at != std::string::npos);
  return text.replace(at, line.size(), replacement);
}

void refused(const std::string& text, long long devices, const std::string& says) {
  const transformer m = testing::tiny_dense(32);
  try {
    (void)torchtitan_as_job(read_torchtitan(text, "job.toml"), m, devices);
    FAIL("accepted; expected: " << says);
  } catch (const config_error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(says) != std::string::npos, std::string(e.what()));
  }
}

}  // namespace

TEST_CASE("a pipelined torchtitan job: FSDP over the devices left, its micro-batches and split") {
  const transformer m = testing::tiny_dense(32);
  const torchtitan_job t = read_torchtitan(fixture("pipelined.toml"), "pipelined.toml");
  CHECK(t.warnings.empty());
  const job j = torchtitan_as_job(t, m, 64);
  // dp_shard -1: 64 / (tp 2 x pp 4) = 8, FSDP over them; tensor parallelism shards the norms.
  CHECK(j.tp == 2);
  CHECK(j.pp == 4);
  CHECK(j.dp == 8);
  CHECK(j.sharding == dp_sharding::optim_grads_params);
  CHECK(j.sequence_parallel);
  // Global batch: local 8 x dp 8 = 64 sequences of 4096; micro-batches of 2, 8 / 2 = 4 each.
  CHECK(j.seq == 4096);
  CHECK(j.global_batch_size == 64);
  CHECK(j.micro_batch_size == 2);
  CHECK(j.micro() == 4);
  // Interleaved1F1B: 2 stages a rank, 8 stages of 32 layers + 2 weights = 34: 4 each and the
  // first two 5; the first less the embedding's 1, the last less the output's 1.
  CHECK(j.schedule == "interleaved");
  CHECK(j.chunks == 2);
  CHECK(j.layout == "Et*4|t*5|(t*4|)*5,t*3L");
  // Every second layer recomputed whole; torchao's tensorwise FP8: e4m3 forward, e5m2 grads.
  CHECK(j.policy == recompute::full);
  CHECK(j.recompute_every == 2);
  CHECK(j.fp8 == fp8_recipe::hybrid);
  CHECK(j.fp8_current_scaling);  // torchao's scales are dynamic: an amax pass before each cast
  // Its attention is PyTorch's scaled_dot_product_attention (FlashAttention-2 on an H100).
  CHECK(j.attention == weft::perf::attention_library::sdpa);
  // It estimates as any job (on a device with FP8).
  cluster c = testing::ideal_cluster();
  c.chip = find_cluster("h100-sxm")->chip;
  CHECK(estimate_job(m, j, c).step.count() > 0);
}

TEST_CASE("torchtitan's split, its V schedules, DDP, layers per stage") {
  const transformer m = testing::tiny_dense(32);
  const std::string base = fixture("pipelined.toml");
  // ZBVZeroBubble: two stages a rank in a V, one copy; 34 effective layers over 8 stages.
  const std::string zbv = with(base, "\"Interleaved1F1B\"", "\"ZBVZeroBubble\"");
  const job v = torchtitan_as_job(read_torchtitan(zbv, "v.toml"), m, 64);
  CHECK(v.schedule == "zb-v");
  CHECK(v.chunks == 1);
  CHECK(v.layout == "Et*4|t*5|(t*4|)*5,t*3L");
  // 1F1B: one stage a rank; 34 over 4 stages is 8 each and the first two 9.
  const std::string one = with(base, "\"Interleaved1F1B\"", "\"1F1B\"");
  CHECK(torchtitan_as_job(read_torchtitan(one, "one.toml"), m, 64).layout == "Et*8|t*9|t*8|t*7L");
  // pipeline_parallel_layers_per_stage 3: ceil(34 / 3) = 12 stages, 3 a rank.
  const std::string three =
      with(base, "pipeline_parallel_microbatch_size = 2",
           "pipeline_parallel_microbatch_size = 2\npipeline_parallel_layers_per_stage = 3");
  const job j3 = torchtitan_as_job(read_torchtitan(three, "three.toml"), m, 64);
  CHECK(j3.chunks == 3);
  // Only replicas (DDP, which torchtitan runs alone): every state whole, the all-reduce
  // overlapped with the backward; without a pipeline a micro-batch is the local batch.
  const std::string ddp =
      with(with(with(base, "data_parallel_shard_degree = -1",
                     "data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 64"),
                "tensor_parallel_degree = 2", "tensor_parallel_degree = 1"),
           "pipeline_parallel_degree = 4", "pipeline_parallel_degree = 1");
  const job d = torchtitan_as_job(read_torchtitan(ddp, "ddp.toml"), m, 64);
  CHECK(d.dp == 64);
  CHECK(d.sharding == dp_sharding::no_shard);
  CHECK(d.overlap_grad_reduce);
  CHECK(d.micro_batch_size == 8);
  CHECK(d.micro() == 1);
  // PyTorch's autograd accumulates the gradients in a pass of its own; its RMSNorm is fused.
  CHECK_FALSE(d.gradient_accumulation_fusion);
  CHECK_FALSE(d.eager);
  // selective_ac_option "0": every layer.
  const job every = torchtitan_as_job(
      read_torchtitan(with(base, "selective_ac_option = \"2\"", "selective_ac_option = \"0\""),
                      "z.toml"),
      m, 64);
  CHECK(every.policy == recompute::full);
  CHECK(every.recompute_every == 0);
  // selective_ac_option "op" (torchtitan's shipped Llama 3 8B): per-op checkpointing.
  transformer llama = testing::tiny_dense(32);
  llama.mlp = mlp_kind::gated;
  const job ops = torchtitan_as_job(read_torchtitan(fixture("llama3_8b.toml"), "l.toml"), llama, 8);
  CHECK(ops.policy == recompute::selective);
  CHECK(ops.recompute_ops);
  // With tensor parallelism too: torchtitan shards the norms, as per-op checkpointing needs.
  const job tp_ops = torchtitan_as_job(
      read_torchtitan(with(base, "selective_ac_option = \"2\"", "selective_ac_option = \"op\""),
                      "t.toml"),
      llama, 64);
  CHECK(tp_ops.tp == 2);
  CHECK(tp_ops.sequence_parallel);
  CHECK(tp_ops.recompute_ops);
}

TEST_CASE("torchtitan's settings weft does not price are refused by name") {
  const std::string base = fixture("pipelined.toml");
  refused(with(fixture("llama3_8b.toml"), "selective_ac_option = \"op\"",
               "selective_ac_option = \"layers\""),
          8, "[activation_checkpoint] selective_ac_option: 'layers': give op");
  // Per-op checkpointing is priced for Llama's dense block only.
  refused(fixture("llama3_8b.toml"), 8, "not this model's MLP");
  refused(base, 0, "data_parallel_shard_degree -1 takes the devices the other sizes leave");
  refused(base, 60, "--devices 60 is not a multiple of torchtitan's other sizes");
  refused(with(base, "data_parallel_shard_degree = -1",
               "data_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 2"),
          64, "HSDP");
  refused(with(base, "data_parallel_shard_degree = -1", "data_parallel_shard_degree = 4"), 64,
          "--devices 64 is not torchtitan's 32");
  refused(with(base, "tensor_parallel_degree = 2",
               "tensor_parallel_degree = 2\nenable_async_tensor_parallel = true"),
          64, "[parallelism] enable_async_tensor_parallel: tensor parallelism's collectives");
  refused(with(base, "\"Interleaved1F1B\"", "\"PipelineScheduleMulti\""), 64,
          "a schedule from a CSV");
  refused(with(base, "\"Interleaved1F1B\"", "\"Chimera\""), 64,
          "'Chimera' is not one of 1F1B, GPipe");
  refused(
      with(base, "enable_fsdp_float8_all_gather = false", "enable_fsdp_float8_all_gather = true"),
      64, "torchtitan's enable_fsdp_float8_all_gather: FSDP's parameters gathered in FP8");
  refused(with(base, "mode = \"selective\"", "mode = \"memory_budget\""), 64,
          "[activation_checkpoint] mode: 'memory_budget' is not priced");
  refused(with(base, "local_batch_size = 8", "local_batch_size = 8\nglobal_batch_size = 128"), 64,
          "accumulates 2 steps of local_batch_size x the data-parallel degree");
  refused(with(base, "data_parallel_shard_degree = -1",
               "data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 8"),
          64, "DDP has not supported > 1D parallelism");
  refused(with(base, "steps = 10", "steps = 10\nmixed_precision_param = \"float32\""), 64,
          "[training] mixed_precision_param");
  refused(with(base, "steps = 10", "steps = 10\nmixed_precision_reduce = \"float16\""), 64,
          "[training] mixed_precision_reduce: must be float32 or bfloat16");
  refused(with(base, "\"Interleaved1F1B\"",
               "\"DualPipeV\"\npipeline_parallel_expert_parallel_overlap = false"),
          64,
          "[parallelism] pipeline_parallel_expert_parallel_overlap: false: weft prices "
          "DualPipeV's pairs with the all-to-alls overlapped");
  refused(with(base, "pipeline_parallel_microbatch_size = 2",
               "pipeline_parallel_microbatch_size = 2\npipeline_parallel_split_points = "
               "[\"layers.8\"]"),
          64, "[parallelism] pipeline_parallel_split_points");
  refused(
      with(base, "converters = [\"float8\"]", "converters = [\"float8\", \"quantize.linear.mx\"]"),
      64, "[model] converters: 'quantize.linear.mx' is not priced");
  refused(
      with(base, "recipe_name = \"tensorwise\"", "recipe_name = \"tensorwise\"\nemulate = true"),
      64, "[float8] emulate");
  refused("training = 3\n", 8, "job.toml: [training] must be a table");
  // toml++ 3.3 meets undefined behaviour on some Unicode (a fuzzer found it): ASCII only.
  refused("[training]\nseq_len = 1 # \xe2\x80\x94\n", 8,
          "job.toml: line 2, column 15: a character beyond ASCII");
  refused(with(base, "local_batch_size = 8", "local_batch_size = 7"), 64,
          "local_batch_size 7 is not a multiple of pipeline_parallel_microbatch_size 2");
  refused(with(base, "seq_len = 4096", "seq_len = \"long\""), 64,
          "[training] seq_len must be a whole number");
  refused("[training\nseq_len = 1", 8, "job.toml: not TOML: line 1");
  // FSDP's gradients reduced in bf16 where torchtitan is told so (fp32 by default).
  const transformer m = testing::tiny_dense(32);
  CHECK(!torchtitan_as_job(read_torchtitan(base, "x.toml"), m, 64).grad_reduce_in_bf16);
  CHECK(torchtitan_as_job(read_torchtitan(with(base, "steps = 10",
                                               "steps = 10\nmixed_precision_reduce = \"bfloat16\""),
                                          "x.toml"),
                          m, 64)
            .grad_reduce_in_bf16);
  // A key of a read section that weft does not know is named, not silently dropped.
  const torchtitan_job t =
      read_torchtitan(with(base, "steps = 10", "steps = 10\nflux_capacitor = 1"), "x.toml");
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings.front() == "x.toml: [training] key 'flux_capacitor' is not used");
}
