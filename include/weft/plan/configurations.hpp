// The configuration search: of every way to run a job on a number of devices — tp x pp x dp x
// cp (ep carved from dp x cp), micro-batch size, recomputation, what the data-parallel ranks
// shard, then schedule, chunks and layout — the fastest that fit in what the device leaves a
// job (`allocatable_bytes`).
// Branch and bound: sizes that cannot split the model and configurations whose model states
// alone overflow are pruned without a cost; the rest are taken in the order of a lower bound on
// their step (their compute, shared evenly by the pipeline ranks) and estimated with the one
// model (plan/estimate.hpp) while the bound can still beat the N-th best found. docs/planning.md
// ("Choosing the configuration") shows it at work.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/plan/best.hpp>
#include <weft/plan/fits.hpp>
#include <weft/plan/memory.hpp>

namespace weft::plan {

/// What the configuration search may change of a job; a size given here is kept.
struct configuration_space {
  long long devices = 0;  ///< 0: the job's tp x pp x dp x cp
  std::optional<int> tp, pp, cp, ep, micro_batch_size;
  /// The experts' tensor parallelism kept (--expert-tensor-parallel-size given); else every
  /// divisor of tp, ep folded over the tensor-parallel ranks too where it is below tp
  std::optional<int> etp;
  std::optional<recompute> policy;
  /// Full recomputation's method kept (--recompute-method given): "uniform", every layer, or
  /// "block", the first N layers of each stage; else both are tried
  std::optional<std::string> recompute_method;
  /// Block's N kept (--recompute-num-layers given); else, for each plan, the fewest layers that
  /// fit what the device leaves a job (`detail::judge_fewest_block`)
  std::optional<int> recompute_num_layers;
  std::optional<dp_sharding> sharding;
  int max_micro_batch_size = 8;    ///< micro-batch sizes tried: the powers of two up to this
  int max_chunks = 4;              ///< chunks per rank tried (`plan_search_options`)
  runs_on runtime = runs_on::any;  ///< only plans this runtime runs
};

struct configuration_search_options {
  double budget_s = 10;  ///< seconds the search may take; it stops between configurations
  int top = 5;           ///< configurations reported
  configuration_space space;
  /// Called after each configuration estimated with every plan, with how many are (the tool
  /// shows progress with it); none: nothing.
  std::function<void(long long)> progress = {};
};

/// How many configurations the search met, and what became of them.
struct configuration_counts {
  /// Every combination of the sizes, micro-batch size, recompute and sharding, each with every
  /// schedule, chunk count and layout `best_plan` judges for it
  long long considered = 0;
  /// Of which the combinations without the schedule's choices (and those whose plans the
  /// runtime runs none of, which `considered` leaves out)
  long long sizings = 0;
  /// Of `considered`: the model or the batch does not split so (Megatron refuses), the model
  /// states alone overflow what the device leaves a job, the lower bound is no better than the N-th
  /// best found (or, for block recomputation, a plan that fits with nothing recomputed, cannot beat
  /// it so, or whose stages hold a layer each: uniform recomputation's), left when the budget
  /// ran out.
  long long pruned_sizes = 0, pruned_memory = 0, pruned_bound = 0, unexplored = 0;
  long long simulated = 0;  ///< of `sizings`: those whose plans were estimated
  long long screened = 0;   ///< of `sizings`: those first estimated with one frugal plan
  long long plans = 0;      ///< plans (schedule, chunks, layout) estimated
};

/// One configuration's best plan, as `best_plan` judges it.
struct configuration_choice {
  plan_choice best;  ///< the job that runs it and its figures
  seconds bound{0};  ///< the lower bound it was taken in the order of
};

struct configuration_search_result {
  std::vector<configuration_choice> top;  ///< the fastest that fit, fastest first
  configuration_counts counts;
  long long devices = 0;
  /// Every configuration that could still beat the N-th best was estimated: within the
  /// estimate's model, no other configuration is faster than those reported.
  bool complete = false;
  seconds least_unexplored{0};  ///< when incomplete: the lowest bound left unexplored
  double seconds_taken = 0;
};

namespace detail {

/// What a configuration's costs need of it: the sizes each layer is priced with.
struct costing_key {
  int tp, cp, ep, etp, micro_batch_size;
  recompute policy;
  /// Sharded gradients without the fused accumulation: no accumulation pass in a layer's
  /// backward, where `--no-gradient-accumulation-fusion` prices one for the others.
  bool sharded_gradients;
  auto tie() const {
    return std::tie(tp, cp, ep, etp, micro_batch_size, policy, sharded_gradients);
  }
  bool operator<(const costing_key& o) const { return tie() < o.tie(); }
};

/// A configuration's model priced piece by piece, once per `costing_key`.
struct model_costs {
  model_pieces pieces;  ///< for balanced layouts
  /// One micro-batch's forward and backward through the whole model on one device, less what
  /// an overlapped pair may hide and without the launches' floor: a sum no stage's cost is
  /// below, so that a pipeline rank's busy time is at least its share.
  double work = 0;
  double dense_params = 0, expert_params = 0;  ///< on one device (tp, ep shards), all layers
  /// Of `dense_params`: the last stage's copy of tied embeddings, which one stage does not keep.
  double tied_copy = 0;
  double dense_of(int pp) const noexcept { return dense_params - (pp == 1 ? tied_copy : 0); }
  double least_activation = std::numeric_limits<double>::infinity();  ///< a piece's, per micro
  /// A decoder layer's forward without its communication, the least of any: what recomputing
  /// a layer costs at least.
  double least_forward = std::numeric_limits<double>::infinity();
};

inline model_costs model_costs_of(const transformer& m, const job& j, const cluster& c) {
  model_costs out;
  out.pieces = pieces_of(m, j, c);
  const estimate_options bare{.launches = false};
  const auto add = [&](const layout_stage& st, int times) {
    const stage_estimate s = stage_costs(m, j, c, st, bare);
    out.work += times * (s.cost.F + s.cost.B - s.cost.comm_F - s.cost.comm_B).count();
    out.dense_params += times * s.params;
    out.expert_params += times * s.expert_params;
    out.least_activation = std::min(out.least_activation, s.activation_bytes);
    if (st.layers > 0)
      out.least_forward = std::min(out.least_forward, (s.cost.F - s.cost.comm_F).count());
  };
  // A decoder layer's costs depend on its index only through its kind (transformer.hpp's
  // `is_moe_layer`): one layer of each kind, counted as many times.
  int first[2] = {-1, -1}, count[2] = {0, 0};
  for (int l = 0; l < m.layers; ++l) {
    const int k = m.is_moe_layer(l) ? 1 : 0;
    if (count[k]++ == 0) first[k] = l;
  }
  for (int k = 0; k < 2; ++k)
    if (count[k] > 0) add({.first_layer = first[k], .layers = 1}, count[k]);
  add({.embedding = true}, 1);
  add({.loss = true, .mtp = m.mtp_layers}, 1);
  if (m.tied_embeddings) out.tied_copy = m.vocab * m.hidden / j.tp;  // stage_costs' second copy
  return out;
}

/// A bound no plan of configuration `j` (its model priced as `k`) steps under: a pipeline rank's
/// compute is at least its share of the model's work (and `rank_extra` seconds a micro-batch); the
/// data-parallel collectives run inside the step, and outside the pipeline where nothing overlaps
/// them; the optimizer follows. Each term at a rank's average holdings, which the busiest rank's
/// are not below.
inline seconds step_bound(const job& j, const cluster& c, const model_costs& k,
                          double rank_extra = 0) {
  const double dense = k.dense_of(j.pp) / j.pp, expert = k.expert_params / j.pp;
  const seconds compute(j.micro() * (k.work / j.pp + rank_extra));
  const auto [reduce, gather] = dp_traffic_of(j, c, dense, expert);
  seconds alone{0};  // what no overlap hides, after the pipeline
  if (j.sharding != dp_sharding::optim_grads_params) {
    if (!j.overlap_grad_reduce) alone += reduce;
    if (!j.overlap_param_gather && !(j.sharding == dp_sharding::no_shard && j.overlap_grad_reduce))
      alone += gather;
  }
  // What overlaps runs beside the pipeline's compute, or after it: the step holds it whole.
  const seconds overlapped = reduce + gather - alone;
  return std::max(compute, overlapped) + alone + optimizer_time(j, c, dense, expert);
}

/// The plans judged for configuration `j`: `best_plan`'s, but one for a pipeline of one rank
/// (where every schedule runs the same passes in the same order) — none where the space's
/// runtime does not run the job.
inline std::vector<job> plans_of(const transformer& m, const job& j, const cluster& c,
                                 const configuration_space& sp,
                                 const model_pieces* pieces = nullptr) {
  if (j.pp == 1)  // 1F1B, which every runtime runs that runs the rest of the job
    return runs(j, sp.runtime) ? std::vector<job>{j} : std::vector<job>{};
  return plan_variants(m, j, pieces ? *pieces : pieces_of(m, j, c), sp.max_chunks, sp.runtime);
}

/// The divisors of `n` (at most 2^24), ascending.
inline std::vector<int> divisors(long long n) {
  std::vector<int> low, high;
  for (long long d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(static_cast<int>(d));
      if (d * d != n) high.push_back(static_cast<int>(n / d));
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

/// `given`, when the space keeps it, else `all`.
inline std::vector<int> kept_or(const std::optional<int>& given, std::vector<int> all) {
  if (!given) return all;
  return std::find(all.begin(), all.end(), *given) != all.end() ? std::vector<int>{*given}
                                                                : std::vector<int>{};
}

/// A configuration to estimate, and the bound it is taken in the order of.
struct configuration_candidate {
  job j;
  seconds bound{0};
  costing_key key;
  long long plans = 0;  ///< the plans `plan_variants` judges for it
  /// Megatron's block recomputation with N left to the search: each plan judged with the
  /// fewest layers recomputed that fit (`judge_fewest_block`)
  bool fewest_block = false;
};

/// A recomputation the search tries: a policy and, for full recomputation, Megatron's method —
/// every layer (uniform) or the first `layers` of each stage (block; 0: the fewest that fit).
struct recompute_form {
  recompute policy = recompute::none;
  bool block = false;
  int layers = 0;
};

/// The recomputations space `sp` leaves open.
inline std::vector<recompute_form> recompute_forms(const configuration_space& sp) {
  std::vector<recompute_form> out;
  const std::vector<recompute> policies =
      sp.policy ? std::vector<recompute>{*sp.policy}
                : std::vector<recompute>{recompute::none, recompute::selective, recompute::full};
  for (const recompute p : policies) {
    if (p != recompute::full) {
      out.push_back({p});
      continue;
    }
    if (sp.recompute_method != "block") out.push_back({p});
    // torchtitan recomputes every N-th layer, not the first N of each stage.
    if (sp.recompute_method != "uniform" && sp.runtime != runs_on::torchtitan)
      out.push_back({p, true, sp.recompute_num_layers.value_or(0)});
  }
  return out;
}

/// Job `j` recomputing as `form` says, selective recomputation with the modules job `asked`
/// names (Megatron's default ones when it names none).
inline void recompute_as(job& j, const recompute_form& form, const job& asked) {
  j.policy = form.policy;
  j.recompute_modules = form.policy == recompute::selective && asked.policy == recompute::selective
                            ? asked.recompute_modules
                            : perf::default_recompute_modules;
  // Full recomputation as Megatron runs it: uniform, one layer at a time, or the first N layers
  // of each stage (block; N = 1 until the search finds each plan's).
  j.recompute_method = form.block ? "block" : "";
  j.recompute_num_layers = form.block ? std::max(form.layers, 1) : 0;
  j.recompute_every = 0;
  // torchtitan's per-op checkpointing is its selective recomputation: kept where that is chosen,
  // and its trainer's attention kept by every form, so that the forms differ in recomputation
  // alone.
  j.recompute_ops = form.policy == recompute::selective && asked.recompute_ops;
  if (asked.recompute_ops) j.attention = asked.attention_kernel();
}

/// Whether job `j`'s sizes split model `m` and a batch of `batch` sequences as Megatron's rules
/// allow; a pipeline of more ranks than the model has pieces would leave a rank without layers.
inline bool splits_so(const transformer& m, const job& j, long long batch) {
  if (j.pp > m.layers + 1 || (batch % (static_cast<long long>(j.micro_batch_size) * j.dp)) != 0)
    return false;
  try {
    check_sizes(m, j);
  } catch (const config_error&) {
    return false;
  }
  return true;
}

/// Judges each of `plans` (jobs of model `m` on cluster `c` with Megatron's block
/// recomputation) with the fewest layers of each stage recomputed that fit what the device leaves,
/// found by bisection: more layers recomputed keep fewer activations and cost more compute, so
/// the fewest that fit is the plan's fastest. A plan whose stages hold one layer at most is
/// left out where uniform recomputation is judged on its own (`uniform_judged`: block is then
/// the same); one that does not fit recomputing all but one layer of each stage is judged so
/// (the least memory block gives).
inline plan_search_result judge_fewest_block(const transformer& m, const std::vector<job>& plans,
                                             const cluster& c, const estimate_options& o = {},
                                             bool uniform_judged = true) {
  plan_search_result out;
  for (const job& p : plans) {
    int most = 0;  // the most layers a stage holds, MTP layers too (`layer_policy` counts them)
    try {
      for (const layout_stage& st : stages_of(m, p).stages)
        most = std::max(most, st.layers + st.mtp);
    } catch (const config_error&) {
      most = 1;  // the estimate says why it does not run
    }
    if (most < 2 && uniform_judged) continue;
    const auto with = [&](int n) {
      job t = p;
      t.recompute_num_layers = n;
      return judge_plan(m, t, c, o);
    };
    auto fewest = with(1);
    if (most > 2 && fewest.first.ran && !fewest.first.fits) {
      auto most_kept = with(most - 1);
      if (most_kept.first.fits) {
        // Invariant: `lo` layers overflow, `most_kept`'s fit.
        int lo = 1, hi = most - 1;
        while (hi - lo > 1) {
          const int mid = lo + (hi - lo) / 2;
          auto x = with(mid);
          if (x.first.fits) {
            hi = mid;
            most_kept = std::move(x);
          } else {
            lo = mid;
          }
        }
      }
      fewest = std::move(most_kept);
    }
    add_judged(out, std::move(fewest.first), std::move(fewest.second));
  }
  return out;
}

inline void check_search_options(const configuration_search_options& o) {
  if (!(o.budget_s > 0) || o.budget_s > 86400)
    throw config_error(
        "the configuration search's budget must be more than 0 s and at most a "
        "day (86400 s)");
  if (o.top < 1 || o.top > 1000)
    throw config_error("the configuration search reports 1 to 1000 configurations, not " +
                       std::to_string(o.top));
  if (o.space.devices < 0 || o.space.devices > job_limits::devices)
    throw config_error("--devices must be in [1, " + std::to_string(job_limits::devices) + "]");
  if (o.space.max_micro_batch_size < 1 ||
      o.space.max_micro_batch_size > job_limits::micro_batch_size)
    throw config_error("the largest micro-batch size tried must be in [1, " +
                       std::to_string(job_limits::micro_batch_size) + "]");
  if (o.space.max_chunks < 1 || o.space.max_chunks > 64)
    throw config_error("the most chunks per rank tried must be in [1, 64]");
}

}  // namespace detail

namespace detail {

/// The model states of configuration `j` (its model priced as `k`) on a pipeline rank of
/// average holdings, at the layers' bytes a parameter (the edges' no fewer): a lower bound on
/// its busiest rank's.
inline double least_states(const job& j, const model_costs& k) {
  const state_bytes per = states_of(j);
  return model_state_bytes(k.dense_of(j.pp) / j.pp, j.dp * j.cp, j.sharding, per) +
         model_state_bytes(k.expert_params / j.pp, static_cast<int>(j.expert_dp()), j.sharding,
                           per);
}

/// The configurations a search meets, priced once per `costing_key`.
struct configuration_pool {
  job asked;  ///< the job as given, Megatron's forms resolved
  std::map<costing_key, model_costs> priced;
  /// Plans per pipeline size, micro-batch count (the interleaved schedule's rules in Megatron's
  /// runtime read both), whether only Megatron's code runs the job (its schedules alone) and,
  /// under torchtitan, whether it recomputes by modules (which torchtitan does not run).
  std::map<std::tuple<int, int, bool, bool>, long long> variants;
  std::vector<configuration_candidate> open;
  long long unrun = 0;  ///< sizings the runtime runs no plan of (none of them considered)
};

/// The data-parallel shardings the search tries: the space's one, else the distributed
/// optimizer and FSDP — and the job's own (an all-reduce of whole gradients, say), so that the
/// job as asked is one of the configurations judged.
inline std::vector<dp_sharding> shardings_of(const configuration_space& sp, const job& base) {
  if (sp.sharding) return {*sp.sharding};
  // Scaling's ZeRO-1 alone; DeepSpeed's BF16_Optimizer's own.
  if (base.grad_all_reduce_fp32 || base.deepspeed_bf16) return {base.sharding};
  std::vector<dp_sharding> out{dp_sharding::optim, dp_sharding::optim_grads_params};
  if (std::find(out.begin(), out.end(), base.sharding) == out.end()) out.push_back(base.sharding);
  return out;
}

/// Every configuration of `out.devices` devices the space leaves open, counted in `out`: those
/// the model or the batch cannot split and those whose states overflow pruned, the rest open
/// with their bounds.
inline configuration_pool open_configurations(const transformer& m, const job& base,
                                              const cluster& c, const configuration_space& sp,
                                              long long batch, configuration_search_result& out) {
  configuration_pool pool;
  pool.asked = base;
  const std::vector<recompute_form> forms = recompute_forms(sp);
  const std::vector<dp_sharding> shardings = shardings_of(sp, base);
  // A configuration's model priced once per key: pieces and work as `key.policy` keeps layers.
  const auto costs_of = [&](const costing_key& key, const job& of) -> const model_costs& {
    auto at = pool.priced.find(key);
    if (at == pool.priced.end()) {
      job j = of;
      j.policy = key.policy;
      j.recompute_method.clear();
      j.recompute_num_layers = 0;
      at = pool.priced.emplace(key, model_costs_of(m, j, c)).first;
    }
    return at->second;
  };
  std::vector<int> sizes_mb;
  for (int b = 1; b <= sp.max_micro_batch_size; b *= 2) sizes_mb.push_back(b);
  const std::vector<int> expert_sizes =
      m.moe.active() ? divisors(m.moe.routed) : std::vector<int>{1};
  // Scaling's trainer (--grad-all-reduce-fp32) and Megatron-DeepSpeed's GPT
  // (--deepspeed-bf16-optimizer) have neither context nor expert parallelism.
  const bool scaling = base.grad_all_reduce_fp32 || base.deepspeed_bf16;
  for (const int tp : kept_or(sp.tp, divisors(out.devices)))
    for (const int cp : scaling ? std::vector<int>{1} : kept_or(sp.cp, divisors(out.devices / tp)))
      for (const int pp : kept_or(sp.pp, divisors(out.devices / tp / cp)))
        for (const int mbs :
             sp.micro_batch_size ? std::vector<int>{*sp.micro_batch_size} : sizes_mb)
          for (const int ep : scaling ? std::vector<int>{1} : kept_or(sp.ep, expert_sizes))
            // The experts' tensor parallelism: tp's, or (Megatron's parallel folding) any
            // divisor of it, the experts then whole or split over fewer devices.
            // torchtitan keeps them at tp's; a dense model has none to fold.
            for (const int etp : m.moe.active() && sp.runtime != runs_on::torchtitan
                                     ? kept_or(sp.etp, divisors(tp))
                                     : std::vector<int>{tp})
              for (const recompute_form& form : forms)
                for (const dp_sharding sharding : shardings) {
                  ++out.counts.sizings;
                  job j = base;
                  j.tp = tp;
                  j.cp = cp;
                  j.pp = pp;
                  j.dp = static_cast<int>(out.devices / tp / cp / pp);
                  j.ep = ep;
                  j.micro_batch_size = mbs;
                  j.global_batch_size = static_cast<int>(batch);
                  recompute_as(j, form, base);
                  j.expert_tp = etp == tp ? 0 : etp;
                  j.sharding = sharding;
                  j.sequence_parallel = tp > 1;
                  // Asked for, the overlap stays wherever it runs: with tensor parallelism.
                  j.tp_comm_overlap = base.tp_comm_overlap && tp > 1;
                  if (sp.runtime == runs_on::megatron) j.runtime = pipeline_runtime::megatron;
                  j.schedule = "1f1b";
                  j.chunks = 1;
                  j.layout.clear();
                  // Megatron's own rules, before anything is priced; a pipeline of more ranks
                  // than the model has pieces leaves a rank without layers.
                  const bool splits = splits_so(m, j, batch);
                  // The plans a pipeline of pp ranks has (the same for every size beside it
                  // that the same code runs).
                  const auto [at, fresh] = pool.variants.try_emplace(
                      {pp, j.micro(), runs_as_megatron_only(j),
                       sp.runtime == runs_on::torchtitan && recomputes_by_module(j)});
                  if (fresh) at->second = static_cast<long long>(plans_of(m, j, c, sp).size());
                  const long long plans = at->second;
                  if (plans == 0) {  // the runtime runs none of its plans
                    ++pool.unrun;
                    continue;
                  }
                  out.counts.considered += plans;
                  if (!splits) {
                    out.counts.pruned_sizes += plans;
                    continue;
                  }
                  // (priced apart only where it tells: without the fused accumulation)
                  const bool grads =
                      shards_gradients(sharding) && !base.gradient_accumulation_fusion;
                  const costing_key key{tp, cp, ep, etp, mbs, form.policy, grads};
                  const model_costs& k = costs_of(key, j);
                  if (least_states(j, k) + k.least_activation > allocatable_bytes(c.hbm_bytes)) {
                    out.counts.pruned_memory += plans;
                    continue;
                  }
                  // Block recomputation's compute is none's and a layer's forward again on
                  // every stage that holds a layer — all but a lone loss's, at most one — which
                  // bounds it; none's pieces balance its layouts: its plans then are the same
                  // as none's, whose fitting ones it cannot beat (`whole_plans`).
                  const costing_key whole{tp, cp, ep, etp, mbs, recompute::none, grads};
                  const model_costs& w = form.block ? costs_of(whole, j) : k;
                  const double again = form.block ? w.least_forward * std::max(pp - 1, 1) / pp : 0;
                  pool.open.push_back({j, step_bound(j, c, w, again), form.block ? whole : key,
                                       plans, form.block && form.layers == 0});
                }
  return pool;
}

/// The plan a configuration is screened with: the schedule that keeps the fewest activations
/// (V-Min, a third of 1F1B's, with the layers balanced; 1F1B for one stage, or where V-Min has
/// no layout); none when no plan runs.
inline const job* frugal_plan(const std::vector<job>& plans) {
  for (const job& x : plans)
    if (x.schedule == "v-min") return &x;
  return plans.empty() ? nullptr : &plans.front();
}

/// The fastest fitting plan found per configuration (by its index in the pool), ranked.
struct ranking {
  std::vector<std::pair<std::size_t, configuration_choice>> found;
  void offer(std::size_t at, const plan_choice& p, seconds bound) {
    if (!p.fits) return;
    for (auto& [i, x] : found)
      if (i == at) {
        if (p.step < x.best.step) x = {p, bound};
        return;
      }
    found.emplace_back(at, configuration_choice{p, bound});
  }
  /// The `n`-th fastest step found (none: infinite).
  seconds nth(int n) {
    if (static_cast<int>(found.size()) < n) return seconds(std::numeric_limits<double>::infinity());
    std::nth_element(
        found.begin(), found.begin() + (n - 1), found.end(),
        [](const auto& a, const auto& b) { return a.second.best.step < b.second.best.step; });
    return found[static_cast<std::size_t>(n - 1)].second.best.step;
  }
};

/// Each plan judged with nothing recomputed, per configuration. Block recomputation of the
/// same plan runs a layer or more of each stage again, so it is no faster: it skips the plans
/// that fit with nothing recomputed, and those whose step so cannot beat the N-th best found.
class whole_plans {
  using sizing = std::tuple<int, int, int, int, int, int, dp_sharding>;
  using plan = std::tuple<std::string, int, std::string>;
  static sizing sizing_of(const job& j) {
    return {j.tp, j.cp, j.pp, j.ep, j.etp(), j.micro_batch_size, j.sharding};
  }
  static plan plan_of(const job& j) { return {j.schedule, j.chunks, j.layout}; }
  std::map<sizing, std::map<plan, std::pair<bool, seconds>>> judged_;  // fits, step

 public:
  /// Notes configuration `j`'s plans judged with nothing recomputed.
  void note(const job& j, const plan_search_result& r) {
    for (const plan_choice& ch : r.judged)
      if (ch.ran) judged_[sizing_of(j)][plan_of(ch.tried)] = {ch.fits, ch.step};
  }
  /// Drops from `plans` (configuration `j`'s, block-recomputed) those its block recomputation
  /// cannot make a choice of: they fit with nothing recomputed, or step no faster than `least`.
  void drop_unbeaten(const job& j, std::vector<job>& plans, seconds least) const {
    const auto at = judged_.find(sizing_of(j));
    if (at == judged_.end()) return;
    std::erase_if(plans, [&](const job& p) {
      const auto ch = at->second.find(plan_of(p));
      return ch != at->second.end() && (ch->second.first || ch->second.second >= least);
    });
  }
};

/// Judges the job as asked, when `pool`'s space holds its sizes, with its own schedule, chunks
/// and layout among the plans (the search never recommends less than what it was given), and
/// offers its best to `ranked`.
inline void judge_asked(const transformer& m, const cluster& c, const configuration_space& sp,
                        const configuration_pool& pool, ranking& ranked,
                        configuration_search_result& out, const estimate_options& o) {
  const std::vector<configuration_candidate>& open = pool.open;
  const job& a = pool.asked;
  const auto asked = std::find_if(open.begin(), open.end(), [&](const configuration_candidate& x) {
    return x.j.tp == a.tp && x.j.pp == a.pp && x.j.dp == a.dp && x.j.cp == a.cp && x.j.ep == a.ep &&
           x.j.etp() == a.etp() && x.j.micro_batch_size == a.micro_batch_size &&
           x.j.policy == a.policy && block_recompute(x.j) == block_recompute(a) &&
           x.j.sharding == a.sharding && x.j.recompute_modules == a.recompute_modules &&
           x.j.sequence_parallel == a.sequence_parallel;
  });
  if (asked == open.end()) return;
  job j = asked->j;
  j.schedule = a.schedule;
  j.chunks = a.chunks;
  j.layout = a.layout;
  j.recompute_method = a.recompute_method;  // which layers it recomputes, as asked
  j.recompute_num_layers = a.recompute_num_layers;
  j.recompute_every = a.recompute_every;
  const plan_search_result r = judge_plans(
      m, plan_variants(m, j, pool.priced.at(asked->key).pieces, sp.max_chunks, sp.runtime), c, {},
      o);
  ++out.counts.screened;
  if (r.best)
    ranked.offer(static_cast<std::size_t>(asked - open.begin()), r.judged[*r.best], asked->bound);
}

/// The order configurations are judged in full: the fastest screened not yet judged, and the
/// configuration of the least bound not yet judged (`open` is sorted by bound), each order
/// given the same work (plans judged times their ranks and micro-batches, the time a
/// simulation takes). The first finds fast configurations early where the bounds, which
/// leave out what a schedule may hide, tell them apart poorly (an MoE job's all-to-all behind a
/// paired forward and backward); the second raises the least bound left, what a search out of
/// time can say of the rest. Each configuration is handed out once; those whose bound cannot
/// beat the best found so far are pruned on the way.
class judging_order {
 public:
  /// `screened`: per configuration of `open`, its screened step (infinite: not screened, or
  /// its frugal plan did not fit).
  judging_order(const std::vector<configuration_candidate>& open,
                const std::vector<seconds>& screened)
      : open_(open), screened_(screened), by_screening_(open.size()), handled_(open.size(), 0) {
    for (std::size_t i = 0; i < by_screening_.size(); ++i) by_screening_[i] = i;
    std::stable_sort(by_screening_.begin(), by_screening_.end(),
                     [&](std::size_t a, std::size_t b) { return screened[a] < screened[b]; });
  }
  /// The next to judge, none when every one is handled; those met on the way whose bound is not
  /// below `nth` (the N-th best step found) are pruned, their plans added to `pruned`.
  std::optional<std::size_t> next(seconds nth, long long& pruned) {
    turn_ = spent_[0] <= spent_[1];  // the screened order's turn when it has cost no more
    if (const auto i = from(turn_, nth, pruned)) return i;
    turn_ = !turn_;
    return from(turn_, nth, pruned);
  }
  /// The last configuration handed out took `work` to judge: its order's account.
  void took(double work) { spent_[turn_ ? 0 : 1] += work; }
  /// Hands configuration `i` back, unjudged.
  void put_back(std::size_t i) { handled_[i] = 0; }
  const std::vector<std::uint8_t>& handled() const { return handled_; }

 private:
  std::optional<std::size_t> from(bool screening, seconds nth, long long& pruned) {
    std::size_t& at = screening ? next_screened_ : next_bound_;
    for (; at < open_.size(); ++at) {
      const std::size_t i = screening ? by_screening_[at] : at;
      if (screening && !std::isfinite(screened_[i].count())) break;  // the rest unscreened
      if (handled_[i]) continue;
      handled_[i] = 1;
      if (open_[i].bound < nth) return i;
      pruned += open_[i].plans;
    }
    return std::nullopt;
  }
  const std::vector<configuration_candidate>& open_;
  const std::vector<seconds>& screened_;
  std::vector<std::size_t> by_screening_;
  std::vector<std::uint8_t> handled_;
  std::size_t next_screened_ = 0, next_bound_ = 0;
  bool turn_ = true;          ///< whose the last configuration handed out was: screening's
  double spent_[2] = {0, 0};  ///< the work of judging each order's, screened and bound
};

/// What a search out of time leaves, those of `open` not `handled`: those whose bound cannot
/// beat `nth` pruned, the rest unexplored — the least of their bounds how far below the best
/// found an unjudged configuration might lie.
inline void count_unjudged(const std::vector<configuration_candidate>& open,
                           const std::vector<std::uint8_t>& handled, seconds nth,
                           configuration_search_result& out) {
  seconds least(std::numeric_limits<double>::infinity());
  for (std::size_t k = 0; k < open.size(); ++k) {
    if (handled[k]) continue;
    if (open[k].bound >= nth) {
      out.counts.pruned_bound += open[k].plans;
    } else {
      out.counts.unexplored += open[k].plans;
      least = std::min(least, open[k].bound);
    }
  }
  out.complete = least == seconds(std::numeric_limits<double>::infinity());
  out.least_unexplored = least;
}

/// Judges `pool`'s open configurations in two passes, after the job as asked (all its plans).
/// First, in the order of their bounds, each is screened with its most frugal plan
/// (`frugal_plan`) for up to a quarter of the budget left once the space is built and the job
/// as asked judged: fitting
/// plans found early, and with them a `o.top`-th best step to bound by. Then each is judged
/// with every plan `best_plan` tries — the fastest screened and the least bound not yet
/// judged, each order given the same work (`judging_order`) — skipping those whose bound cannot
/// beat the `o.top`-th best found, until none is left or the budget (`elapsed`: seconds so far)
/// runs out. The fastest that fit go to `out.top`.
template <class Clock>
void judge_configurations(const transformer& m, const cluster& c,
                          const configuration_search_options& o, configuration_pool& pool,
                          configuration_search_result& out, Clock elapsed) {
  std::vector<configuration_candidate>& open = pool.open;
  const configuration_space& sp = o.space;
  std::stable_sort(open.begin(), open.end(),
                   [](const auto& a, const auto& b) { return a.bound < b.bound; });
  const auto plans_for = [&](const configuration_candidate& x) {
    return plans_of(m, x.j, c, sp, &pool.priced.at(x.key).pieces);
  };
  ranking ranked;
  whole_plans whole;
  program_cache programs;  // the pipelines of each shape, made once
  const estimate_options eo{.programs = &programs};
  const std::vector<recompute_form> forms = recompute_forms(sp);
  const bool uniform_judged = std::any_of(forms.begin(), forms.end(), [](const auto& f) {
    return f.policy == recompute::full && !f.block;
  });
  // Judges configuration `x` with `plans`; `passed_over`: those block recomputation leaves
  // unjudged (they cannot make it a choice).
  const auto judge = [&](const configuration_candidate& x, std::vector<job> plans,
                         long long& passed_over) {
    if (!x.fewest_block) {
      plan_search_result r = judge_plans(m, plans, c, {}, eo);
      if (x.j.policy == recompute::none) whole.note(x.j, r);
      return r;
    }
    const std::size_t given = plans.size();
    whole.drop_unbeaten(x.j, plans, ranked.nth(o.top));
    plan_search_result r = judge_fewest_block(m, plans, c, eo, uniform_judged);
    passed_over += static_cast<long long>(given - r.judged.size());
    return r;
  };
  judge_asked(m, c, sp, pool, ranked, out, eo);
  // Screening: a quarter of what is left of the budget once the space is built and the job as
  // asked judged (building a large space takes seconds of its own).
  const double screen_from = elapsed();
  const double screen_until = screen_from + std::max(0.0, o.budget_s - screen_from) / 4;
  std::vector<seconds> screened(open.size(), seconds(std::numeric_limits<double>::infinity()));
  for (std::size_t i = 0; i < open.size(); ++i) {
    const double now = elapsed();
    if (i > 0 && now + (now - screen_from) / static_cast<double>(i) > screen_until) break;
    if (open[i].bound >= ranked.nth(o.top)) break;
    const std::vector<job> plans = plans_for(open[i]);
    // None where the runtime runs no schedule of these sizes (Megatron's combined 1F1B needs
    // its interleaved schedule, whose chunks may not divide the layers).
    const job* frugal = frugal_plan(plans);
    if (!frugal) continue;
    long long ignored = 0;  // screening counts no plans
    const plan_search_result r = judge(open[i], {*frugal}, ignored);
    ++out.counts.screened;
    if (r.best) {
      ranked.offer(i, r.judged[*r.best], open[i].bound);
      if (r.judged[*r.best].fits) screened[i] = r.judged[*r.best].step;
    }
  }
  const double screening = elapsed();
  judging_order order(open, screened);
  out.complete = true;
  long long done = 0;
  for (;;) {
    const std::optional<std::size_t> pick = order.next(ranked.nth(o.top), out.counts.pruned_bound);
    if (!pick) break;
    const configuration_candidate& cand = open[*pick];
    const double now = elapsed();
    if (done > 0 && now + (now - screening) / static_cast<double>(done) > o.budget_s) {
      order.put_back(*pick);
      count_unjudged(open, order.handled(), ranked.nth(o.top), out);
      break;
    }
    const plan_search_result r = judge(cand, plans_for(cand), out.counts.pruned_bound);
    // Its work, in plans judged times the ops each simulates (ranks times micro-batches): a
    // measure of the time it took that does not depend on the machine, so that a search the
    // budget does not end judges in the same order on every run.
    order.took(static_cast<double>(r.judged.size()) * cand.j.pp * cand.j.micro());
    ++done;
    ++out.counts.simulated;
    if (o.progress) o.progress(out.counts.simulated);
    out.counts.plans += static_cast<long long>(r.judged.size());
    if (r.best) ranked.offer(*pick, r.judged[*r.best], cand.bound);
  }
  std::sort(ranked.found.begin(), ranked.found.end(),
            [](const auto& a, const auto& b) { return a.second.best.step < b.second.best.step; });
  for (std::size_t k = 0; k < ranked.found.size() && static_cast<int>(k) < o.top; ++k)
    out.top.push_back(ranked.found[k].second);
}

}  // namespace detail

/// Every configuration of job `asked`'s model `m` on `o.space.devices` devices of cluster `c`
/// (the job's own count when 0) that the space leaves open: tp x pp x dp x cp = devices (tp
/// dividing the heads, cp halving the sequence, ep dividing the experts and dp x cp — or,
/// with the experts' tensor parallelism below tp, ep x etp dividing tp x dp x cp), each
/// micro-batch size that divides the job's global batch over dp, recomputation none, selective
/// (the job's modules), full of every layer or of the first N of each stage (Megatron's block
/// method, N the fewest that fit each plan), the distributed optimizer or FSDP (or the job's
/// own sharding); sequence parallelism with every tp > 1 (Megatron's rule for MoE layers, and
/// never slower). The rest of the job — the global batch, the sequence, FP8, the overlaps, the
/// runtime — stays as asked. Each surviving configuration's plans are `best_plan`'s; the `o.top`
/// fastest that fit are returned with the counts. Throws `config_error` when no configuration
/// splits the model, or none fits.
inline configuration_search_result search_configurations(const transformer& m, const job& asked,
                                                         const cluster& c,
                                                         const configuration_search_options& o) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(clock::now() - started).count();
  };
  detail::check_search_options(o);
  check_cluster(c);
  const job base = with_megatron_forms(m, asked);
  check_recompute_ops(m, base);
  // Scaling's ZeRO-1, DeepSpeed's BF16_Optimizer: their rules before any configuration.
  if (base.grad_all_reduce_fp32 || base.deepspeed_bf16) {
    job scaling = base;
    // The sizes the search chooses itself are 1; those the space keeps, as kept.
    scaling.cp = o.space.cp.value_or(1);
    scaling.ep = o.space.ep.value_or(1);
    if (o.space.sharding) scaling.sharding = *o.space.sharding;
    scaling.schedule = "1f1b";  // the search's choice, among what their pipeline engines run
    check_scaling_all_reduce(scaling);
    check_deepspeed_bf16(scaling);
  }
  // A trainer of its own is no Megatron-LM run, as `best_plan` says.
  if (base.own_trainer() && o.space.runtime == runs_on::megatron)
    throw config_error(base.own_trainer_reason() + ": no Megatron-LM run, nor --runtime megatron");
  configuration_search_result out;
  out.devices = o.space.devices > 0 ? o.space.devices : base.devices();
  if (o.space.devices > 0 && base.global_batch_size == 0)
    throw config_error(
        "the configuration search over --devices needs the job's --global-batch-size (the "
        "sequences a step, which it keeps)");
  const long long batch = base.batch();  // sequences a step: the search keeps it
  if (batch > job_limits::global_batch_size)
    throw config_error("the job's batch of " + std::to_string(batch) +
                       " sequences is more than weft plans for");
  detail::configuration_pool pool = detail::open_configurations(m, base, c, o.space, batch, out);
  const std::vector<detail::configuration_candidate>& open = pool.open;
  if (open.empty() && out.counts.considered == 0 && pool.unrun > 0)
    throw config_error(
        "--runtime " + std::string(runs_on_names[static_cast<std::size_t>(o.space.runtime)]) +
        " runs none of the configurations of " + std::to_string(out.devices) +
        " devices the space leaves open" +
        (o.space.runtime == runs_on::torchtitan
             ? " (torchtitan runs none of Megatron's own features: --tp-comm-overlap, the "
               "experts' tp below tp, block recomputation, selective recomputation by modules, "
               "the combined 1F1B)"
             : " (Megatron's combined 1F1B needs its interleaved schedule, with micro-batches "
               "a multiple of the pipeline ranks)"));
  if (open.empty())
    throw config_error(
        out.counts.pruned_memory == 0
            ? "no configuration of " + std::to_string(out.devices) +
                  " devices splits the model and the batch of " + std::to_string(batch) +
                  (batch == 1 ? " sequence" : " sequences") +
                  " (tp must divide the heads and key/value heads, cp halve the "
                  "sequence, dp x the micro-batch size divide the batch, ep the experts and "
                  "dp x cp, or ep x the experts' tp divide tp x dp x cp)"
            : "no configuration of " + std::to_string(out.devices) +
                  " devices fits the model's states in the " + allocatable_text(c.hbm_bytes) +
                  " (" + std::to_string(out.counts.pruned_memory) +
                  " overflow before any "
                  "activation)");
  detail::judge_configurations(m, c, o, pool, out, elapsed);
  out.seconds_taken = elapsed();
  if (out.top.empty() && out.complete)
    throw config_error("no configuration of " + std::to_string(out.devices) +
                       (out.devices == 1 ? " device" : " devices") + " fits in the " +
                       allocatable_text(c.hbm_bytes) + " (" + std::to_string(out.counts.simulated) +
                       " estimated with every schedule; give more devices, or a smaller "
                       "micro-batch or sequence)");
  return out;
}

}  // namespace weft::plan
