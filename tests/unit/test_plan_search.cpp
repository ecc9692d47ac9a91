// The configuration search: its branch and bound loses nothing against a brute force over every
// configuration, its bound is a bound, the sizes a user fixes stay fixed, its counts add up, and
// every way it can fail says why.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <weft/plan/configurations.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/memory.hpp>

using namespace weft::plan;
using weft::config_error;
using weft::seconds;

namespace {

transformer model(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/hf/" + name + ".json");
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return read_hf_config(text.str()).model;
}

/// GPT-2 on 8 A100s, 64 sequences of 1024 tokens a step.
job gpt2_job() {
  job j;
  j.dp = 8;
  j.global_batch_size = 64;
  j.seq = 1024;
  return j;
}

/// The fastest fitting step over every configuration of `devices` that `space` leaves open,
/// each judged by `best_plan` in full (pipelines of one rank as the job is).
std::optional<double> brute_force(const transformer& m, const job& base, const cluster& c,
                                  const configuration_space& space, long long devices) {
  std::optional<double> best;
  for (int tp = 1; tp <= devices; ++tp)
    for (int cp = 1; tp * cp <= devices; ++cp)
      for (int pp = 1; tp * cp * pp <= devices; ++pp) {
        if (devices % (static_cast<long long>(tp) * cp * pp) != 0) continue;
        if ((space.tp && *space.tp != tp) || (space.pp && *space.pp != pp)) continue;
        for (int mbs = 1; mbs <= space.max_micro_batch_size; mbs *= 2)
          for (const recompute r : {recompute::none, recompute::selective, recompute::full})
            for (const dp_sharding s : {dp_sharding::optim, dp_sharding::optim_grads_params}) {
              job j = base;
              j.tp = tp;
              j.cp = cp;
              j.pp = pp;
              j.dp = static_cast<int>(devices / tp / cp / pp);
              j.micro_batch_size = mbs;
              j.policy = r;
              j.sharding = s;
              j.sequence_parallel = tp > 1;
              try {
                check_sizes(m, j);
              } catch (const config_error&) {
                continue;
              }
              std::optional<double> step;
              if (pp == 1) {
                const estimate e = estimate_job(m, j, c);
                if (*std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end()) <=
                    allocatable_bytes(c.hbm_bytes))
                  step = e.step.count();
              } else {
                const plan_search_result r2 = best_plan(m, j, c);
                if (r2.judged[*r2.best].fits) step = r2.judged[*r2.best].step.count();
              }
              if (step && (!best || *step < *best)) best = step;
            }
      }
  return best;
}

/// Llama 3.1 8B on 8 H100s with `pp` pipeline ranks, 64 sequences of 16k tokens a step: with
/// nothing recomputed it overflows the device, with every layer recomputed it fits. The search
/// keeps tp, cp, pp and the micro-batch size (1) and looks for the one best configuration.
struct memory_bound {
  transformer m = model("llama-3.1-8b");
  const cluster& c = *find_cluster("h100-sxm");
  job base;
  configuration_search_options o;
  explicit memory_bound(int pp) {
    base.pp = pp;
    base.dp = 8 / pp;
    base.global_batch_size = 64;
    base.seq = 16384;
    o.budget_s = 600;
    o.top = 1;
    o.space.tp = o.space.cp = o.space.micro_batch_size = 1;
    o.space.pp = pp;
  }
};

}  // namespace

TEST_CASE("the configuration search finds the fastest configuration a brute force finds") {
  const transformer m = model("gpt2");
  const cluster& c = *find_cluster("a100-80g");
  configuration_search_options o;
  o.budget_s = 600;  // complete: the branch and bound ends by its bound, never by the clock
  o.top = 3;
  o.space.max_micro_batch_size = 2;
  const configuration_search_result r = search_configurations(m, gpt2_job(), c, o);
  REQUIRE(r.complete);
  REQUIRE(r.top.size() == 3);
  const std::optional<double> best = brute_force(m, gpt2_job(), c, o.space, 8);
  REQUIRE(best);
  CHECK(r.top.front().best.step.count() == doctest::Approx(*best).epsilon(1e-12));
  // Fastest first, each fitting, each the figures its own job gives.
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const plan_choice& x = r.top[i].best;
    CHECK(x.fits);
    CHECK(x.tried.devices() == 8);
    if (i > 0) CHECK(r.top[i - 1].best.step <= x.step);
    CHECK(estimate_job(m, x.tried, c).step == x.step);
    CHECK(r.top[i].bound.count() <= x.step.count() * (1 + 1e-12));  // equal where comm binds
  }
  // Every configuration considered is accounted for once.
  const configuration_counts& n = r.counts;
  // 8 = tp x cp x pp x dp: the three 2s over four sizes, C(6, 3) = 20 ways; micro-batches of 1
  // and 2, four recomputations (none, selective, full of every layer, of the first N), two
  // shardings.
  CHECK(n.sizings == 20 * 2 * 4 * 2);
  CHECK(n.simulated > 0);
  CHECK(n.pruned_bound > 0);
  CHECK(n.unexplored == 0);
  CHECK(n.considered > n.sizings);
}

TEST_CASE("the search's bound is below every plan of the configuration") {
  const transformer m = model("mixtral-8x7b");
  const cluster& c = *find_cluster("h100-sxm");
  const auto check = [&](job j) {
    CAPTURE(joined(weft_flags(j)));
    const detail::model_costs k = detail::model_costs_of(m, j, c);
    const seconds bound = detail::step_bound(j, c, k);
    const plan_search_result r = best_plan(m, j, c);
    for (const plan_choice& x : r.judged)
      if (x.ran) CHECK(bound <= x.step);
  };
  // The data-parallel collectives dominate: short sequences, a micro-batch a replica, the
  // replicas across nodes, nothing overlapped (the job's defaults) and each overlap.
  for (const dp_sharding s :
       {dp_sharding::no_shard, dp_sharding::optim, dp_sharding::optim_grads_params})
    for (const bool overlap : {false, true}) {
      job d;
      d.dp = 32;
      d.ep = 8;
      d.seq = 128;
      d.global_batch_size = 32;
      d.sharding = s;
      d.overlap_grad_reduce = overlap;
      d.overlap_param_gather = overlap && s != dp_sharding::no_shard;
      check(d);
    }
  job scaling;  // Scaling's ZeRO-1: whole gradients all-reduced in fp32 after the backward
  scaling.dp = 32;
  scaling.seq = 128;
  scaling.global_batch_size = 32;
  scaling.grad_all_reduce_fp32 = true;
  check(scaling);
  job j;
  j.global_batch_size = 64;
  j.seq = 4096;
  for (const int tp : {1, 8})
    for (const int pp : {1, 4})
      for (const dp_sharding s :
           {dp_sharding::no_shard, dp_sharding::optim, dp_sharding::optim_grads_params})
        for (const bool overlap : {false, true}) {
          j.tp = tp;
          j.pp = pp;
          j.dp = 32 / tp / pp;
          j.ep = j.dp >= 8 ? 8 : j.dp;
          j.sequence_parallel = tp > 1;
          j.sharding = s;
          j.overlap_grad_reduce = overlap;
          j.overlap_param_gather = overlap && s != dp_sharding::no_shard;
          j.policy = tp == 8 ? recompute::full : recompute::selective;
          check(j);
        }
  // Block recomputation's bound: nothing recomputed, and a layer's forward again on every
  // stage but a lone loss's — below each plan that recomputes the first 1 or 3 layers.
  for (const int pp : {1, 4})
    for (const int n : {1, 3}) {
      job b;
      b.pp = pp;
      b.dp = 32 / pp;
      b.ep = 8;
      b.global_batch_size = 64;
      b.seq = 4096;
      b.policy = recompute::full;
      b.recompute_method = "block";
      b.recompute_num_layers = n;
      job none = b;
      none.policy = recompute::none;
      none.recompute_method.clear();
      none.recompute_num_layers = 0;
      const detail::model_costs k = detail::model_costs_of(m, none, c);
      REQUIRE(k.least_forward > 0);
      const seconds bound = detail::step_bound(b, c, k, k.least_forward * std::max(pp - 1, 1) / pp);
      CHECK(bound > detail::step_bound(none, c, k));
      for (const plan_choice& x : best_plan(m, b, c).judged)
        if (x.ran) CHECK(bound <= x.step);
    }
}

TEST_CASE("without the fused accumulation, each sharding's bound is of its own costs") {
  // Without gradient-accumulation fusion every micro-batch adds its weights' gradients in a
  // pass of its own — but not where FSDP shards them: the two shardings' layers cost
  // differently, and a bound priced with the other's costs would be above FSDP's own step.
  const transformer m = model("gpt2");
  const cluster& c = *find_cluster("a100-80g");
  job base;
  base.seq = 1024;
  base.global_batch_size = 64;
  base.gradient_accumulation_fusion = false;
  configuration_space sp;
  sp.tp = 1;
  sp.pp = 1;
  sp.cp = 1;
  sp.micro_batch_size = 1;
  sp.policy = recompute::none;
  configuration_search_result out;
  out.devices = 8;
  const detail::configuration_pool pool = detail::open_configurations(m, base, c, sp, 64, out);
  int sharded = 0, whole = 0;
  for (const detail::configuration_candidate& x : pool.open) {
    (x.j.sharding == dp_sharding::optim_grads_params ? sharded : whole) += 1;
    // Each candidate's bound from the work of its own job's layers.
    CHECK(pool.priced.at(x.key).work == doctest::Approx(detail::model_costs_of(m, x.j, c).work));
    CHECK(x.bound.count() <= estimate_job(m, x.j, c).step.count() * (1 + 1e-12));
  }
  CHECK(sharded > 0);
  CHECK(whole > 0);
}

TEST_CASE("the bound holds for tied embeddings, which one stage keeps once") {
  const transformer m = model("gpt2");  // its head is its embedding
  REQUIRE(m.tied_embeddings);
  const cluster& c = *find_cluster("a100-80g");
  for (const int pp : {1, 2})
    for (const dp_sharding s : {dp_sharding::no_shard, dp_sharding::optim}) {
      job j;
      j.pp = pp;
      j.dp = 8 / pp;
      j.seq = 128;
      j.global_batch_size = 8 / pp;
      j.sharding = s;
      const detail::model_costs k = detail::model_costs_of(m, j, c);
      const seconds bound = detail::step_bound(j, c, k);
      // Where the bound is tight (one stage) it is the step itself summed in another order:
      // equal up to rounding.
      for (const plan_choice& x : best_plan(m, j, c).judged)
        if (x.ran) CHECK(bound.count() <= x.step.count() * (1 + 1e-12));
      // One stage holds the embedding once: the states the prune counts are the estimate's.
      if (pp == 1) {
        const estimate e = estimate_job(m, j, c);
        CHECK(model_state_bytes(k.dense_of(1), 8, s) == doctest::Approx(e.states_per_rank[0]));
      }
    }
}

TEST_CASE("sizes the space keeps stay as given") {
  const transformer m = model("gpt2");
  configuration_search_options o;
  o.budget_s = 600;
  o.top = 4;
  o.space.tp = 2;
  o.space.policy = recompute::full;
  o.space.max_micro_batch_size = 1;
  const configuration_search_result r =
      search_configurations(m, gpt2_job(), *find_cluster("a100-80g"), o);
  REQUIRE(!r.top.empty());
  for (const configuration_choice& x : r.top) {
    CHECK(x.best.tried.tp == 2);
    CHECK(x.best.tried.sequence_parallel);
    CHECK(x.best.tried.policy == recompute::full);
    CHECK(x.best.tried.micro_batch_size == 1);
    CHECK(x.best.tried.batch() == 64);
  }
}

TEST_CASE("torchtitan's per-op checkpointing is its selective recomputation in the search") {
  // Llama 3.1 8B on 8 H100s at 2k tokens, the job as torchtitan's per-op checkpointing: the
  // search leaves the recomputation open, and keeps the job's per-op form where it chooses
  // selective recomputation — none and full are Megatron's and torchtitan's both. Every choice
  // is judged (none refused), and one that recomputes selectively is per-op.
  memory_bound setup(1);
  job asked = setup.base;
  asked.seq = 2048;  // short enough that keeping everything fits, and is fastest
  asked.policy = recompute::selective;
  asked.recompute_ops = true;
  asked.attention = weft::perf::attention_library::sdpa;
  setup.o.top = 3;
  setup.o.space.sharding = dp_sharding::optim_grads_params;
  const configuration_search_result r = search_configurations(setup.m, asked, setup.c, setup.o);
  REQUIRE(!r.top.empty());
  CHECK(r.top.front().best.tried.policy == recompute::none);
  for (const configuration_choice& x : r.top) {
    const job& j = x.best.tried;
    CHECK(j.recompute_ops == (j.policy == recompute::selective));
    CHECK(estimate_job(setup.m, j, setup.c).step == x.best.step);
  }
  // Selective recomputation chosen, it is per op, and every form keeps PyTorch's attention.
  setup.o.space.policy = recompute::selective;
  const configuration_search_result sel = search_configurations(setup.m, asked, setup.c, setup.o);
  REQUIRE(!sel.top.empty());
  for (const configuration_choice& x : sel.top) CHECK(x.best.tried.recompute_ops);
  asked.attention = weft::perf::attention_library::transformer_engine;  // the default, given
  setup.o.space.policy.reset();
  for (const configuration_choice& x : search_configurations(setup.m, asked, setup.c, setup.o).top)
    CHECK(x.best.tried.attention_kernel() == weft::perf::attention_library::sdpa);
  // Not Megatron-LM's: refused with --runtime megatron, by the flag.
  setup.o.space.runtime = runs_on::megatron;
  CHECK_THROWS_WITH_AS(search_configurations(setup.m, asked, setup.c, setup.o),
                       doctest::Contains("--recompute-ops prices torchtitan's per-op "
                                         "checkpointing"),
                       config_error);
  setup.o.space.runtime = runs_on::any;
  // A model it is not priced for: one clear error before any configuration.
  CHECK_THROWS_WITH_AS(search_configurations(model("gpt2"), asked, setup.c, setup.o),
                       doctest::Contains("not this model's MLP"), config_error);
}

TEST_CASE("block recomputation: the fewest first layers of each stage that fit") {
  // Llama 3.1 8B on 8 H100s without model parallelism, 16k tokens a sequence: nothing
  // recomputed overflows, every layer recomputed fits. Megatron's block method recomputes the
  // first N layers; the search must find the plan a brute force over every N finds, and that N
  // must be the fewest that fit (more keep fewer activations and cost more compute).
  memory_bound setup(1);
  const transformer& m = setup.m;  // (named, not bound: lambdas capture them)
  const cluster& c = setup.c;
  const job& base = setup.base;
  configuration_search_options& o = setup.o;
  o.space.sharding = dp_sharding::optim_grads_params;
  const auto peak = [&](const job& j) {
    const estimate e = estimate_job(m, j, c);
    return *std::max_element(e.memory_per_rank.begin(), e.memory_per_rank.end());
  };
  job none = base;
  none.sharding = dp_sharding::optim_grads_params;
  CHECK(peak(none) > allocatable_bytes(c.hbm_bytes));
  job uniform = none;
  uniform.policy = recompute::full;
  REQUIRE(peak(uniform) <= allocatable_bytes(c.hbm_bytes));
  std::optional<double> best;
  int fewest = 0;
  for (int n = 1; n < m.layers; ++n) {
    job b = uniform;
    b.recompute_method = "block";
    b.recompute_num_layers = n;
    if (peak(b) > allocatable_bytes(c.hbm_bytes)) continue;
    if (fewest == 0) fewest = n;
    const double step = estimate_job(m, b, c).step.count();
    if (!best || step < *best) best = step;
  }
  REQUIRE(fewest > 1);
  REQUIRE(best);
  CHECK(*best < estimate_job(m, uniform, c).step.count());
  const configuration_search_result r = search_configurations(m, base, c, o);
  REQUIRE(r.top.size() == 1);
  const job& chosen = r.top.front().best.tried;
  CHECK(recompute_text(chosen) == "block " + std::to_string(fewest));
  CHECK(r.top.front().best.step.count() == doctest::Approx(*best).epsilon(1e-12));
  CHECK(r.top.front().bound <= r.top.front().best.step);
  // Only Megatron's code recomputes the first N layers: torchtitan's counts every N-th.
  CHECK(runtime_for(chosen) == "Megatron-LM (no pipeline)");
  const auto flags = megatron_arguments(chosen);
  REQUIRE(flags);
  CHECK(joined(*flags).find("--recompute-granularity full --recompute-method block "
                            "--recompute-num-layers " +
                            std::to_string(fewest)) != std::string::npos);
  // Every plan considered is accounted for once: block recomputation's passed over with the
  // bound's.
  const configuration_counts& n = r.counts;
  REQUIRE(r.complete);
  CHECK(n.considered == n.pruned_sizes + n.pruned_memory + n.pruned_bound + n.plans);
  o.space.runtime = runs_on::torchtitan;
  const configuration_search_result titan = search_configurations(m, base, c, o);
  REQUIRE(!titan.top.empty());
  for (const configuration_choice& x : titan.top) CHECK(!block_recompute(x.best.tried));
  // The method kept: uniform alone recomputes every layer; block with its N kept.
  o.space.runtime = runs_on::any;
  o.space.recompute_method = "uniform";
  const configuration_search_result u = search_configurations(m, base, c, o);
  REQUIRE(u.top.size() == 1);
  CHECK(recompute_text(u.top.front().best.tried) == "full");
  o.space.recompute_method = "block";
  o.space.recompute_num_layers = fewest + 3;
  const configuration_search_result k = search_configurations(m, base, c, o);
  REQUIRE(k.top.size() == 1);
  CHECK(recompute_text(k.top.front().best.tried) == "block " + std::to_string(fewest + 3));
  // Where nothing recomputed fits, block recomputation is never recommended over it.
  o.space.recompute_method.reset();
  o.space.recompute_num_layers.reset();
  o.top = 50;
  job short_seq = base;
  short_seq.seq = 4096;
  const configuration_search_result whole = search_configurations(m, short_seq, c, o);
  REQUIRE(whole.top.size() >= 3);
  for (const configuration_choice& x : whole.top) {
    CAPTURE(joined(weft_flags(x.best.tried)));
    CHECK(!block_recompute(x.best.tried));
  }
}

TEST_CASE("block recomputation on a pipeline: the plan a brute force over every N finds") {
  // Two pipeline ranks, 16k tokens: each plan Megatron runs (1F1B, interleaved with its chunk
  // counts and layouts) at every N; the search's choice is the fastest that fits of them all.
  memory_bound setup(2);
  const transformer& m = setup.m;
  const cluster& c = setup.c;
  job& base = setup.base;
  configuration_search_options& o = setup.o;
  base.sharding = dp_sharding::optim_grads_params;
  o.space.policy = recompute::full;
  o.space.recompute_method = "block";
  o.space.sharding = dp_sharding::optim_grads_params;
  std::optional<double> best;
  for (int n = 1; n < m.layers; ++n) {
    job b = base;
    b.policy = recompute::full;
    b.recompute_method = "block";
    b.recompute_num_layers = n;
    for (const plan_choice& x : best_plan(m, b, c).judged)
      if (x.fits && (!best || x.step.count() < *best)) best = x.step.count();
  }
  REQUIRE(best);
  const configuration_search_result r = search_configurations(m, base, c, o);
  REQUIRE(r.top.size() == 1);
  CHECK(block_recompute(r.top.front().best.tried));
  CHECK(r.top.front().best.step.count() == doctest::Approx(*best).epsilon(1e-12));
  const configuration_counts& n = r.counts;
  CHECK(n.considered == n.pruned_sizes + n.pruned_memory + n.pruned_bound + n.plans);
}

TEST_CASE("block recomputation kept without its N: stages of one layer recompute it") {
  // GPT-2's 12 layers over 12 pipeline ranks, one a stage: block recomputation of the first
  // layer is every layer's. Kept as the only form, the search judges it so (it once left such
  // plans out, as uniform recomputation's, and found nothing).
  const transformer m = model("gpt2");
  job j;
  j.pp = 12;
  j.global_batch_size = 12;
  j.seq = 1024;
  configuration_search_options o;
  o.budget_s = 600;
  o.top = 1;
  o.space.pp = 12;
  o.space.policy = recompute::full;
  o.space.recompute_method = "block";
  o.space.max_chunks = 1;
  const configuration_search_result r = search_configurations(m, j, *find_cluster("a100-80g"), o);
  REQUIRE(r.top.size() == 1);
  CHECK(recompute_text(r.top.front().best.tried) == "block 1");
}

TEST_CASE("the experts' tensor parallelism is searched: tp's, or folded below it") {
  // Megatron's parallel folding: each expert whole (or over fewer devices than tp), ep folded
  // over tp x dp x cp. With tp kept at 2 the search tries the experts at etp 2 and 1 — twice
  // the sizings — and every choice keeps Megatron's rules; kept at 1, every choice is folded.
  const transformer m = model("mixtral-8x7b");
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.global_batch_size = 16;
  j.seq = 2048;
  configuration_search_options o;
  o.budget_s = 600;
  o.top = 3;
  o.space.devices = 16;
  o.space.tp = 2;
  o.space.pp = 2;
  o.space.cp = 1;
  o.space.micro_batch_size = 1;
  o.space.policy = recompute::none;
  const configuration_search_result free = search_configurations(m, j, c, o);
  o.space.etp = 2;
  const configuration_search_result tps = search_configurations(m, j, c, o);
  o.space.etp = 1;
  const configuration_search_result folded = search_configurations(m, j, c, o);
  CHECK(free.counts.sizings == 2 * tps.counts.sizings);
  CHECK(free.counts.sizings == tps.counts.sizings + folded.counts.sizings);
  // Each counted with the plans its code runs: a folded job Megatron's schedules only.
  CHECK(free.counts.considered == tps.counts.considered + folded.counts.considered);
  CHECK(folded.counts.considered < tps.counts.considered);
  REQUIRE((!tps.top.empty() && !folded.top.empty() && !free.top.empty()));
  for (const configuration_choice& x : tps.top) CHECK(x.best.tried.etp() == 2);
  for (const configuration_choice& x : folded.top) {
    const job& t = x.best.tried;
    CHECK(t.etp() == 1);
    CHECK(t.sequence_parallel);  // Megatron's rule for folding below tp
    CHECK((static_cast<long long>(t.tp) * t.dp * t.cp) % t.ep == 0);
    // Planned again as chosen, the same step: the figures are the job's.
    CHECK(estimate_job(m, t, c).step.count() == doctest::Approx(x.best.step.count()));
  }
  {
    // A trainer of its own with fp16 (it scales the loss itself) runs the experts at tp's
    // alone, folding them below tp being Megatron's code: each configuration counted with the
    // plans its own code runs, as with etp kept at tp's.
    job own = j;
    own.eager = true;
    own.fp16 = true;
    configuration_search_options mine = o;
    mine.space.etp.reset();
    const configuration_search_result any = search_configurations(m, own, c, mine);
    mine.space.etp = 2;
    const configuration_search_result at_tp = search_configurations(m, own, c, mine);
    REQUIRE(!any.top.empty());
    for (const configuration_choice& x : any.top) CHECK(x.best.tried.etp() == 2);
    CHECK(any.counts.considered == at_tp.counts.considered);
  }
  // The free search's first is the faster of the two searches' firsts, and every choice's
  // bound is below its step (the costs priced with its own etp).
  CHECK(free.top.front().best.step.count() ==
        doctest::Approx(
            std::min(tps.top.front().best.step.count(), folded.top.front().best.step.count())));
  for (const auto* r : {&free, &tps, &folded})
    for (const configuration_choice& x : r->top) CHECK(x.bound <= x.best.step);
  // Folding is Megatron's alone: torchtitan's runtime keeps the experts at tp's, and a folded
  // job is recommended only on Megatron's schedules.
  o.space.etp.reset();
  o.space.runtime = runs_on::torchtitan;
  const configuration_search_result titan = search_configurations(m, j, c, o);
  CHECK(titan.counts.sizings == tps.counts.sizings);
  for (const configuration_choice& x : titan.top) CHECK(x.best.tried.etp() == 2);
  job f = folded.top.front().best.tried;
  CHECK(!runs(f, runs_on::torchtitan));
  CHECK(runtime_for(f).starts_with("Megatron-LM"));
  f.schedule = "zb-v";
  CHECK(!runs(f, runs_on::any));
  // A dense model has no experts to fold: a kept etp changes nothing of its sizes.
  configuration_search_options dense = o;
  dense.space = configuration_space{};
  dense.space.devices = 8;
  dense.space.tp = 2;
  dense.space.max_micro_batch_size = 1;
  const transformer gpt2 = model("gpt2");
  job g = gpt2_job();
  const long long sizings = search_configurations(gpt2, g, c, dense).counts.sizings;
  dense.space.etp = 1;
  CHECK(search_configurations(gpt2, g, c, dense).counts.sizings == sizings);
}

TEST_CASE("DeepEP's dispatcher needs more than one expert-parallel or expert-tp rank") {
  const transformer m = model("mixtral-8x7b");
  job j;
  j.tp = 2;
  j.dp = 2;
  j.sequence_parallel = true;
  j.dispatcher = moe_dispatcher::flex;
  j.expert_tp = 1;  // ep 1 x etp 1: Megatron's MoEFlexTokenDispatcher refuses it
  CHECK_THROWS_WITH_AS(check_sizes(m, j), doctest::Contains("requires TPxEP > 1"), config_error);
  j.ep = 2;
  CHECK_NOTHROW(check_sizes(m, j));
}

TEST_CASE("a search out of time says so, and how far below the best the rest may be") {
  const transformer m = model("mixtral-8x7b");
  job j;
  j.dp = 64;
  j.global_batch_size = 256;
  configuration_search_options o;
  o.budget_s = 1e-9;  // the first configuration is judged, then the clock has run out
  const configuration_search_result r = search_configurations(m, j, *find_cluster("h100-sxm"), o);
  CHECK(!r.complete);
  CHECK(r.counts.simulated == 1);
  CHECK(r.counts.unexplored > 0);
  CHECK(r.counts.pruned_bound == 0);
  const configuration_counts& n = r.counts;
  CHECK(n.considered - n.pruned_sizes - n.pruned_memory - n.unexplored == n.plans);
  if (!r.top.empty()) CHECK(r.least_unexplored >= r.top.front().bound);
}

TEST_CASE("configurations judged in full: the fastest screened and the least bound, by work") {
  // Four configurations in the order of their bounds (1, 2, 3, 4 s); screening found the third
  // at 5 s and the second at 10 s, the others not. The two orders take turns as their work
  // evens out: screened first (the third), then the least bound (the first); the second order
  // having done more work, the screened one again (the second), then the fourth by its bound.
  std::vector<detail::configuration_candidate> open(4);
  for (std::size_t i = 0; i < open.size(); ++i) {
    open[i].bound = seconds(1.0 + static_cast<double>(i));
    open[i].plans = 10;
  }
  const seconds none(std::numeric_limits<double>::infinity());
  const std::vector<seconds> screened{none, seconds(10), seconds(5), none};
  long long pruned = 0;
  detail::judging_order order(open, screened);
  std::vector<std::size_t> seen;
  for (auto i = order.next(none, pruned); i; i = order.next(none, pruned)) {
    seen.push_back(*i);
    order.took(seen.size() == 2 ? 3.0 : 1.0);
  }
  CHECK(seen == std::vector<std::size_t>{2, 0, 1, 3});
  CHECK(pruned == 0);
  // With the best found at 2.5 s, those whose bound cannot beat it are pruned on the way (the
  // third, then the fourth), their plans counted once; one handed back comes out next.
  detail::judging_order pruning(open, screened);
  const auto first = pruning.next(seconds(2.5), pruned);
  REQUIRE(first);
  CHECK(*first == 1);
  CHECK(pruned == 10);
  pruning.put_back(*first);
  std::vector<std::size_t> rest;
  for (auto i = pruning.next(seconds(2.5), pruned); i; i = pruning.next(seconds(2.5), pruned))
    rest.push_back(*i);
  CHECK(rest == std::vector<std::size_t>{1, 0});  // the one handed back first
  CHECK(pruned == 20);
  CHECK(std::all_of(pruning.handled().begin(), pruning.handled().end(),
                    [](std::uint8_t h) { return h == 1; }));
}

TEST_CASE("a space slow to build leaves screening a quarter of what is left of the budget") {
  // Building a large space takes seconds of its own (DeepSeek-V3's on 2048 devices about two).
  // A clock that starts at 6 s of a 10 s budget and advances 10 ms a reading: screening runs
  // to 7 s (a quarter of the 4 s left), about a hundred configurations, where counting the
  // quarter from the search's start would have stopped it after one.
  const transformer m = model("mixtral-8x7b");
  const weft::plan::cluster& c = *find_cluster("h100-sxm");
  job j;
  j.dp = 64;
  j.global_batch_size = 256;
  configuration_search_options o;
  o.budget_s = 10;
  configuration_search_result out;
  out.devices = 64;
  const job base = with_megatron_forms(m, j);
  detail::configuration_pool pool =
      detail::open_configurations(m, base, c, o.space, base.batch(), out);
  REQUIRE(pool.open.size() > 200);
  double now = 6;
  detail::judge_configurations(m, c, o, pool, out, [&] { return now += 0.01; });
  CHECK(out.counts.screened > 50);
  CHECK(out.counts.screened < 110);
  CHECK(!out.top.empty());
  // Out of time, every configuration is accounted for once: pruned, judged or left.
  CHECK(!out.complete);
  const configuration_counts& n = out.counts;
  CHECK(n.considered == n.pruned_sizes + n.pruned_memory + n.pruned_bound + n.unexplored + n.plans);
}

TEST_CASE("the configuration search's errors name what is wrong") {
  const transformer m = model("gpt2");
  const cluster& a100 = *find_cluster("a100-80g");
  const auto fails = [&](const job& j, const cluster& c, const configuration_search_options& o,
                         const std::string& says) {
    try {
      (void)search_configurations(m, j, c, o);
      FAIL("no error; expected: " << says);
    } catch (const config_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(says) != std::string::npos, e.what());
    }
  };
  configuration_search_options o;
  o.budget_s = 0;
  fails(gpt2_job(), a100, o, "budget must be more than 0 s");
  o.budget_s = std::numeric_limits<double>::quiet_NaN();
  fails(gpt2_job(), a100, o, "budget must be more than 0 s");
  o = {};
  o.top = 0;
  fails(gpt2_job(), a100, o, "reports 1 to 1000 configurations");
  o = {};
  o.space.tp = 5;  // 12 heads do not split over 5
  fails(gpt2_job(), a100, o, "no configuration of 8 devices splits the model");
  // Without --devices and no global batch, the search keeps the job's batch: a micro-batch per
  // data-parallel rank of the job as given, 8 sequences; with --devices it must be given.
  o = {};
  job unbatched = gpt2_job();
  unbatched.global_batch_size = 0;
  CHECK(search_configurations(m, unbatched, a100, o).top.front().best.tried.batch() == 8);
  o.space.devices = 4;
  fails(unbatched, a100, o, "over --devices needs the job's --global-batch-size");
  // A micro-batch size given is kept as it is, a power of two or not.
  o = {};
  o.space.micro_batch_size = 2;
  o.space.max_micro_batch_size = 1;
  CHECK(search_configurations(m, gpt2_job(), a100, o).top.front().best.tried.micro_batch_size == 2);
  // The model states alone do not fit: 124M parameters' 2-byte weights are 248 MB.
  cluster tiny = a100;
  tiny.hbm_bytes = 100e6;
  fails(gpt2_job(), tiny, {}, "fits the model's states");
  // The states fit (124.4M parameters x 18 bytes, 2.24 GB, on one device) in what a 5 GB device
  // leaves a job, (5e9 - 1573 MiB) / 1.0924 = 3.07 GB; the step does not: the loss's fp32
  // logits alone are 4 x 8192 x 50257 bytes, 1.65 GB.
  tiny.hbm_bytes = 5e9;
  job one;
  one.global_batch_size = 1;
  one.seq = 8192;
  configuration_search_options single;
  single.space.devices = 1;
  fails(one, tiny, single,
        "no configuration of 1 device fits in the 2.9 GiB a job may allocate of the device's 4.7 "
        "GiB");
  // torchtitan runs no job with Transformer Engine's userbuffers: with tp kept above 1, none.
  o = {};
  o.space.tp = 2;
  o.space.runtime = runs_on::torchtitan;
  job overlapped = gpt2_job();
  overlapped.tp_comm_overlap = true;
  overlapped.tp = 2;
  overlapped.dp = 4;
  overlapped.sequence_parallel = true;
  fails(overlapped, a100, o, "--runtime torchtitan runs none of the configurations of 8 devices");
  o.space.pp = 1;  // without a pipeline, too (its one plan was once taken as every runtime's)
  fails(overlapped, a100, o, "--runtime torchtitan runs none of the configurations of 8 devices");
  o.space.runtime = runs_on::any;  // Megatron's code runs them
  const configuration_search_result any = search_configurations(m, overlapped, a100, o);
  REQUIRE(!any.top.empty());
  for (const configuration_choice& x : any.top)
    CHECK(runtime_for(x.best.tried).starts_with("Megatron-LM"));
}

TEST_CASE("a job's flags plan the same job again") {
  const transformer m = model("mixtral-8x7b");
  job j;
  j.tp = 2;
  j.pp = 4;
  j.dp = 8;
  j.ep = 4;
  j.micro_batch_size = 2;
  j.global_batch_size = 128;
  j.seq = 8192;
  j.policy = recompute::selective;
  j.recompute_modules = weft::perf::bit(weft::perf::recompute_module::core_attn) |
                        weft::perf::bit(weft::perf::recompute_module::moe_act);
  j.sequence_parallel = true;
  j.schedule = "interleaved";
  j.chunks = 2;
  j.overlap_grad_reduce = true;
  j.fp8 = fp8_recipe::hybrid;
  // The flags as a job file, keyed as the flags are without their dashes.
  const auto replayed = [](const job& x) {
    const std::vector<std::string> f = weft_flags(x);
    std::string text = "{";
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::string key = "\"" + f[i].substr(2) + "\": ";
      const bool value = i + 1 < f.size() && f[i + 1].rfind("--", 0) != 0;
      std::string v = value ? f[++i] : "true";
      if (key == "\"recompute-modules\": ")
        v = "[\"core_attn\", \"moe_act\"]";
      else if (value && v.find_first_not_of("0123456789") != std::string::npos)
        v = "\"" + v + "\"";
      text += (text.size() > 1 ? ", " : "") + key + v;
    }
    return read_job(text + "}", "flags.json").spec;
  };
  const job again = replayed(j);
  CHECK(again.tp == 2);
  CHECK(again.ep == 4);
  CHECK(again.chunks == 2);
  CHECK(again.recompute_modules == j.recompute_modules);
  CHECK(again.fp8 == fp8_recipe::hybrid);
  const cluster& c = *find_cluster("h100-sxm");
  CHECK(estimate_job(m, again, c).step == estimate_job(m, j, c).step);
  // FP8 current scaling (Megatron's spelling) and userbuffers replay too, and change the step.
  job current = j;
  current.fp8_current_scaling = true;
  current.tp_comm_overlap = true;
  const seconds step = estimate_job(m, current, c).step;
  CHECK(estimate_job(m, replayed(current), c).step == step);
  CHECK(with_megatron_forms(m, replayed(current)).fp8_current_scaling);
  CHECK(replayed(current).tp_comm_overlap);
  job delayed = current;
  delayed.fp8_current_scaling = false;
  CHECK(step > estimate_job(m, delayed, c).step);  // the amax reads
  // Megatron's arguments for a schedule it runs; none for one it does not.
  const auto a = megatron_arguments(j);
  REQUIRE(a);
  const std::string s = joined(*a);
  CHECK(s.find("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4") == 0);
  CHECK(s.find("--num-virtual-stages-per-pipeline-rank 2") != std::string::npos);
  CHECK(s.find("--recompute-granularity selective") != std::string::npos);
  CHECK(s.find("--use-distributed-optimizer") != std::string::npos);
  // Megatron's interleaved schedule overlaps its transfers unless told (arguments.py:
  // --no-overlap-p2p-communication, overlap_p2p_comm on by default).
  CHECK(s.find("--no-overlap-p2p-communication") != std::string::npos);
  CHECK(s.find(" --overlap-p2p-communication") == std::string::npos);
  job overlapped = j;
  overlapped.runtime = pipeline_runtime::megatron;
  overlapped.overlap_p2p_comm = true;
  CHECK(joined(*megatron_arguments(overlapped)).find("overlap-p2p-communication") ==
        std::string::npos);
  j.schedule = "zb-v";
  CHECK(!megatron_arguments(j));
  CHECK(runtime_for(j).find("PyTorch") == 0);
  j.schedule = "dualpipev";  // torchtitan runs it too (PyTorch's ScheduleDualPipeV) — but not
                             // the job's recomputation by modules, which it does not have
  CHECK(runtime_for(j) == "DeepSeek's DualPipe (DualPipeV)");
  CHECK(!runs(j, runs_on::torchtitan));
  CHECK(not_run_because(j, runs_on::torchtitan).find("no selective recomputation by modules") !=
        std::string::npos);
  job whole = j;  // torchtitan's own selective forms: per op, or every N-th layer whole
  whole.policy = recompute::none;
  CHECK(runtime_for(whole) == "DeepSeek's DualPipe (DualPipeV), or torchtitan's ScheduleDualPipeV");
  CHECK(runs(whole, runs_on::torchtitan));
  whole.policy = recompute::selective;
  whole.recompute_ops = true;
  CHECK(runs(whole, runs_on::torchtitan));
  // A pipeline of Megatron's schedules: Megatron-LM's alone, not PyTorch's runtime; another
  // schedule the model's own recomputation on PyTorch's runtime, not torchtitan's.
  job piped = j;
  piped.schedule = "1f1b";
  CHECK(runtime_for(piped) ==
        "Megatron-LM (priced as PyTorch's runtime issues transfers; --runtime megatron prices "
        "Megatron's)");
  piped.policy = recompute::none;
  CHECK(runtime_for(piped).find("PyTorch's pipeline runtime, or Megatron-LM") == 0);
  piped.policy = recompute::selective;
  piped.schedule = "zb-v";
  CHECK(runtime_for(piped).find("the model recomputing its modules itself (torchtitan does "
                                "not)") != std::string::npos);
  j.schedule = "dualpipe";
  CHECK(runtime_for(j) == "DeepSeek's DualPipe");
  CHECK(!runs(j, runs_on::torchtitan));
  // One rank: 1F1B is any runtime's loop; DualPipeV's two chunks, paired, are still its own
  // (they were once called "no pipeline", as if Megatron ran them).
  j.pp = 1;
  j.schedule = "1f1b";
  CHECK(runtime_for(j) == "Megatron-LM (no pipeline)");  // recomputing by modules
  job per_op = j;  // torchtitan's per-op checkpointing: a trainer of its own, torchtitan's
  per_op.recompute_ops = true;
  CHECK(runtime_for(per_op) == "torchtitan, or a PyTorch trainer of its own (no pipeline)");
  j.policy = recompute::none;
  CHECK(runtime_for(j) == "Megatron-LM or torchtitan (no pipeline)");
  j.schedule = "dualpipev";
  CHECK(runtime_for(j) == "DeepSeek's DualPipe (DualPipeV), or torchtitan's ScheduleDualPipeV");
  j.schedule = "zb-v";
  CHECK(runtime_for(j).find("PyTorch") == 0);
}

TEST_CASE("Megatron's uniform full recomputation of every layer is weft's full") {
  const transformer m = model("gpt2");
  job j = gpt2_job();
  j.policy = recompute::full;
  j.recompute_method = "uniform";
  j.recompute_num_layers = 1;
  job plain = gpt2_job();
  plain.policy = recompute::full;
  const cluster& c = *find_cluster("a100-80g");
  CHECK(estimate_job(m, j, c).step == estimate_job(m, plain, c).step);
  const auto refused = [&](job x, const std::string& says) {
    try {
      check_job(m, x);
      FAIL("accepted");
    } catch (const config_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(says) != std::string::npos, e.what());
    }
  };
  job block = j;
  block.recompute_method = "block";
  block.recompute_num_layers = 0;
  refused(block, "--recompute-method block recomputes the first");
  job many = j;
  many.recompute_num_layers = 2;
  refused(many, "--recompute-num-layers 2");
  job selective = j;
  selective.policy = recompute::selective;
  refused(selective, "need --recompute-granularity full");
}

TEST_CASE("a runtime's recommendations are plans it runs") {
  const transformer m = model("mixtral-8x7b");
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.tp = 2;
  j.pp = 4;
  j.dp = 4;
  j.ep = 4;
  j.global_batch_size = 64;
  j.sequence_parallel = true;
  const plan_search_result megatron = best_plan(m, j, c, {.runtime = runs_on::megatron});
  for (const plan_choice& x : megatron.judged) {
    CAPTURE(x.tried.schedule);
    CHECK((x.tried.schedule == "1f1b" || x.tried.schedule == "interleaved"));
    CHECK(megatron_runs(x.tried));
  }
  const plan_search_result titan = best_plan(m, j, c, {.runtime = runs_on::torchtitan});
  for (const plan_choice& x : titan.judged) CHECK(x.tried.schedule != "dualpipe");
  // The job as asked must run there.
  job zbv = j;
  zbv.schedule = "zb-v";
  CHECK_THROWS_WITH_AS(best_plan(m, zbv, c, {.runtime = runs_on::megatron}),
                       doctest::Contains("--runtime megatron: it does not run --schedule zb-v"),
                       config_error);
  // Megatron's interleaved schedule: more than 2 pipeline ranks (or the p2p overlap), and
  // micro-batches a multiple of them (16 = 64 / (1 x dp 4) over pp 4: yes; pp 2: no).
  job inter = j;
  inter.schedule = "interleaved";
  inter.chunks = 2;
  CHECK(megatron_runs(inter));
  inter.pp = 2;
  inter.dp = 8;
  CHECK(!megatron_runs(inter));
  inter.overlap_p2p_comm = true;
  CHECK(megatron_runs(inter));
  inter.pp = 4;
  inter.dp = 4;
  inter.global_batch_size = 4 * 6;  // 6 micro-batches over 4 ranks
  CHECK(!megatron_runs(inter));
  // The configuration search keeps to the runtime too.
  configuration_search_options o;
  o.budget_s = 600;
  o.top = 5;
  o.space.runtime = runs_on::megatron;
  o.space.max_micro_batch_size = 1;
  job g = gpt2_job();
  const configuration_search_result r =
      search_configurations(model("gpt2"), g, *find_cluster("a100-80g"), o);
  REQUIRE(!r.top.empty());
  for (const configuration_choice& x : r.top) CHECK(megatron_runs(x.best.tried));
}

TEST_CASE("torchtitan recomputes selectively per op, never by Megatron-LM's modules") {
  // Llama 3.1 8B on 8 H100s at 2k tokens, selective recomputation as Megatron-LM runs it (the
  // core attention, by module): torchtitan has no such form. Asked of it, one error naming the
  // rule; searched under it, never recommended and never counted — its plan count kept apart
  // from the same pipeline's without it (it was once keyed by the pipeline and micro-batches).
  memory_bound setup(1);
  job asked = setup.base;
  asked.seq = 2048;
  asked.policy = recompute::selective;
  CHECK_THROWS_WITH_AS(best_plan(setup.m, asked, setup.c, {.runtime = runs_on::torchtitan}),
                       doctest::Contains("--runtime torchtitan: it has no selective "
                                         "recomputation by modules"),
                       config_error);
  CHECK(best_plan(setup.m, asked, setup.c, {.runtime = runs_on::any}).best);
  setup.o.top = 10;
  setup.o.space.runtime = runs_on::torchtitan;
  const configuration_search_result titan = search_configurations(setup.m, asked, setup.c, setup.o);
  REQUIRE(!titan.top.empty());
  for (const configuration_choice& x : titan.top) CHECK(!recomputes_by_module(x.best.tried));
  setup.o.space.policy = recompute::selective;
  CHECK_THROWS_WITH_AS(search_configurations(setup.m, asked, setup.c, setup.o),
                       doctest::Contains("--runtime torchtitan runs none of the configurations"),
                       config_error);
  CHECK_THROWS_WITH_AS(search_configurations(setup.m, asked, setup.c, setup.o),
                       doctest::Contains("selective recomputation by modules"), config_error);
  // What it considers: its none's and its full's, nothing of the selective form.
  long long forms = 0;
  for (const recompute policy : {recompute::none, recompute::full}) {
    setup.o.space.policy = policy;
    forms += search_configurations(setup.m, asked, setup.c, setup.o).counts.considered;
  }
  CHECK(titan.counts.considered == forms);
  setup.o.space.runtime = runs_on::any;
  setup.o.space.policy = recompute::selective;
  CHECK(search_configurations(setup.m, asked, setup.c, setup.o).counts.considered > 0);
  // Per op, torchtitan's own: it runs.
  asked.recompute_ops = true;
  asked.attention = weft::perf::attention_library::sdpa;
  CHECK(best_plan(setup.m, asked, setup.c, {.runtime = runs_on::torchtitan}).best);
}

TEST_CASE("the search keeps Megatron's combined 1F1B where it runs: interleaved, or no pipeline") {
  // With --overlap-moe-expert-parallel-comm only Megatron's interleaved schedule runs a
  // pipeline; a configuration whose chunks split no layers has no plan at all, and is passed
  // over (it once crashed the screening, which took the first of no plans).
  const transformer m = model("mixtral-8x7b");
  const cluster& c = *find_cluster("h100-sxm");
  job j;
  j.tp = 2;
  j.pp = 4;
  j.dp = 4;
  j.ep = 4;
  j.global_batch_size = 64;
  j.sequence_parallel = true;
  j.schedule = "interleaved";
  j.chunks = 2;
  j.runtime = pipeline_runtime::megatron;
  j.overlap_moe_ep_comm = true;
  // Its schedule on sizes Megatron refuses (6 micro-batches over 4 ranks): the refusal says
  // so, and which sizes it needs, rather than blaming the schedule it is on.
  job uneven = j;
  uneven.global_batch_size = 4 * 6;
  CHECK(not_run_because(uneven, runs_on::any)
            .find("micro-batches a multiple of them (1f1b without a pipeline), not --schedule "
                  "interleaved on these sizes") != std::string::npos);
  // fp16 is Megatron-LM's alone: a schedule it does not run is refused for both reasons.
  job half = j;
  half.overlap_moe_ep_comm = false;
  half.fp16 = true;
  half.schedule = "zb-v";
  CHECK(not_run_because(half, runs_on::any)
            .find("only Megatron-LM runs fp16 with its loss scaling (torchtitan's mixed precision "
                  "is bf16's), and not --schedule zb-v") == 0);
  configuration_search_options o;
  o.budget_s = 3;  // room for a loaded machine to judge some: the test is what it finds
  o.top = 5;
  o.space.runtime = runs_on::megatron;
  o.space.devices = 512;
  o.space.tp = 2;  // the schedules are the subject: fewer sizes, judged within the budget
  const configuration_search_result r = search_configurations(m, j, c, o);
  REQUIRE(!r.top.empty());
  for (const configuration_choice& x : r.top) {
    const job& t = x.best.tried;
    CHECK(t.overlap_moe_ep_comm);
    CHECK((t.pp == 1 ? t.schedule == "1f1b" : t.schedule == "interleaved"));
  }
}

TEST_CASE("the job as asked is judged first: the search never recommends less") {
  const transformer m = model("gpt2");
  const cluster& c = *find_cluster("a100-80g");
  job j = gpt2_job();
  j.pp = 2;
  j.dp = 4;
  j.schedule = "dualpipe";
  configuration_search_options o;
  o.budget_s = 1e-9;  // the job as asked, then one configuration
  const configuration_search_result r = search_configurations(m, j, c, o);
  REQUIRE(!r.top.empty());
  const plan_search_result asked = best_plan(m, j, c);
  CHECK(r.top.front().best.step <= asked.judged[*asked.best].step);
  CHECK(r.counts.screened >= 1);
  // Its gradients all-reduced whole (no sharding, which the search does not try of itself):
  // the job as asked is still among those judged.
  j.sharding = dp_sharding::no_shard;
  const configuration_search_result whole = search_configurations(m, j, c, o);
  REQUIRE(!whole.top.empty());
  const plan_search_result as_given = best_plan(m, j, c);
  CHECK(whole.top.front().best.step <= as_given.judged[*as_given.best].step);
  CHECK(whole.counts.considered > r.counts.considered);  // its sharding added to the space
  // Scaling's ZeRO-1 (--grad-all-reduce-fp32) is its trainer's one sharding: the search keeps
  // it, and refuses a space of another.
  j.sharding = dp_sharding::optim;
  j.grad_all_reduce_fp32 = true;
  o.budget_s = 2;
  const configuration_search_result scaling = search_configurations(m, j, c, o);
  REQUIRE(!scaling.top.empty());
  for (const configuration_choice& x : scaling.top) {
    CHECK(x.best.tried.sharding == dp_sharding::optim);
    CHECK(x.best.tried.grad_all_reduce_fp32);
    CHECK((x.best.tried.pp == 1 || x.best.tried.schedule == "1f1b"));  // its engine's one
  }
  CHECK(scaling.counts.considered < r.counts.considered);  // FSDP's configurations left out
  // Its rules as `weft plan` states them, before any configuration: another sharding asked
  // for, or its all-reduce overlapped.
  o.space.sharding = dp_sharding::optim_grads_params;
  CHECK_THROWS_WITH_AS(search_configurations(m, j, c, o),
                       doctest::Contains("needs the distributed optimizer's sharding "
                                         "(--data-parallel-sharding-strategy optim, the default), "
                                         "not optim_grads_params"),
                       weft::config_error);
  o.space.sharding.reset();
  o.space.cp = 2;  // a context-parallel size kept: Scaling has none
  CHECK_THROWS_WITH_AS(search_configurations(m, j, c, o),
                       doctest::Contains("neither context nor expert parallelism: it needs --cp 1 "
                                         "and --ep 1, not --cp 2 and --ep 1"),
                       weft::config_error);
  o.space.cp.reset();
  job unsharded = j;
  unsharded.sharding = dp_sharding::no_shard;
  CHECK_THROWS_WITH_AS(search_configurations(m, unsharded, c, o),
                       doctest::Contains("not no_shard (--no-distributed-optimizer)"),
                       weft::config_error);
  job overlapped = j;
  overlapped.overlap_grad_reduce = true;
  CHECK_THROWS_WITH_AS(search_configurations(m, overlapped, c, o),
                       doctest::Contains("does not combine with --overlap-grad-reduce"),
                       weft::config_error);
  // DeepSpeed's BF16 optimizer likewise: its own sharding, its pipeline engine's 1F1B, neither
  // context nor expert parallelism; another sharding asked for is refused before any.
  j.grad_all_reduce_fp32 = false;
  j.deepspeed_bf16 = true;
  const configuration_search_result deepspeed = search_configurations(m, j, c, o);
  REQUIRE(!deepspeed.top.empty());
  for (const configuration_choice& x : deepspeed.top) {
    CHECK(x.best.tried.sharding == dp_sharding::optim);
    CHECK(x.best.tried.deepspeed_bf16);
    CHECK((x.best.tried.pp == 1 || x.best.tried.schedule == "1f1b"));
    CHECK(x.best.tried.cp == 1);
  }
  o.space.sharding = dp_sharding::optim_grads_params;
  CHECK_THROWS_WITH_AS(search_configurations(m, j, c, o),
                       doctest::Contains("--deepspeed-bf16-optimizer is DeepSpeed's "
                                         "BF16_Optimizer: it shards the optimizer's states"),
                       weft::config_error);
}

TEST_CASE("progress is reported once a plan is judged, and once a configuration is estimated") {
  const transformer m = model("gpt2");
  const cluster& c = *find_cluster("a100-80g");
  job j = gpt2_job();
  j.pp = 2;
  j.dp = 4;
  std::size_t calls = 0, last_total = 0;
  const plan_search_result r =
      best_plan(m, j, c, {.progress = [&](std::size_t done, std::size_t total) {
                  CHECK(done == ++calls);
                  last_total = total;
                }});
  CHECK(calls == r.judged.size());
  CHECK(last_total == r.judged.size());
  long long estimated = 0;
  configuration_search_options o;
  o.budget_s = 600;
  o.space.max_micro_batch_size = 1;
  o.progress = [&](long long n) { estimated = n; };
  const configuration_search_result s = search_configurations(m, gpt2_job(), c, o);
  CHECK(estimated == s.counts.simulated);
  CHECK(estimated > 0);
}
