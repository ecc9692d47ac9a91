// `weft plan` (docs/planning.md): a real training job — a model's config.json, Megatron's flags,
// a cluster — its step time, throughput, MFU and memory per stage, beside every schedule.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include <weft/core/time.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/job.hpp>
#include <weft/plan/megatron_model.hpp>
#include "options.hpp"

namespace weft::cli {

struct plan_args {
  static constexpr std::string_view name = "plan";
  std::string preset;              ///< --preset NAME: model, job and cluster from presets/NAME
  std::string model_file;          ///< --model: the model's config.json
  std::string cluster;             ///< --cluster: a built-in name or a JSON file
  std::string job_file;            ///< --job FILE.json
  weft::plan::job job;             ///< --tp --pp --dp --cp --ep --micro-batch-size ...
  bool check_memory = false;       ///< --check: exit 1 when the job does not fit its devices
  weft::seconds search_budget{0};  ///< --search-budget-s: 0, no schedule search
  long long evaluations = 0;
  long long seed = 1;
  std::string out;  ///< the fastest order found, as PyTorch's schedule CSV
  output_args output;
  /// --search [SECONDS]: the configuration search, for this long (0: not asked for)
  double configuration_budget = 0;
  long long devices = 0;  ///< --devices: the search's device count (0: the job's)
  int top = 5;            ///< --top: configurations the search reports
  /// --runtime: recommend only what this runtime runs
  weft::plan::runs_on runtime = weft::plan::runs_on::any;
  /// The job's flags given on the command line: the search keeps what they say.
  std::set<std::string> given;
  /// The model as Megatron's flags state it (--num-layers, --hidden-size, ...), instead of
  /// --model; `megatron_given` names the flags given.
  weft::plan::megatron_model megatron;
  std::set<std::string> megatron_given;
  bool vocab_file = false, merge_file = false;  ///< Megatron's --vocab-file, --merge-file
  /// Megatron's --fp16, and --accumulate-allreduce-grads-in-fp32 beside it (else its gradients
  /// are kept and reduced in fp16)
  bool fp16 = false, accumulate_fp32 = false;
};

int run_command(const plan_args& o);

}  // namespace weft::cli
