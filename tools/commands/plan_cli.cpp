// `weft plan`'s options (commands/plan.hpp) on CLI11: the model, the job as Megatron's flags (or
// files, or a preset) and the cluster; and the rules CLI11 cannot express (`check`). The groups it
// shares with other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/plan/job.hpp>
#include <weft/plan/megatron_flags.hpp>
#include <weft/plan/memory.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

namespace {

/// A preset's folder name: plain, so that it names a folder under presets/ and nothing else.
std::string preset_folder_name(const std::string& v) {
  const bool plain =
      !v.empty() && v.size() <= 64 &&
      v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") == std::string::npos &&
      v.front() != '.';
  return plain ? "" : v + " is not a preset's name (a-z, 0-9, . - _)";
}

/// Megatron's flags that say what weft assumes anyway, or must — and
/// --no-gradient-accumulation-fusion, priced — a launch script's arguments as they are.
std::vector<CLI::Option*> megatron_only_flags(CLI::App& sub, weft::plan::job& j) {
  namespace plan = weft::plan;
  namespace L = plan::job_limits;
  std::vector<CLI::Option*> out;
  out.push_back(sub.add_option("--decoder-first-pipeline-num-layers", j.decoder_first,
                               "layers of the first stage, the rest split evenly (a layout)")
                    ->check(whole_in(1, weft::limits::layers)));
  out.push_back(sub.add_option("--decoder-last-pipeline-num-layers", j.decoder_last,
                               "layers of the last stage, the rest split evenly (a layout)")
                    ->check(whole_in(1, weft::limits::layers)));
  out.push_back(sub.add_option("--fp8-format", j.fp8_format,
                               "e4m3 or hybrid: FP8 on, with --fp8-recipe's scaling (weft's "
                               "--fp8 names the recipe at once)"));
  out.push_back(sub.add_option("--fp8-recipe", j.fp8_recipe_name,
                               "delayed (per-tensor scales from earlier steps' amax, the "
                               "default), tensorwise (current scaling: each tensor read for its "
                               "own amax first) or blockwise (DeepSeek's tiles); mxfp8 is not "
                               "priced"));
  out.push_back(sub.add_option("--recompute-method", j.recompute_method,
                               "with --recompute-granularity full: uniform (every layer, with "
                               "--recompute-num-layers 1) or block (the first "
                               "--recompute-num-layers of each stage, the rest kept whole)")
                    ->check(CLI::IsMember({"uniform", "block"})));
  out.push_back(sub.add_option("--recompute-num-layers", j.recompute_num_layers,
                               "with --recompute-method: layers a checkpoint holds (uniform: 1) "
                               "or layers of each stage recomputed (block)")
                    ->check(whole_in(1, weft::limits::layers)));
  out.push_back(sub.add_option("--recompute-every", j.recompute_every,
                               "with --recompute full: only every N-th layer of each stage "
                               "(torchtitan's selective_ac_option N), the rest kept whole")
                    ->check(whole_in(1, weft::limits::layers)));
  out.push_back(sub.add_flag("--recompute-ops", j.recompute_ops,
                             "with --recompute selective: torchtitan's per-op checkpointing "
                             "(selective_ac_option 'op'): each layer keeps every other matmul's "
                             "output and attention's, and runs the rest again (Llama's dense "
                             "block)"));
  out.push_back(sub.add_flag_callback(
      "--use-megatron-fsdp", [] {},
      "Megatron-FSDP: what it shards is --data-parallel-sharding-strategy's (which a "
      "--use-distributed-optimizer beside it leaves)"));
  out.push_back(sub.add_flag_callback(
      "--no-gradient-accumulation-fusion", [&j] { j.gradient_accumulation_fusion = false; },
      "each micro-batch's weight gradients added to the accumulated ones in a pass of their "
      "own (Megatron fuses the add into the dW matmul by default; with Megatron-FSDP, whose "
      "launch needs the flag, a 1/dp shard is added: not priced)"));
  out.push_back(sub.add_option_function<std::string>(
      "--ckpt-format", [](const std::string&) {}, "the checkpoints' format (no part of a step)"));
  out.push_back(sub.add_flag_callback(
      "--moe-enable-deepep", [] {},
      "DeepEP's kernels for --moe-token-dispatcher-type flex (what weft's flex prices)"));
  out.push_back(sub.add_flag_callback(
      "--use-distributed-optimizer", [&j] { j.sharding = plan::dp_sharding::optim; },
      "shard the optimizer states over the data-parallel ranks (the default)"));
  out.push_back(sub.add_flag("--grad-reduce-in-bf16", j.grad_reduce_in_bf16,
                             "the main gradients kept and reduce-scattered in bf16 (not fp32)"));
  out.push_back(sub.add_flag("--fp8-param-gather", j.fp8_param_gather,
                             "the layers' weights kept and all-gathered in FP8 (with --fp8)"));
  out.push_back(sub.add_flag_callback(
      "--bf16", [] {}, "16-bit brain floats (what weft prices; the default)"));
  out.push_back(
      sub.add_option_function<std::string>(
             "--attention-backend",
             [&j](const std::string& v) {
               if (plan::scores_whole(v)) j.flash_attention = false;
               j.attention = plan::attention_library_of(v);
             },
             "auto (Transformer Engine's choice: cuDNN's on Hopper), fused (cuDNN's), flash "
             "(FlashAttention-3 on Hopper) or sdpa (PyTorch's scaled_dot_product_attention, "
             "FlashAttention-2): fused attention at that library's measured rates; unfused or "
             "local: the scores kept whole (--no-flash-attention)")
          ->check(CLI::IsMember(std::vector<std::string>(std::begin(plan::attention_backends),
                                                         std::end(plan::attention_backends)))));
  out.push_back(sub.add_option_function<std::string>(
                       "--transformer-impl",
                       [&j](const std::string& v) {
                         if (v == "local") j.flash_attention = false;
                       },
                       "transformer_engine (the default) or local (Megatron's own layers, "
                       "attention unfused)")
                    ->check(CLI::IsMember(std::vector<std::string>(
                        std::begin(plan::transformer_impls), std::end(plan::transformer_impls)))));
  out.push_back(sub.add_flag_callback(
      "--moe-grouped-gemm", [] {},
      "each rank's experts as one grouped matmul (as weft "
      "prices them)"));
  out.push_back(
      sub.add_option("--expert-tensor-parallel-size", j.expert_tp,
                     "tensor parallelism of the experts: --tp's by default; below it "
                     "(Megatron's parallel folding, with --sequence-parallel) expert "
                     "parallelism folds over the tensor-parallel ranks too: ep x this divides "
                     "tp x dp x cp")
          ->check(whole_in(1, L::tp)));
  return out;
}

/// How the pipeline's code runs it: whose runtime, Megatron's transfers and its combined 1F1B.
void add_runtime_flags(CLI::App& sub, weft::plan::job& j, std::vector<CLI::Option*>& flags) {
  namespace plan = weft::plan;
  flags.push_back(
      sub.add_option("--pipeline-runtime", j.runtime,
                     "whose code runs the pipeline: pytorch (a transfer awaited only by the op "
                     "that needs it; the default) or megatron (1F1B's and the interleaved "
                     "schedule's batched transfers, each awaited by the host)")
          ->transform(one_of<plan::pipeline_runtime>(
              spelled<plan::pipeline_runtime>(plan::pipeline_runtime_names))));
  flags.push_back(sub.add_flag("--overlap-p2p-communication", j.overlap_p2p_comm,
                               "Megatron's interleaved schedule with one transfer in flight "
                               "behind each step (needs --pipeline-runtime megatron)"));
  flags.push_back(sub.add_flag_callback(
                         "--no-overlap-p2p-communication", [&j] { j.overlap_p2p_comm = false; },
                         "Megatron's interleaved schedule with batched transfers, each awaited "
                         "(Megatron's spelling: its interleaved schedule overlaps unless told; "
                         "weft's flags do not)")
                      ->excludes(flags.back()));
  flags.push_back(sub.add_flag(
      "--overlap-moe-expert-parallel-comm", j.overlap_moe_ep_comm,
      "Megatron's combined 1F1B: each steady-phase forward beside another micro-batch's "
      "backward, the all-to-alls of each hidden behind the other's compute (MoE, --ep > 1; "
      "--schedule interleaved, or no pipeline)"));
  flags.push_back(sub.add_flag("--delay-wgrad-compute", j.delay_wgrad_compute,
                               "the experts' weight gradients beside the dispatch's backward "
                               "(needs --overlap-moe-expert-parallel-comm; priced as it)"));
  flags.push_back(sub.add_flag("--tp-comm-overlap", j.tp_comm_overlap,
                               "Transformer Engine's userbuffers: the dense linears' "
                               "tensor-parallel gathers and scatters beside their GEMMs, with its "
                               "default settings (needs --sequence-parallel)"));
  flags.push_back(sub.add_flag("--eager", j.eager,
                               "PyTorch's eager operations for the RMSNorms, a gated activation "
                               "and rotary embeddings, each op a kernel (trainers written as "
                               "Llama's reference is; Megatron's and torch.compile's are fused)"));
  flags.push_back(sub.add_flag("--fused-rms-norm", j.fused_rms_norm,
                               "with --eager, the RMSNorms one fused kernel all the same "
                               "(apex's FusedRMSNorm, FlashAttention's), the rest eager"));
  flags.push_back(sub.add_flag("--eager-loss", j.eager_loss,
                               "the loss as PyTorch computes it: the logits gathered over tp, "
                               "in fp32, its cross_entropy (--eager implies it; Megatron's is "
                               "vocabulary-parallel)"));
  flags.push_back(sub.add_flag("--grad-all-reduce-fp32", j.grad_all_reduce_fp32,
                               "Aleph Alpha's Scaling trainer: ZeRO-1 with the whole gradients "
                               "all-reduced in fp32 after the backward, then each rank's updated "
                               "shard of the parameters all-gathered (Megatron reduce-scatters); "
                               "its 1F1B pipeline engine and the logits it keeps"));
  flags.push_back(sub.add_flag("--deepspeed-bf16-optimizer", j.deepspeed_bf16,
                               "DeepSpeed's BF16_Optimizer (Megatron-DeepSpeed's bf16 runs): "
                               "each micro-batch's gradients added into fp32 ones, the 16-bit "
                               "ones kept until the next backward, the whole all-reduced in "
                               "bf16, the optimizer's states sharded; its 1F1B pipeline engine"));
  flags.push_back(sub.add_flag("--scatter-gather-tensors-in-pipeline", j.scatter_gather_transfers,
                               "Megatron-LM's transfers until 2022: without sequence parallelism "
                               "each device sends 1/tp and the receivers all-gather it (needs "
                               "--pipeline-runtime megatron)"));
}

/// The job's flags, in Megatron's names: what a job file or a preset's job says instead.
std::vector<CLI::Option*> job_flags(CLI::App& sub, weft::plan::job& j) {
  namespace plan = weft::plan;
  namespace L = plan::job_limits;
  std::vector<CLI::Option*> flags{
      sub.add_option("--tp,--tensor-model-parallel-size", j.tp, "tensor-parallel size")
          ->check(whole_in(1, L::tp)),
      sub.add_option("--pp,--pipeline-model-parallel-size", j.pp, "pipeline-parallel size")
          ->check(whole_in(1, L::pp)),
      sub.add_option("--dp", j.dp, "data-parallel size")->check(whole_in(1, L::dp)),
      sub.add_option("--cp,--context-parallel-size", j.cp, "context-parallel size")
          ->check(whole_in(1, L::cp)),
      sub.add_option("--ep,--expert-model-parallel-size", j.ep,
                     "expert-parallel size (carved from dp x cp)")
          ->check(whole_in(1, L::ep)),
      sub.add_option("--micro-batch-size", j.micro_batch_size, "sequences per micro-batch")
          ->check(whole_in(1, L::micro_batch_size)),
      sub.add_option("--global-batch-size", j.global_batch_size,
                     "sequences per optimizer step (default: one micro-batch per dp rank)")
          ->check(whole_in(1, L::global_batch_size)),
      sub.add_option("--seq-length", j.seq, "tokens per sequence (default 4096)")
          ->check(whole_in(1, L::seq)),
      sub.add_option("--recompute,--recompute-granularity", j.policy,
                     "none, selective or full (default none)")
          ->transform(one_of<plan::recompute>(spelled<plan::recompute>(plan::recompute_names))),
      sub.add_flag("--sequence-parallel", j.sequence_parallel,
                   "shard what tensor parallelism replicates over its ranks too"),
      sub.add_option("--schedule", j.schedule, "the pipeline schedule (default 1f1b)")
          ->check(CLI::IsMember(schedule_names)),
      sub.add_option("--chunks,--num-virtual-stages-per-pipeline-rank", j.chunks,
                     "model chunks per rank (the schedules that take a count; default 1)")
          ->check(whole_in(1, weft::limits::chunks)),
      sub.add_option("--num-layers-per-virtual-pipeline-stage", j.layers_per_virtual_stage,
                     "layers a model chunk holds: --chunks as layers / (pp x this)")
          ->check(whole_in(1, weft::limits::layers)),
      sub.add_option("--pipeline-layout,--pipeline-model-parallel-layout", j.layout,
                     "the layers of each stage in Megatron's grammar, e.g. \"Et*3|(tt|)*29,m|L\""),
      sub.add_flag("--overlap-grad-reduce", j.overlap_grad_reduce,
                   "the gradients' reduce-scatter overlapped, bucket by bucket, with the last "
                   "backward and the pipeline's cool-down"),
      sub.add_flag("--overlap-param-gather", j.overlap_param_gather,
                   "the distributed optimizer's parameter all-gather overlapped with the next "
                   "step's warm-up and first forward (needs --overlap-grad-reduce)")};
  flags.push_back(
      sub.add_option_function<std::vector<std::string>>(
             "--recompute-modules",
             [&j](const std::vector<std::string>& names) {
               j.recompute_modules = plan::recompute_modules_of(names, "--recompute-modules");
             },
             "with --recompute selective, the parts it runs again (Megatron's names): core_attn "
             "(the default), layernorm, mla_up_proj, moe_act, mlp")
          ->expected(0, CLI::detail::expected_max_vector_size)
          ->delimiter(','));
  for (CLI::Option* f : megatron_only_flags(sub, j)) flags.push_back(f);
  auto* whole = sub.add_flag_callback(
      "--no-distributed-optimizer", [&j] { j.sharding = plan::dp_sharding::no_shard; },
      "keep the optimizer states whole on every data-parallel rank");
  flags.push_back(whole);
  flags.push_back(
      sub.add_option("--data-parallel-sharding-strategy", j.sharding,
                     "what the data-parallel ranks shard (Megatron-FSDP's names): no_shard, optim "
                     "(the distributed optimizer, ZeRO-1; the default), optim_grads (ZeRO-2) or "
                     "optim_grads_params (FSDP, ZeRO-3)")
          ->transform(
              one_of<plan::dp_sharding>(spelled<plan::dp_sharding>(plan::dp_sharding_names)))
          ->excludes(whole));
  flags.push_back(
      sub.add_option("--fp8", j.fp8,
                     "the layers' linears in FP8: e4m3, hybrid (Transformer Engine's recipes) or "
                     "blockwise (DeepSeek-V3's tiles); default none, all bf16")
          ->transform(one_of<plan::fp8_recipe>(spelled<plan::fp8_recipe>(plan::fp8_names))));
  flags.push_back(
      sub.add_option("--cp-comm-type", j.cp_comm_type,
                     "how context parallelism moves keys and values: p2p (a ring behind the "
                     "scores; the default) or all_gather (gathered before attention, exposed)")
          ->transform(one_of<plan::cp_comm>(spelled<plan::cp_comm>(plan::cp_comm_names))));
  flags.push_back(
      sub.add_option("--moe-token-dispatcher-type", j.dispatcher,
                     "how MoE layers move tokens: alltoall (every copy; the default) or flex "
                     "(DeepEP's: once a node, then NVLink)")
          ->transform(one_of<plan::moe_dispatcher>(
              spelled<plan::moe_dispatcher>(plan::moe_dispatcher_names))));
  add_runtime_flags(sub, j, flags);
  flags.push_back(sub.add_flag_callback(
      "--no-flash-attention", [&j] { j.flash_attention = false; },
      "attention's scores as whole matmuls, kept for the backward (2022's Megatron)"));
  return flags;
}

/// --cluster's check: a built-in cluster's name or a FILE.json.
std::string cluster_named(const std::string& v) {
  for (const char* n : {"a100-80g", "h100-sxm", "h800", "ascend-910b"})
    if (v == n) return "";
  if (v.size() > 5 && v.ends_with(".json")) return "";
  return v + " is not a100-80g, h100-sxm, h800, ascend-910b or a FILE.json";
}

}  // namespace

void define(CLI::App& sub, plan_args& o, deferred&) {
  // The model, the job and the cluster: flags, files, or a preset's three files.
  auto* preset =
      sub.add_option("--preset", o.preset,
                     "a preset's folder of config.json, job.json and cluster.json "
                     "(presets/: llama2-70b-xdc, ampipe-16p, deepseek-v3, bloom-176b, or "
                     "one's own under $WEFT_PRESETS; llama3-405b is weft tp2d's)")
          ->check(preset_folder_name, "NAME");
  sub.add_option("--model", o.model_file, "the model's config.json")->excludes(preset);
  sub.add_option("--cluster", o.cluster,
                 "a100-80g, h100-sxm, h800, ascend-910b, or FILE.json for one's own "
                 "(docs/planning.md has the schema)")
      ->excludes(preset)
      ->check(cluster_named, "CLUSTER");
  auto* job_file = sub.add_option("--job", o.job_file,
                                  "the job as a JSON file keyed by these flags without their "
                                  "dashes (docs/planning.md), or torchtitan's FILE.toml (with "
                                  "--devices where its data_parallel_shard_degree is -1)")
                       ->excludes(preset);
  for (CLI::Option* f : job_flags(sub, o.job)) f->excludes(job_file)->excludes(preset);
  auto* model = sub.get_option("--model");
  for (CLI::Option* f : megatron_model_options(sub, o)) f->excludes(model)->excludes(preset);
  megatron_inert_options(sub, o);
  sub.get_option("--no-distributed-optimizer")
      ->excludes(sub.get_option("--use-distributed-optimizer"));
  sub.get_option("--use-megatron-fsdp")->needs(sub.get_option("--data-parallel-sharding-strategy"));
  sub.add_option_function<double>(
         "--search-budget-s", [&o](double s) { o.search_budget = weft::seconds{s}; },
         "also run the schedule search (weft search) on the best plan's costs for this long "
         "(default 0: not at all)")
      ->check(CLI::Range(0.0, 86400.0));
  search_walk_options(sub, o.evaluations, o.seed, "orders");
  sub.add_option("--out", o.out,
                 "write the fastest order found as PyTorch's schedule CSV (weft run "
                 "--schedule-file runs it)");
  auto* search = sub.add_option_function<std::string>(
                        "--search",
                        [&o](const std::string& v) {
                          o.configuration_budget = v.empty() ? 8.0 : std::stod(v);
                        },
                        "choose the configuration: every tp x pp x dp x cp (ep from dp x cp), "
                        "micro-batch size, recomputation (none, selective, full, or full of "
                        "the fewest first layers of each stage that fit: Megatron's block "
                        "method), sharding, schedule, chunks and layout within the device's "
                        "memory, for SECONDS (default 8); the sizes given as flags are kept")
                     ->expected(0, 1)
                     ->check(
                         [](const std::string& v) -> std::string {
                           if (v.empty()) return "";
                           try {
                             std::size_t used = 0;
                             const double s = std::stod(v, &used);
                             if (used == v.size() && s > 0 && s <= 86400) return "";
                           } catch (const std::exception&) {
                           }
                           return "--search takes a budget of more than 0 and at most 86400 "
                                  "seconds, got " +
                                  v;
                         },
                         "SECONDS");
  sub.add_option("--devices", o.devices,
                 "the devices (Megatron's world size): dp is what tp x pp x cp leaves of them; "
                 "with --search, the devices to split (default: tp x pp x dp x cp)")
      ->check(whole_in(1, weft::plan::job_limits::devices))
      ->excludes(sub.get_option("--dp"));
  sub.add_option("--top", o.top, "with --search: configurations to report (default 5)")
      ->check(whole_in(1, 1000))
      ->needs(search);
  sub.add_option("--runtime", o.runtime,
                 "recommend only what this code runs: any (the default), megatron (1F1B and "
                 "its interleaved schedule, priced as --pipeline-runtime megatron) or "
                 "torchtitan (PyTorch's runtime: any schedule of one direction from its CSV, "
                 "and DualPipeV)")
      ->transform(
          one_of<weft::plan::runs_on>(spelled<weft::plan::runs_on>(weft::plan::runs_on_names)));
  // The flags a user gives: the search leaves their sizes as given; a launch script's silence
  // is Megatron's defaults.
  for (const char* name :
       {"--tp", "--pp", "--cp", "--ep", "--expert-tensor-parallel-size", "--micro-batch-size",
        "--recompute", "--recompute-method", "--recompute-num-layers", "--schedule",
        "--data-parallel-sharding-strategy", "--no-distributed-optimizer",
        "--use-distributed-optimizer", "--pipeline-runtime", "--no-overlap-p2p-communication"})
    sub.get_option(name)->each([&o, name](const std::string&) { o.given.insert(name); });
  sub.add_flag("--check", o.check_memory,
               "rule 5 in bytes: exit 1 (illegal) when a rank's model states and live "
               "activations exceed its device's memory, naming the op where it first does");
  output_options(sub, o.output, true);
  // The search reports configurations; one job's order, pictures and check are the plan's.
  for (const char* name : {"--search-budget-s", "--out", "--check", "--svg", "--trace"})
    search->excludes(sub.get_option(name));
  // It chooses the schedule, its chunks and the layout itself.
  for (const char* name :
       {"--schedule", "--chunks", "--pipeline-layout", "--num-layers-per-virtual-pipeline-stage",
        "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
        "--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"})
    search->excludes(sub.get_option(name));
}

void check(const plan_args& o) {
  const bool model = !o.model_file.empty() || !o.megatron_given.empty();
  if (o.preset.empty() && (!model || o.cluster.empty()))
    bad("plan needs --model (or Megatron's --num-layers, --hidden-size, ...) and --cluster (or "
        "--preset NAME)");
}

}  // namespace weft::cli
