// A job written back as the flags that state it: `weft plan`'s (every setting that is not the
// default, so that pasting them plans the same job) and, for the schedules Megatron-LM runs, the
// arguments of a Megatron launch script.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <weft/plan/job.hpp>

namespace weft::plan {

namespace detail {
inline std::string number(double x) { return std::to_string(static_cast<long long>(x)); }
inline std::string module_list(perf::recompute_set s) {
  std::string out;
  for (std::size_t i = 0; i < perf::recompute_module_names.size(); ++i)
    if (perf::has(s, static_cast<perf::recompute_module>(i)))
      out += (out.empty() ? "" : " ") + std::string(perf::recompute_module_names[i]);
  return out;
}
/// The gradients' precision, in the spelling weft and Megatron share: --fp16 keeps them in 16
/// bits unless accumulated in fp32; bf16 keeps them in fp32 unless reduced in bf16.
template <class Add>
void add_precision(const job& j, Add&& add) {
  if (j.fp16) {
    add("--fp16");
    if (!j.grad_reduce_in_bf16) add("--accumulate-allreduce-grads-in-fp32");
  } else if (j.grad_reduce_in_bf16) {
    add("--grad-reduce-in-bf16");
  }
}
}  // namespace detail

/// Job `j` as `weft plan`'s flags: the sizes, the batch and the schedule always, every other
/// setting where it is not the default. Values with spaces or `|` are quoted for a shell.
inline std::vector<std::string> weft_flags(const job& j) {
  using detail::number;
  const job d;  // the defaults
  std::vector<std::string> f{"--tp",       number(j.tp), "--pp",       number(j.pp), "--dp",
                             number(j.dp), "--cp",       number(j.cp), "--ep",       number(j.ep)};
  const auto add = [&](std::string flag, std::string value = "") {
    f.push_back(std::move(flag));
    if (!value.empty()) f.push_back(std::move(value));
  };
  if (j.etp() != j.tp) add("--expert-tensor-parallel-size", number(j.etp()));
  add("--micro-batch-size", number(j.micro_batch_size));
  if (j.global_batch_size > 0) add("--global-batch-size", number(j.global_batch_size));
  add("--seq-length", number(j.seq));
  if (j.policy != d.policy)
    add("--recompute", std::string(recompute_names[static_cast<std::size_t>(j.policy)]));
  if (j.policy == recompute::selective && j.recompute_modules != d.recompute_modules)
    add("--recompute-modules", detail::module_list(j.recompute_modules));
  if (!j.recompute_method.empty()) add("--recompute-method", j.recompute_method);
  if (j.recompute_num_layers > 0) add("--recompute-num-layers", number(j.recompute_num_layers));
  if (j.recompute_every > 0) add("--recompute-every", number(j.recompute_every));
  if (j.recompute_ops) add("--recompute-ops");
  if (j.sequence_parallel) add("--sequence-parallel");
  add("--schedule", j.schedule);
  if (j.chunks != 1) add("--chunks", number(j.chunks));
  if (!j.layout.empty()) add("--pipeline-layout", "\"" + j.layout + "\"");
  if (j.sharding != d.sharding)
    add("--data-parallel-sharding-strategy", std::string(name_of(j.sharding)));
  if (!j.flash_attention) add("--no-flash-attention");
  if (j.flash_attention && j.attention != d.attention)
    add("--attention-backend",
        std::string(perf::attention_library_names[static_cast<std::size_t>(j.attention)]));
  if (j.overlap_grad_reduce) add("--overlap-grad-reduce");
  if (j.overlap_param_gather) add("--overlap-param-gather");
  detail::add_precision(j, add);
  if (j.fp8_param_gather) add("--fp8-param-gather");
  if (j.fp8_current_scaling && scales_per_tensor(j.fp8)) {  // Megatron's spelling, weft's too
    add("--fp8-format", std::string(fp8_names[static_cast<std::size_t>(j.fp8)]));
    add("--fp8-recipe", "tensorwise");
  } else if (j.fp8 != d.fp8) {
    add("--fp8", std::string(fp8_names[static_cast<std::size_t>(j.fp8)]));
  }
  if (j.cp_comm_type != d.cp_comm_type)
    add("--cp-comm-type", std::string(cp_comm_names[static_cast<std::size_t>(j.cp_comm_type)]));
  if (j.dispatcher != d.dispatcher)
    add("--moe-token-dispatcher-type",
        std::string(moe_dispatcher_names[static_cast<std::size_t>(j.dispatcher)]));
  if (j.runtime != d.runtime)
    add("--pipeline-runtime",
        std::string(pipeline_runtime_names[static_cast<std::size_t>(j.runtime)]));
  if (j.overlap_p2p_comm) add("--overlap-p2p-communication");
  if (j.scatter_gather_transfers) add("--scatter-gather-tensors-in-pipeline");
  if (j.overlap_moe_ep_comm) add("--overlap-moe-expert-parallel-comm");
  if (j.delay_wgrad_compute) add("--delay-wgrad-compute");
  if (j.tp_comm_overlap) add("--tp-comm-overlap");
  if (!j.gradient_accumulation_fusion) add("--no-gradient-accumulation-fusion");
  if (j.eager) add("--eager");
  if (j.eager_loss && !j.eager) add("--eager-loss");
  if (j.fused_rms_norm) add("--fused-rms-norm");
  if (j.grad_all_reduce_fp32) add("--grad-all-reduce-fp32");
  if (j.deepspeed_bf16) add("--deepspeed-bf16-optimizer");
  return f;
}

/// Whether Megatron-LM runs job `j`'s schedule: 1F1B, or its interleaved schedule (in a layout
/// or an even split) on more than 2 pipeline ranks (or with --overlap-p2p-communication) and
/// micro-batches a multiple of the pipeline ranks, as its arguments check; the zero-bubble and
/// V schedules, GPipe and DualPipe it does not.
inline bool megatron_runs(const job& j) {
  if (j.schedule == "1f1b") return true;
  return j.schedule == "interleaved" && (j.pp > 2 || j.overlap_p2p_comm) && j.micro() % j.pp == 0;
}

/// Whose code a recommendation must run on (`--runtime`): any, Megatron-LM's (1F1B and its
/// interleaved schedule), or torchtitan's — PyTorch's pipeline runtime, which runs every schedule
/// of one direction from its CSV and DualPipeV (`ScheduleDualPipeV`), not DualPipe's two copies.
enum class runs_on : std::uint8_t { any, megatron, torchtitan };
inline constexpr std::array<std::string_view, 3> runs_on_names{"any", "megatron", "torchtitan"};

/// Whether job `j` needs what Megatron-LM's code alone has, whatever its schedule and trainer:
/// the experts folded below tp (its parallel folding; torchtitan keeps them at tp's),
/// Transformer Engine's userbuffers in its layers, full recomputation of the first N layers of
/// each stage (its block method; torchtitan's counts every N-th layer).
inline bool megatron_code_only(const job& j) {
  return j.etp() != j.tp || j.tp_comm_overlap || block_recompute(j);
}

/// `megatron_code_only`'s features, as messages name them.
inline constexpr std::string_view megatron_code_only_features =
    "what only Megatron-LM's code runs (tp-comm-overlap, block recomputation, experts folded "
    "below tp)";

/// Whether, of Megatron-LM and torchtitan, only Megatron-LM runs job `j` whatever the schedule:
/// what its code alone has, or fp16 with loss scaling (torchtitan's mixed precision is bf16's).
/// A trainer of its own scales fp16's loss itself (PyTorch's GradScaler, Scaling's loss
/// scaler). Its selective recomputation by modules torchtitan lacks too, but a model on
/// PyTorch's pipeline runtime may run it on any schedule (`recomputes_by_module`).
inline bool megatron_only(const job& j) { return megatron_code_only(j) || j.fp16; }

/// What `runs` treats as Megatron-LM's alone for job `j`: `megatron_only`, or for a trainer of
/// its own (which scales fp16's loss itself) `megatron_code_only`.
inline bool runs_as_megatron_only(const job& j) {
  return j.own_trainer() ? megatron_code_only(j) : megatron_only(j);
}

/// Job `j`'s recomputation in a word or two: none, selective, full — or "block N", full
/// recomputation of the first N layers of each stage.
inline std::string recompute_text(const job& j) {
  if (block_recompute(j)) return "block " + std::to_string(j.recompute_num_layers);
  return std::string(recompute_names[static_cast<std::size_t>(j.policy)]);
}

/// Whether job `j` recomputes Megatron-LM's way selectively, by modules (core attention, the
/// MLP's activation, ...): torchtitan has no such form — its selective recomputation is per op
/// (`job::recompute_ops`) or every N-th layer whole (`job::recompute_every`).
inline bool recomputes_by_module(const job& j) {
  return j.policy == recompute::selective && !j.recompute_ops;
}

/// Why runtime `r` does not run job `j`'s schedule — a clause naming the rule, for a message —
/// or empty when it does. `runs` is its empty case: the one place these rules live.
inline std::string not_run_because(const job& j, runs_on r) {
  const bool torchtitan = r == runs_on::torchtitan;
  // The messages' parts, made only for a refusal: `runs` asks this of every plan.
  constexpr std::string_view megatron_schedules =
      "Megatron-LM runs 1f1b, and interleaved on more than 2 pipeline ranks with micro-batches a "
      "multiple of them";
  const auto schedule = [&] {
    return "--schedule " + j.schedule + (j.schedule == "interleaved" ? " on these sizes" : "");
  };
  const auto only_megatron = [&] {
    return std::string(j.fp16 ? "fp16 with its loss scaling (torchtitan's mixed precision is "
                                "bf16's)"
                              : megatron_code_only_features);
  };
  // A trainer's own (PyTorch's eager operations, Scaling's all-reduce, DeepSpeed's BF16
  // optimizer, torchtitan's per-op checkpointing, PyTorch's attention): not Megatron's code.
  if (j.own_trainer()) {
    if (r == runs_on::megatron) return j.own_trainer_reason();
    if (megatron_code_only(j))
      return j.own_trainer_reason() + ", and the job needs " +
             std::string(megatron_code_only_features);
    if (j.overlap_moe_ep_comm)
      return j.own_trainer_reason() + ", and Megatron-LM's combined 1F1B is its code alone";
    // Scaling's trainer runs itself (torchtitan is not it), with its pipeline engine's schedule;
    // so does DeepSpeed's pipeline engine, whose one schedule Scaling's ports.
    if (j.grad_all_reduce_fp32 || j.deepspeed_bf16) {
      if (r != runs_on::any)
        return std::string(j.grad_all_reduce_fp32 ? "Scaling's" : "DeepSpeed's") +
               " trainer runs itself, not torchtitan";
      if (!scaling_engine_runs(j)) return "its pipeline engine runs 1f1b alone";
      return {};
    }
    if (j.fp16)  // its own loss scaling; torchtitan's mixed precision is bf16's
      return torchtitan ? "torchtitan trains in bf16 (it has no fp16 loss scaling)" : "";
  }
  // Megatron's combined 1F1B: its code only, on its interleaved schedule (or no pipeline).
  if (j.overlap_moe_ep_comm) {
    if (torchtitan)
      return "Megatron-LM's combined 1F1B (--overlap-moe-expert-parallel-comm) is its code alone";
    const bool on_its_schedule =
        j.pp == 1 ? j.schedule == "1f1b" : j.schedule == "interleaved" && megatron_runs(j);
    if (!on_its_schedule)
      return "Megatron-LM's combined 1F1B runs on its interleaved schedule, on more than 2 "
             "pipeline ranks with micro-batches a multiple of them (1f1b without a pipeline), "
             "not " +
             schedule();
    return {};
  }
  if (megatron_only(j)) {
    if (torchtitan)
      return j.fp16 ? "torchtitan trains in bf16 (it has no fp16 loss scaling)"
                    : "the job needs " + only_megatron();
    if (!megatron_runs(j))
      return "only Megatron-LM runs " + only_megatron() + ", and not " + schedule() + " (" +
             std::string(megatron_schedules) + ")";
    return {};
  }
  switch (r) {
    case runs_on::any:
      return {};
    case runs_on::megatron:
      if (megatron_runs(j)) return {};
      return "it does not run " + schedule() + " (" + std::string(megatron_schedules) + ")";
    case runs_on::torchtitan:
      if (j.schedule == "dualpipe") return "it does not run dualpipe (DualPipe's two copies)";
      if (recomputes_by_module(j))
        return "it has no selective recomputation by modules (Megatron-LM's); its own is per op "
               "(--recompute-ops) or every N-th layer whole (--recompute-every)";
      return {};
  }
  return "an unknown runtime";
}

/// Whether runtime `r` runs job `j`'s schedule (`not_run_because` says why not).
inline bool runs(const job& j, runs_on r) { return not_run_because(j, r).empty(); }

/// Job `j` as a Megatron-LM launch script's arguments (Megatron's own spellings, which
/// `weft plan` reads too), or none when Megatron does not run it (its schedule, attention
/// without a fused kernel).
inline std::optional<std::vector<std::string>> megatron_arguments(const job& j) {
  using detail::number;
  // Megatron's attention is fused (flash or cuDNN) in every release that runs these flags.
  // torchtitan's every N-th layer recomputed has no Megatron form.
  // Nor a trainer's own (`job::own_trainer`): PyTorch's eager norms, activation and loss (its own
  // are fused and vocabulary-parallel), torchtitan's per-op checkpointing, PyTorch's attention;
  // nor Scaling's all-reduce of a sharded optimizer's gradients, nor DeepSpeed's BF16 optimizer.
  if (!megatron_runs(j) || !j.flash_attention || j.recompute_every > 0 || j.own_trainer())
    return std::nullopt;
  std::vector<std::string> a{"--tensor-model-parallel-size",
                             number(j.tp),
                             "--pipeline-model-parallel-size",
                             number(j.pp),
                             "--context-parallel-size",
                             number(j.cp),
                             "--expert-model-parallel-size",
                             number(j.ep),
                             "--micro-batch-size",
                             number(j.micro_batch_size)};
  const auto add = [&](std::string flag, std::string value = "") {
    a.push_back(std::move(flag));
    if (!value.empty()) a.push_back(std::move(value));
  };
  if (j.etp() != j.tp) add("--expert-tensor-parallel-size", number(j.etp()));
  if (j.global_batch_size > 0) add("--global-batch-size", number(j.global_batch_size));
  add("--seq-length", number(j.seq));
  if (j.sequence_parallel) add("--sequence-parallel");
  if (j.policy != recompute::none)
    add("--recompute-granularity",
        std::string(recompute_names[static_cast<std::size_t>(j.policy)]));
  if (j.policy == recompute::full) {  // Megatron asks how: every layer, each on its own, or
                                      // the first N of each stage
    const bool block = block_recompute(j);
    add("--recompute-method", block ? "block" : "uniform");
    add("--recompute-num-layers", block ? number(j.recompute_num_layers) : "1");
  }
  if (j.policy == recompute::selective && j.recompute_modules != perf::default_recompute_modules)
    add("--recompute-modules", detail::module_list(j.recompute_modules));
  if (j.chunks != 1 && j.layout.empty())
    add("--num-virtual-stages-per-pipeline-rank", number(j.chunks));
  if (!j.layout.empty()) add("--pipeline-model-parallel-layout", "\"" + j.layout + "\"");
  // Megatron keeps the optimizer states whole unless told (weft shards them unless told).
  if (j.sharding == dp_sharding::optim) add("--use-distributed-optimizer");
  if (shards_gradients(j.sharding)) {
    // As NVIDIA's Megatron-FSDP guide launches it (its checkpoints in their own format).
    add("--use-megatron-fsdp");
    add("--data-parallel-sharding-strategy", std::string(name_of(j.sharding)));
    add("--no-gradient-accumulation-fusion");
    add("--use-distributed-optimizer");
    add("--ckpt-format", "fsdp_dtensor");
  } else if (!j.gradient_accumulation_fusion) {
    add("--no-gradient-accumulation-fusion");
  }
  if (j.attention != perf::attention_library::transformer_engine)  // fused or flash
    add("--attention-backend",
        std::string(perf::attention_library_names[static_cast<std::size_t>(j.attention)]));
  if (j.overlap_grad_reduce) add("--overlap-grad-reduce");
  if (j.overlap_param_gather) add("--overlap-param-gather");
  // Megatron's interleaved schedule keeps a transfer in flight unless told (overlap_p2p_comm
  // defaults on in arguments.py); its other schedules have no such overlap.
  if (j.schedule == "interleaved" && !j.overlap_p2p_comm) add("--no-overlap-p2p-communication");
  if (j.overlap_moe_ep_comm) add("--overlap-moe-expert-parallel-comm");
  if (j.delay_wgrad_compute) add("--delay-wgrad-compute");
  if (j.tp_comm_overlap) add("--tp-comm-overlap");
  detail::add_precision(j, add);
  if (j.fp8_param_gather) add("--fp8-param-gather");
  if (scales_per_tensor(j.fp8)) {
    add("--fp8-format", std::string(fp8_names[static_cast<std::size_t>(j.fp8)]));
    if (j.fp8_current_scaling) add("--fp8-recipe", "tensorwise");
  }
  if (j.fp8 == fp8_recipe::blockwise) {
    add("--fp8-format", "e4m3");
    add("--fp8-recipe", "blockwise");
  }
  if (j.cp_comm_type == cp_comm::all_gather) add("--cp-comm-type", "all_gather");
  if (j.dispatcher == moe_dispatcher::flex) {  // DeepEP's kernels, which weft's flex prices
    add("--moe-token-dispatcher-type", "flex");
    add("--moe-enable-deepep");
  } else if (j.ep > 1) {  // Megatron's default is allgather; weft prices the all-to-all
    add("--moe-token-dispatcher-type", "alltoall");
  }
  if (!j.fp16) add("--bf16");  // --fp16 is among the gradients' precision above
  return a;
}

/// Whose code runs job `j`'s schedule as priced: Megatron-LM's (1F1B, interleaved, with its
/// transfers), DeepSeek's DualPipe (both directions), else PyTorch's pipeline runtime, from the
/// schedule's CSV (`weft plan --out`, torchtitan's `pipeline_parallel_schedule_csv`).
inline std::string runtime_for(const job& j) {
  // A trainer's own (PyTorch's eager operations, Scaling's all-reduce, DeepSpeed's BF16
  // optimizer): not Megatron's code.
  const bool own = j.own_trainer(), megatron = !own && megatron_runs(j);
  if (own && j.pp == 1) {
    if (j.loss_eager()) return "PyTorch's eager operations (no pipeline)";
    if (j.deepspeed_bf16) return "Megatron-DeepSpeed (no pipeline)";
    if (j.grad_all_reduce_fp32) return "a PyTorch trainer as Aleph Alpha's Scaling (no pipeline)";
    // torchtitan's per-op checkpointing, PyTorch's attention
    return recomputes_by_module(j) ? "a PyTorch trainer of its own (no pipeline)"
                                   : "torchtitan, or a PyTorch trainer of its own (no pipeline)";
  }
  if (j.grad_all_reduce_fp32) return "Aleph Alpha's Scaling (its 1F1B pipeline engine)";
  if (j.deepspeed_bf16) return "Megatron-DeepSpeed (DeepSpeed's 1F1B pipeline engine)";
  if (!own && j.overlap_moe_ep_comm) return "Megatron-LM (its combined 1F1B)";
  // Without a pipeline 1F1B is any runtime's loop over the micro-batches; a schedule of chunks
  // on one rank (DualPipeV's paired passes, the V's) is still its runtime's.
  if (j.pp == 1 && megatron)
    return megatron_only(j) || recomputes_by_module(j) ? "Megatron-LM (no pipeline)"
                                                       : "Megatron-LM or torchtitan (no pipeline)";
  if (megatron && j.runtime == pipeline_runtime::megatron) return "Megatron-LM";
  // Of Megatron-LM and torchtitan, Megatron-LM alone recomputes by modules.
  if (megatron && (megatron_only(j) || recomputes_by_module(j)))
    return "Megatron-LM (priced as PyTorch's runtime issues transfers; --runtime megatron "
           "prices Megatron's)";
  if (megatron)
    return "PyTorch's pipeline runtime, or Megatron-LM (priced as PyTorch's runtime issues "
           "transfers; --runtime megatron prices Megatron's)";
  if (j.schedule == "dualpipe") return "DeepSeek's DualPipe";
  if (j.schedule == "dualpipev")
    return recomputes_by_module(j)
               ? "DeepSeek's DualPipe (DualPipeV)"
               : "DeepSeek's DualPipe (DualPipeV), or torchtitan's ScheduleDualPipeV";
  if (recomputes_by_module(j))  // torchtitan has no such form: the model's own to run
    return "PyTorch's pipeline runtime (its CSV: these flags and --out FILE.csv), the model "
           "recomputing its modules itself (torchtitan does not)";
  return "PyTorch's pipeline runtime (its CSV: these flags and --out FILE.csv)";
}

/// Flags joined by spaces.
inline std::string joined(const std::vector<std::string>& flags) {
  std::string out;
  for (const std::string& f : flags) out += (out.empty() ? "" : " ") + f;
  return out;
}

}  // namespace weft::plan
