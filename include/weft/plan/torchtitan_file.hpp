// A training job from torchtitan's TOML job config (`--job.config_file`; torchtitan read TOML
// until its configs became Python in 2026): [training], [parallelism], [activation_checkpoint]
// and FP8 ([float8], later [quantize.linear.float8], on when [model] converters name it) read
// as weft's job, with torchtitan's meanings — dp = data_parallel_replicate x _shard (-1: the
// devices left), FSDP over the shard degree, pipeline micro-batches of
// pipeline_parallel_microbatch_size, the stages split as torchtitan splits them (the embedding
// and the output each weighed as a layer). A key of those sections that would change the
// step and that weft does not price is refused by name; keys of the other sections (the
// optimizer's schedule, checkpoints, metrics, ...) are no part of a step's cost and are not
// read. Needs toml++ (Debian's libtomlplusplus-dev).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include <weft/core/error.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/job.hpp>

namespace weft::plan {

/// What a torchtitan TOML states, before the model and the device count resolve it.
struct torchtitan_job {
  job spec;  ///< tp, pp, cp, ep, seq, recomputation, FP8, schedule as torchtitan names them
  int dp_replicate = 1;
  int dp_shard = -1;  ///< -1: the devices the other sizes leave
  int local_batch_size = 8, global_batch_size = -1, microbatch = 1;
  int first_less = 1, last_less = 1;  ///< the first and last stages' weights for embedding/output
  int layers_per_stage = 0;           ///< pipeline_parallel_layers_per_stage; 0: not given
  int stages_per_rank = 1;            ///< 1 for single-stage schedules, else 2 unless derived
  bool fp8_gather = false;            ///< enable_fsdp_float8_all_gather (FP8 on)
  std::vector<std::string> warnings;
};

namespace detail {

/// torchtitan's schedule names (PyTorch's `get_schedule_class`, any case) as weft's, with
/// whether the schedule runs more than one stage a rank.
struct titan_schedule {
  std::string_view theirs, ours;
  bool multi;
};
inline constexpr titan_schedule titan_schedules[] = {
    {"1f1b", "1f1b", false},
    {"gpipe", "gpipe", false},
    {"interleaved1f1b", "interleaved", true},
    {"loopedbfs", "looped-bfs", true},
    {"interleavedzerobubble", "interleaved-zb", true},
    {"zbvzerobubble", "zb-v", true},
    {"dualpipev", "dualpipev", true},
};

inline std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// One section's keys, read by type, and what to say about the ones not read.
class toml_section {
 public:
  toml_section(const toml::table* t, std::string name, std::string file)
      : t_(t), name_(std::move(name)), file_(std::move(file)) {}
  bool present() const { return t_ != nullptr; }
  bool has(std::string_view key) const { return t_ && t_->contains(key); }
  std::string where(std::string_view key) const {
    return file_ + ": [" + name_ + "] " + std::string(key);
  }
  long long integer(std::string_view key, long long fallback, long long lo, long long hi) {
    read_.emplace_back(key);
    if (!has(key)) return fallback;
    const std::optional<std::int64_t> v = (*t_)[key].value_exact<std::int64_t>();
    if (!v || *v < lo || *v > hi)
      throw config_error(where(key) + " must be a whole number in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]");
    return *v;
  }
  bool flag(std::string_view key, bool fallback) {
    read_.emplace_back(key);
    if (!has(key)) return fallback;
    const std::optional<bool> v = (*t_)[key].value_exact<bool>();
    if (!v) throw config_error(where(key) + " must be true or false");
    return *v;
  }
  /// A string, or an integer written as one (torchtitan's selective_ac_option takes both).
  std::string text(std::string_view key, std::string fallback) {
    read_.emplace_back(key);
    if (!has(key)) return fallback;
    if (const std::optional<std::string> v = (*t_)[key].value_exact<std::string>()) return *v;
    if (const std::optional<std::int64_t> v = (*t_)[key].value_exact<std::int64_t>())
      return std::to_string(*v);
    throw config_error(where(key) + " must be a string");
  }
  std::vector<std::string> texts(std::string_view key) {
    read_.emplace_back(key);
    std::vector<std::string> out;
    if (!has(key)) return out;
    const toml::array* a = (*t_)[key].as_array();
    if (!a) throw config_error(where(key) + " must be an array of strings");
    for (const toml::node& e : *a) {
      const std::optional<std::string> s = e.value_exact<std::string>();
      if (!s) throw config_error(where(key) + " must be an array of strings");
      out.push_back(*s);
    }
    return out;
  }
  /// Keys weft reads silently: they change nothing a step costs.
  void skip(std::initializer_list<std::string_view> keys) {
    for (std::string_view k : keys) read_.emplace_back(k);
  }
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    if (!t_) return out;
    for (const auto& [k, v] : *t_) {
      (void)v;
      if (std::find(read_.begin(), read_.end(), k.str()) == read_.end())
        out.push_back(file_ + ": [" + name_ + "] key '" + excerpt(std::string(k.str())) +
                      "' is not used");
    }
    return out;
  }

 private:
  const toml::table* t_;
  std::string name_, file_;
  std::vector<std::string_view> read_;
};

}  // namespace detail

namespace detail {

[[noreturn]] inline void refuse_key(const toml_section& s, std::string_view key,
                                    const std::string& why) {
  throw config_error(s.where(key) + ": " + why);
}

inline toml_section section(const toml::table& doc, const char* name, const std::string& file) {
  if (doc.contains(name) && !doc[name].is_table())
    throw config_error(file + ": [" + name + "] must be a table");
  return toml_section(doc[name].as_table(), name, file);
}

/// [training]: the batch, accumulated, and the sequence.
inline void read_titan_training(const toml::table& doc, const std::string& file,
                                torchtitan_job& out) {
  job& j = out.spec;
  namespace L = job_limits;
  toml_section training = section(doc, "training", file);
  out.local_batch_size = static_cast<int>(
      training.integer(training.has("local_batch_size") ? "local_batch_size" : "batch_size", 8, 1,
                       L::micro_batch_size));
  out.global_batch_size =
      static_cast<int>(training.integer("global_batch_size", -1, -1, L::global_batch_size));
  if (out.global_batch_size == 0) refuse_key(training, "global_batch_size", "must not be 0");
  j.seq = static_cast<double>(training.integer("seq_len", 2048, 1, L::seq));
  if (training.text("mixed_precision_param", "bfloat16") != "bfloat16")
    refuse_key(training, "mixed_precision_param",
               "weft prices bf16 parameters in the layers' matmuls and gathers");
  // FSDP's gradient reduction: fp32 (torchtitan's default, as weft prices gradients) or bf16.
  const std::string reduce = training.text("mixed_precision_reduce", "float32");
  if (reduce == "bfloat16")
    j.grad_reduce_in_bf16 = true;
  else if (reduce != "float32")
    refuse_key(training, "mixed_precision_reduce", "must be float32 or bfloat16");
  training.skip({"local_batch_size", "batch_size", "steps", "dataset", "dataset_path", "max_norm",
                 "warmup_steps", "gc_freq", "seed", "deterministic", "enable_cpu_offload",
                 "dataset_type", "tokenizer_path"});
  if (training.has("enable_cpu_offload") && training.flag("enable_cpu_offload", false))
    refuse_key(training, "enable_cpu_offload", "offloading to host memory is not modelled");

  for (std::string& w : training.unused()) out.warnings.push_back(std::move(w));
}

/// [parallelism]: the sizes, the schedule and its split, the collectives' forms.
inline void read_titan_parallelism(const toml::table& doc, const std::string& file,
                                   torchtitan_job& out) {
  job& j = out.spec;
  namespace L = job_limits;
  toml_section par = section(doc, "parallelism", file);
  out.dp_replicate = static_cast<int>(par.integer("data_parallel_replicate_degree", 1, 1, L::dp));
  out.dp_shard = static_cast<int>(par.integer("data_parallel_shard_degree", -1, -1, L::dp));
  if (out.dp_shard == 0) refuse_key(par, "data_parallel_shard_degree", "must be -1 or at least 1");
  j.tp = static_cast<int>(par.integer("tensor_parallel_degree", 1, 1, L::tp));
  j.pp = static_cast<int>(par.integer("pipeline_parallel_degree", 1, 1, L::pp));
  j.cp = static_cast<int>(par.integer("context_parallel_degree", 1, 1, L::cp));
  j.ep = static_cast<int>(par.integer("expert_parallel_degree", 1, 1, L::ep));
  j.expert_tp = static_cast<int>(par.integer("expert_tensor_parallel_degree", 1, 1, L::tp));
  out.microbatch =
      static_cast<int>(par.integer("pipeline_parallel_microbatch_size", 1, 1, L::micro_batch_size));
  out.first_less =
      static_cast<int>(par.integer("pipeline_parallel_first_stage_less_layers", 1, 0, 1 << 16));
  out.last_less =
      static_cast<int>(par.integer("pipeline_parallel_last_stage_less_layers", 1, 0, 1 << 16));
  out.layers_per_stage =
      static_cast<int>(par.integer("pipeline_parallel_layers_per_stage", 0, 1, limits::layers));
  const std::string schedule = par.text("pipeline_parallel_schedule", "1F1B");
  const auto known =
      std::find_if(std::begin(detail::titan_schedules), std::end(detail::titan_schedules),
                   [&](const auto& s) { return s.theirs == detail::lowered(schedule); });
  if (!par.text("pipeline_parallel_schedule_csv", "").empty() ||
      detail::lowered(schedule).starts_with("pipelineschedule"))
    refuse_key(par, "pipeline_parallel_schedule_csv",
               "a schedule from a CSV: weft plan prices the named schedules (weft verify and "
               "weft simulate take the CSV itself)");
  if (known == std::end(detail::titan_schedules))
    refuse_key(par, "pipeline_parallel_schedule",
               "'" + excerpt(schedule) +
                   "' is not one of 1F1B, GPipe, Interleaved1F1B, LoopedBFS, "
                   "InterleavedZeroBubble, ZBVZeroBubble, DualPipeV");
  j.schedule = std::string(known->ours);
  out.stages_per_rank = known->multi ? 2 : 1;
  if (par.flag("enable_async_tensor_parallel", false))
    refuse_key(par, "enable_async_tensor_parallel",
               "tensor parallelism's collectives overlapped with its matmuls: it would hide part "
               "of the TP communication weft prices exposed");
  if (par.flag("disable_loss_parallel", false))
    refuse_key(par, "disable_loss_parallel",
               "weft prices the loss vocabulary-parallel over tp, torchtitan's default");
  if (par.text("fsdp_reshard_after_forward", "default") != "default")
    refuse_key(par, "fsdp_reshard_after_forward",
               "weft prices FSDP's default: parameters gathered again for the backward without "
               "a pipeline, kept gathered with one");
  if (par.has("module_fqns_per_model_part"))
    refuse_key(par, "module_fqns_per_model_part",
               "a split of one's own: give it to weft as --pipeline-layout");
  const std::string rotate = par.text("context_parallel_rotate_method", "allgather");
  if (rotate != "allgather" && rotate != "alltoall")
    refuse_key(par, "context_parallel_rotate_method", "must be allgather or alltoall");
  j.cp_comm_type = rotate == "allgather" ? cp_comm::all_gather : cp_comm::p2p;
  if (par.text("context_parallel_load_balancer", "headtail").empty())
    refuse_key(par, "context_parallel_load_balancer",
               "an unbalanced causal split is not priced: weft balances the halves");
  const std::string backend = par.text("expert_parallel_comm_backend", "standard");
  if (backend != "standard" && backend != "deepep")
    refuse_key(par, "expert_parallel_comm_backend", "must be standard or deepep");
  j.dispatcher = backend == "deepep" ? moe_dispatcher::flex : moe_dispatcher::alltoall;
  if (par.has("pipeline_parallel_split_points"))
    refuse_key(par, "pipeline_parallel_split_points",
               "a split of one's own: give it to weft as --pipeline-layout");
  // DualPipeV's pairs hide the experts' all-to-alls (torchtitan's default), as weft prices them.
  if (!par.flag("pipeline_parallel_expert_parallel_overlap", true) && j.schedule == "dualpipev")
    refuse_key(par, "pipeline_parallel_expert_parallel_overlap",
               "false: weft prices DualPipeV's pairs with the all-to-alls overlapped");
  par.skip({"context_parallel_load_balancer"});  // a balanced causal mask, as weft prices it

  for (std::string& w : par.unused()) out.warnings.push_back(std::move(w));
}

/// [activation_checkpoint]: none, full, every N-th layer recomputed whole, or per op.
inline void read_titan_checkpointing(const toml::table& doc, const std::string& file,
                                     torchtitan_job& out) {
  job& j = out.spec;
  toml_section ac = section(doc, "activation_checkpoint", file);
  const std::string mode = ac.text("mode", "selective");
  const std::string option = ac.text("selective_ac_option", "2");
  if (mode == "none") {
    j.policy = recompute::none;
  } else if (mode == "full") {
    j.policy = recompute::full;
  } else if (mode == "selective" && option == "op") {
    j.policy = recompute::selective;  // its own: what the policy saves (job::recompute_ops)
    j.recompute_ops = true;
  } else if (mode == "selective") {
    if (option.empty() || option.find_first_not_of("0123456789") != std::string::npos)
      refuse_key(ac, "selective_ac_option",
                 "'" + excerpt(option) +
                     "': give op (per-op checkpointing) or an integer N (every N-th layer "
                     "recomputed whole), or mode full or none");
    // torchtitan: 0 checkpoints every layer, N every N-th (its counter runs over the rank's
    // layers in the order it wraps them).
    const std::size_t digits = option.find_first_not_of('0');
    if (digits != std::string::npos && option.size() - digits > 6)
      refuse_key(ac, "selective_ac_option",
                 "'" + excerpt(option) + "' is more layers than a model has");
    const long long every = digits == std::string::npos ? 0 : std::stoll(option.substr(digits));
    j.policy = recompute::full;
    if (every > 1) j.recompute_every = static_cast<int>(every);
  } else {
    refuse_key(ac, "mode",
               "'" + excerpt(mode) +
                   "' is not priced; weft prices none, selective (every N-th layer) and full");
  }
  ac.skip({"early_stop", "preserve_rng_state", "determinism_check", "debug",
           "visualize_memory_budget_pareto", "memory_budget",
           "per_op_sac_force_recompute_mm_shapes_by_fqns"});

  for (std::string& w : ac.unused()) out.warnings.push_back(std::move(w));
}

/// FP8: on when [model] converters name it; its settings in [float8] or, later,
/// [quantize.linear.float8].
inline void read_titan_fp8(const toml::table& doc, const std::string& file, torchtitan_job& out) {
  job& j = out.spec;
  toml_section model = section(doc, "model", file);
  const std::vector<std::string> converters = model.texts("converters");
  bool fp8 = false;
  for (const std::string& c : converters) {
    if (c == "float8" || c == "quantize.linear.float8")
      fp8 = true;
    else
      refuse_key(model, "converters",
                 "'" + excerpt(c) + "' is not priced; weft prices torchao's float8 linears");
  }
  const toml::table* quantize = doc["quantize"]["linear"]["float8"].as_table();
  toml_section f8(quantize ? quantize : doc["float8"].as_table(),
                  quantize ? "quantize.linear.float8" : "float8", file);
  const std::string recipe = f8.text("recipe_name", "tensorwise");
  out.fp8_gather = f8.flag("enable_fsdp_float8_all_gather", false);
  if (fp8 && f8.flag("emulate", false))
    refuse_key(f8, "emulate", "FP8 emulated in higher precision runs at bf16's speed, not FP8's");
  f8.skip({"precompute_float8_dynamic_scale_for_fsdp", "filter_fqns",
           "force_recompute_fp8_weight_in_bwd"});
  if (fp8) {
    if (recipe == "tensorwise")
      j.fp8 = fp8_recipe::hybrid;  // torchao: e4m3 inputs and weights, e5m2 gradients
    else if (recipe == "rowwise")
      j.fp8 = fp8_recipe::e4m3;
    else
      refuse_key(f8, "recipe_name",
                 "'" + excerpt(recipe) + "' is not priced; weft prices tensorwise and rowwise");
    // torchao's scales are dynamic: each cast reads its tensor for the amax first.
    j.fp8_current_scaling = true;
  }
  for (std::string& w : f8.unused()) out.warnings.push_back(std::move(w));
}

}  // namespace detail

namespace detail {

/// Throws `config_error` at the first byte beyond ASCII: toml++ 3.3 reaches undefined
/// behaviour classifying some Unicode characters as whitespace, wherever its parser meets one
/// (a fuzzer found it inside and outside strings), and torchtitan's configs are ASCII.
inline void ascii_only(std::string_view text, const std::string& file) {
  std::size_t line = 1, column = 0;
  for (const char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      throw config_error(file + ": line " + std::to_string(line) + ", column " +
                         std::to_string(column) +
                         ": a character beyond ASCII (weft reads torchtitan's TOML in ASCII, as "
                         "torchtitan writes it)");
    }
  }
}

}  // namespace detail

/// Reads torchtitan's TOML job config `text` (`file` names it in every message). Throws
/// `config_error` for text that is not TOML, a value of the wrong type or out of range, and a
/// setting weft does not price, naming it.
inline torchtitan_job read_torchtitan(std::string_view text, const std::string& file) {
  detail::ascii_only(text, file);
  toml::table doc;
  try {
    doc = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw config_error(file + ": not TOML: line " + std::to_string(e.source().begin.line) +
                       ", column " + std::to_string(e.source().begin.column) + ": " +
                       excerpt(std::string(e.description()), 0, 200));
  }
  torchtitan_job out;
  detail::read_titan_training(doc, file, out);
  detail::read_titan_parallelism(doc, file, out);
  detail::read_titan_checkpointing(doc, file, out);
  detail::read_titan_fp8(doc, file, out);
  return out;
}

namespace detail {

/// torchtitan's split of `m`'s layers into `stages` stages (generate_llm_fqn_per_model_part):
/// the embedding weighed as `first_less` layers and the output as `last_less`, the effective
/// layers split evenly with the first stages taking one more, as Megatron's layout grammar.
inline std::string titan_layout(const transformer& m, int stages, int first_less, int last_less) {
  const long long effective = static_cast<long long>(m.layers) + first_less + last_less;
  if (stages > effective)
    throw config_error("torchtitan splits " + std::to_string(m.layers) + " layers and " +
                       std::to_string(first_less + last_less) +
                       " for the embedding and output into at most " + std::to_string(effective) +
                       " stages, not " + std::to_string(stages));
  const long long per = effective / stages, extra = effective % stages;
  if (first_less > per || last_less > per)
    throw config_error("torchtitan's first and last stages' weights (" +
                       std::to_string(first_less) + ", " + std::to_string(last_less) +
                       ") exceed the " + std::to_string(per) + " layers of a stage");
  std::vector<std::string> text;
  long long next = 0;
  for (int s = 0; s < stages; ++s) {
    long long n = per + (s < extra ? 1 : 0);
    if (s == 0) n -= first_less;
    if (s == stages - 1) n -= last_less;
    n = std::clamp(n, 0LL, static_cast<long long>(m.layers) - next);
    next += n;
    std::string t = s == 0 ? "E" : "";
    if (n > 0) t += n == 1 ? "t" : "t*" + std::to_string(n);
    if (s == stages - 1) {
      for (int k = 0; k < m.mtp_layers; ++k) t += "m";
      t += "L";
    }
    text.push_back(std::move(t));
  }
  if (next != m.layers)
    throw config_error("torchtitan's split leaves " + std::to_string(m.layers - next) +
                       " layers without a stage");
  return layout_text(text);
}

}  // namespace detail

namespace detail {

/// torchtitan's data-parallel degree from `t` on `devices` (0: unknown) into `j`, with the
/// sharding it implies.
inline void titan_data_parallel(const torchtitan_job& t, long long devices, job& j) {
  const long long model_parallel = static_cast<long long>(j.tp) * j.pp * j.cp * t.dp_replicate;
  long long shard = t.dp_shard;
  if (shard < 0) {
    if (devices <= 0)
      throw config_error(
          "torchtitan's data_parallel_shard_degree -1 takes the devices the other sizes leave: "
          "give --devices");
    if (devices % model_parallel != 0)
      throw config_error("--devices " + std::to_string(devices) +
                         " is not a multiple of torchtitan's other sizes (dp_replicate x cp x tp "
                         "x pp = " +
                         std::to_string(model_parallel) + ")");
    shard = devices / model_parallel;
  } else if (devices > 0 && devices != model_parallel * shard) {
    throw config_error("--devices " + std::to_string(devices) + " is not torchtitan's " +
                       std::to_string(model_parallel * shard) +
                       " (dp_replicate x dp_shard x cp x tp x pp)");
  }
  if (t.dp_replicate > 1 && (shard > 1 || j.cp > 1))
    throw config_error(
        "torchtitan's HSDP (data_parallel_replicate_degree above 1 with a shard degree or cp "
        "above 1) is not priced: weft shards over every data-parallel rank");
  if (t.dp_replicate > 1 && (j.tp > 1 || j.pp > 1))
    throw config_error(
        "torchtitan's DDP (data_parallel_replicate_degree alone) runs without tensor or "
        "pipeline parallelism ('DDP has not supported > 1D parallelism')");
  j.dp = static_cast<int>(t.dp_replicate * shard);
  // FSDP over the shard degree (and cp); DDP keeps every state whole and overlaps its
  // all-reduce with the backward, bucket by bucket.
  if (shard > 1 || j.cp > 1) {
    j.sharding = dp_sharding::optim_grads_params;
  } else {
    j.sharding = dp_sharding::no_shard;
    j.overlap_grad_reduce = j.dp > 1;
  }
}

/// torchtitan's stages of `m` for `t`'s schedule into `j` (a pipeline of more than one rank):
/// chunks and the layout.
inline void titan_stages(const torchtitan_job& t, const transformer& m, job& j) {
  // The stages: single-stage schedules one a rank, the others two, or as many as
  // pipeline_parallel_layers_per_stage makes.
  int per_rank = t.stages_per_rank;
  if (t.layers_per_stage > 0) {
    const long long effective = static_cast<long long>(m.layers) + t.first_less + t.last_less;
    const long long stages = (effective + t.layers_per_stage - 1) / t.layers_per_stage;
    if (stages % j.pp != 0)
      throw config_error("torchtitan's pipeline_parallel_layers_per_stage " +
                         std::to_string(t.layers_per_stage) + " makes " + std::to_string(stages) +
                         " stages, not a multiple of the " + std::to_string(j.pp) +
                         " pipeline ranks");
    per_rank = static_cast<int>(stages / j.pp);
    if (t.stages_per_rank == 1 && per_rank != 1)
      throw config_error("torchtitan's " + j.schedule +
                         " runs one stage a rank; "
                         "pipeline_parallel_layers_per_stage " +
                         std::to_string(t.layers_per_stage) + " makes " + std::to_string(per_rank));
    if (t.stages_per_rank == 2 && per_rank < 2)
      throw config_error(
          "torchtitan's multi-stage schedules need 2 stages a rank or more; "
          "pipeline_parallel_layers_per_stage " +
          std::to_string(t.layers_per_stage) + " makes 1");
  }
  j.chunks = (j.schedule == "zb-v" || j.schedule == "dualpipev") ? 1 : per_rank;
  if ((j.schedule == "zb-v" || j.schedule == "dualpipev") && per_rank != 2)
    throw config_error("torchtitan's " + j.schedule + " runs 2 stages a rank, not " +
                       std::to_string(per_rank));
  j.layout = detail::titan_layout(m, j.pp * per_rank, t.first_less, t.last_less);
}

}  // namespace detail

/// Job `t` for model `m` on `devices` devices (0: unknown): dp from the replicate and shard
/// degrees, FSDP where torchtitan shards, the batch as torchtitan accumulates it, the stages as
/// torchtitan splits them. Throws `config_error` naming what does not resolve.
inline job torchtitan_as_job(const torchtitan_job& t, const transformer& m, long long devices) {
  job j = t.spec;
  detail::titan_data_parallel(t, devices, j);
  if (t.fp8_gather && j.fp8 != fp8_recipe::none && j.sharding == dp_sharding::optim_grads_params)
    throw config_error(
        "torchtitan's enable_fsdp_float8_all_gather: FSDP's parameters gathered in FP8 are not "
        "priced (weft gathers them in bf16)");
  if (m.mtp_layers > 0)
    throw config_error(
        "torchtitan trains no multi-token prediction layers; the model's config has " +
        std::to_string(m.mtp_layers) + " (num_nextn_predict_layers): plan it without them");
  // The experts: over tp without expert parallelism; with it, torchtitan's expert tensor
  // parallelism is 1 or tp, and weft prices tp's.
  if (m.moe.active() && j.ep > 1 && j.expert_tp != j.tp)
    throw config_error(
        "torchtitan's expert_tensor_parallel_degree " + std::to_string(j.expert_tp) +
        " with expert parallelism: weft prices the experts sharded as the dense layers are, over "
        "tensor_parallel_degree " +
        std::to_string(j.tp) + " (give it equal to tp)");
  if (m.moe.active() && j.fp8 != fp8_recipe::none)
    throw config_error(
        "torchao's float8 linears leave the experts' grouped matmuls in bf16; weft's FP8 "
        "prices them in FP8: plan the MoE model without FP8");
  j.expert_tp = 0;
  j.sequence_parallel = j.tp > 1;  // torchtitan's tensor parallelism shards the norms too
  check_recompute_ops(m, j);       // per-op checkpointing: Llama's block, its norms sharded
  // PyTorch's autograd adds each micro-batch's weight gradients in a pass of its own (none
  // priced where FSDP shards them). Its norms are PyTorch's nn.RMSNorm, one fused kernel since
  // PyTorch 2.9 eager or compiled: not --eager.
  j.gradient_accumulation_fusion = false;
  // Its attention is PyTorch's scaled_dot_product_attention: FlashAttention-2 on an H100 in the
  // PyTorch releases its TOML configs ran on (cuDNN's kernel opt-in there: pytorch/pytorch#138522).
  j.attention = perf::attention_library::sdpa;
  // The batch: local_batch_size sequences a data-parallel rank, global (default local x dp),
  // accumulated; with a pipeline, micro-batches of pipeline_parallel_microbatch_size.
  const long long local = t.local_batch_size;
  const long long global = t.global_batch_size > 0 ? t.global_batch_size : local * j.dp;
  if (global % (local * j.dp) != 0)
    throw config_error("torchtitan's global_batch_size " + std::to_string(global) +
                       " is not a multiple of local_batch_size x the data-parallel degree (" +
                       std::to_string(local * j.dp) + ")");
  // Each accumulation step runs the pipeline whole, and syncs the data-parallel ranks (torchtitan
  // skips no gradient sync): one step of weft's is one of those.
  if (global != local * j.dp && (j.pp > 1 || j.dp > 1))
    throw config_error(
        "torchtitan's global_batch_size " + std::to_string(global) + " accumulates " +
        std::to_string(global / (local * j.dp)) +
        " steps of local_batch_size x the data-parallel degree, each running the pipeline and "
        "the data-parallel sync whole; weft prices one: give global_batch_size " +
        std::to_string(local * j.dp) + " (or -1)");
  if (j.pp > 1 && local % t.microbatch != 0)
    throw config_error("torchtitan's local_batch_size " + std::to_string(local) +
                       " is not a multiple of pipeline_parallel_microbatch_size " +
                       std::to_string(t.microbatch));
  j.micro_batch_size = j.pp > 1 ? t.microbatch : static_cast<int>(local);
  if (global > job_limits::global_batch_size)
    throw config_error("torchtitan's global batch of " + std::to_string(global) +
                       " sequences is more than weft plans for");
  j.global_batch_size = static_cast<int>(global);
  if (j.pp > 1) detail::titan_stages(t, m, j);
  return j;
}

}  // namespace weft::plan
