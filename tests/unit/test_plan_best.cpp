// The best plan for a job: the layers balanced over the stages (against a brute force), the
// layout written in Megatron's grammar, and the search over schedules, chunks and layouts that
// keeps to the devices' memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <weft/plan/best.hpp>
#include <weft/plan/fits.hpp>
#include "plan_fixtures.hpp"

using namespace weft::plan;

namespace {

/// The least costliest stage over every way to cut `cost` into `stages` non-empty runs.
double brute_force(const std::vector<double>& cost, int stages) {
  const std::size_t n = cost.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> cut(static_cast<std::size_t>(stages) + 1, 0);
  const auto go = [&](auto& self, std::size_t s, std::size_t from) -> void {
    if (s == static_cast<std::size_t>(stages)) {
      if (from != n) return;
      double worst = 0;
      for (std::size_t k = 0; k < s; ++k) {
        double sum = 0;
        for (std::size_t i = cut[k]; i < cut[k + 1]; ++i) sum += cost[i];
        worst = std::max(worst, sum);
      }
      best = std::min(best, worst);
      return;
    }
    for (std::size_t to = from + 1; to <= n; ++to) {
      cut[s + 1] = to;
      self(self, s + 1, to);
    }
  };
  go(go, 0, 0);
  return best;
}

double costliest(const std::vector<double>& cost, const std::vector<std::size_t>& begin) {
  double worst = 0;
  for (std::size_t s = 0; s + 1 < begin.size(); ++s) {
    double sum = 0;
    for (std::size_t i = begin[s]; i < begin[s + 1]; ++i) sum += cost[i];
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace

TEST_CASE("stages balanced: the costliest as cheap as any cut can make it") {
  // Eight layers of 1 and a head of 3 on 4 stages: the head alone, the layers 3, 3 and 2.
  const std::vector<double> eight{1, 1, 1, 1, 1, 1, 1, 1, 3};
  CHECK(detail::min_max_partition(eight, 4) == std::vector<std::size_t>{0, 3, 6, 8, 9});
  // One stage holds everything; as many stages as pieces, one each.
  CHECK(detail::min_max_partition(eight, 1) == std::vector<std::size_t>{0, 9});
  CHECK(detail::min_max_partition(eight, 9) ==
        std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // A heavy piece first: the greedy cut needs only 2 stages at its cap; the rest are split off
  // the stage of the most pieces, every stage still holding one.
  const std::vector<double> heavy{10, 1, 1, 1, 1};
  const std::vector<std::size_t> b = detail::min_max_partition(heavy, 4);
  REQUIRE(b.size() == 5);
  CHECK(costliest(heavy, b) == 10);
  for (std::size_t s = 0; s + 1 < b.size(); ++s) CHECK(b[s] < b[s + 1]);

  std::mt19937 rng(7);
  std::uniform_real_distribution<double> piece(0.0, 10.0);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> cost(static_cast<std::size_t>(1 + trial % 9));
    for (double& c : cost) c = trial % 5 == 0 ? std::floor(piece(rng)) : piece(rng);
    const int stages = 1 + trial % static_cast<int>(cost.size());
    const std::vector<std::size_t> got = detail::min_max_partition(cost, stages);
    REQUIRE(got.size() == static_cast<std::size_t>(stages) + 1);
    CHECK(got.front() == 0);
    CHECK(got.back() == cost.size());
    for (std::size_t s = 0; s + 1 < got.size(); ++s) CHECK(got[s] < got[s + 1]);
    CHECK(costliest(cost, got) == doctest::Approx(brute_force(cost, stages)).epsilon(1e-9));
  }

  CHECK_THROWS_WITH_AS(detail::min_max_partition(eight, 0),
                       "min_max_partition: 9 pieces do not fill 0 stage(s)", weft::config_error);
  CHECK_THROWS_WITH_AS(detail::min_max_partition(eight, 10),
                       "min_max_partition: 9 pieces do not fill 10 stage(s)", weft::config_error);
  CHECK_THROWS_WITH_AS(detail::min_max_partition({1, std::nan(""), 1}, 2),
                       "min_max_partition: a piece's cost is not finite", weft::config_error);
  CHECK_THROWS_AS(detail::min_max_partition({1, -1}, 1), weft::config_error);
}

TEST_CASE("a layout in Megatron's grammar: equal stages in a row written once") {
  const std::string text = detail::layout_text({"Et*3", "t*4", "t*4", "t*4", "t*2mL"});
  CHECK(text == "Et*3|(t*4|)*3,t*2mL");
  const pipeline_layout l = parse_pipeline_layout(text, 5, 17, 1);
  REQUIRE(l.stages.size() == 5);
  CHECK(l.stages[0].layers == 3);
  CHECK(l.stages[3].layers == 4);
  CHECK(l.stages[4].layers == 2);
  CHECK(l.stages[4].mtp == 1);
  CHECK(detail::layout_text({"Et", "t", "t", "tL"}) == "Et|(t|)*2,tL");
  // The last stage stands alone even when it equals the one before it.
  CHECK(detail::layout_text({"Et", "t", "t"}) == "Et|t|t");
  CHECK(detail::layout_text({"EtL"}) == "EtL");
}

TEST_CASE("a balanced layout reads back: every stage count, the MTP layers with the loss") {
  // Seven layers and two MTP layers: eight pieces (the MTP layers ride with the head, as Megatron
  // keeps them in the last virtual stage), costs rising and falling.
  detail::model_pieces p;
  p.layers = 7;
  p.mtp = 2;
  p.cost = {3, 1, 4, 1, 5, 9, 2, 6};
  for (int S = 1; S <= 8; ++S) {
    CAPTURE(S);
    const std::string text = detail::balanced_layout(p, S);
    const pipeline_layout l = parse_pipeline_layout(text, S, 7, 2);
    REQUIRE(static_cast<int>(l.stages.size()) == S);
    CHECK(l.stages.back().mtp == 2);
    CHECK(l.stages.back().loss);
    for (int s = 0; s < S; ++s)
      CHECK(l.stages[static_cast<std::size_t>(s)].layers + (s == S - 1) > 0);
  }
  // Two stages: cut after the fourth piece, 9 | 22; after the fifth, 14 | 17; after the sixth,
  // 23 | 8. The fifth is best: five layers, then two with the MTP layers and the head.
  CHECK(detail::balanced_layout(p, 2) == "Et*5|t*2m*2L");
}

TEST_CASE("the best plan: every schedule, chunk count and layout, the fastest that fits") {
  // Five layers of the tiny model (plan_fixtures.hpp): a layer's forward is 8Th^2 + 16Th^2 +
  // 2Tsh FLOPs, the head's 2ThV, under a tenth of a layer's.
  const transformer m = testing::tiny_dense(5);
  cluster c = testing::ideal_cluster();
  job j;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 4;

  // Five layers do not split evenly over 2 ranks: the job as given is refused, and the layout
  // balanced by cost puts 3 layers with the embedding first and 2 with the head (a tenth of a
  // layer) last.
  CHECK(detail::balanced_layout(m, j, c, 2) == "Et*3|t*2L");
  const plan_search_result r = best_plan(m, j, c);
  REQUIRE(!r.judged.empty());
  CHECK(r.judged.front().tried.schedule == "1f1b");
  CHECK(!r.judged.front().ran);
  CHECK(r.judged.front().why.find("5 layers do not split evenly over 2 pipeline ranks") !=
        std::string::npos);
  REQUIRE(r.best);
  REQUIRE(r.best_estimate);
  const plan_choice& best = r.judged[*r.best];
  CHECK(best.fits);
  CHECK(best.step == r.best_estimate->step);
  int ran = 0;
  for (const plan_choice& x : r.judged) {
    if (!x.ran) continue;
    ++ran;
    if (x.fits) CHECK(best.step <= x.step);
  }
  CHECK(ran >= 8);
  for (const weft::generator_info& g : weft::generators) {  // every generator ran, balanced
    CAPTURE(g.name);
    CHECK(std::any_of(r.judged.begin(), r.judged.end(), [&](const plan_choice& x) {
      return x.ran && x.tried.schedule == g.name && !x.tried.layout.empty();
    }));
  }
  bool balanced_1f1b = false;
  for (const plan_choice& x : r.judged)
    balanced_1f1b =
        balanced_1f1b || (x.tried.schedule == "1f1b" && x.tried.layout == "Et*3|t*2L" && x.ran);
  CHECK(balanced_1f1b);

  // Memory decides: with room for only the leaner plans, the fastest of those wins; with room
  // for none, the leanest, marked as not fitting. Room is what the device leaves a job once the
  // CUDA context and the allocator's reserve are counted, so each device below is sized as
  // nvidia-smi would show a job of the bytes it is to hold.
  double least = std::numeric_limits<double>::infinity(), most = 0;
  for (const plan_choice& x : r.judged)
    if (x.ran) {
      least = std::min(least, x.peak_memory_bytes);
      most = std::max(most, x.peak_memory_bytes);
    }
  REQUIRE(least < most);
  c.hbm_bytes = as_nvidia_smi((least + most) / 2);
  const plan_search_result tight = best_plan(m, j, c);
  const plan_choice& lean = tight.judged[*tight.best];
  CHECK(lean.fits);
  CHECK(lean.peak_memory_bytes <= (least + most) / 2);
  for (const plan_choice& x : tight.judged)
    if (x.ran && x.fits) CHECK(lean.step <= x.step);
  // Every plan's peak is below the device's bytes, yet none fits: the context and the
  // allocator's reserve take the rest.
  c.hbm_bytes = as_nvidia_smi(least) * (1 - 1e-6);
  REQUIRE(most < c.hbm_bytes);
  const plan_search_result crowded = best_plan(m, j, c);
  CHECK(!crowded.judged[*crowded.best].fits);
  CHECK(crowded.judged[*crowded.best].peak_memory_bytes == least);
  c.hbm_bytes = least / 2;
  const plan_search_result none = best_plan(m, j, c);
  CHECK(!none.judged[*none.best].fits);
  CHECK(none.judged[*none.best].peak_memory_bytes == least);

  // Sizes no schedule changes: the job's own error.
  job bad = j;
  bad.tp = 3;
  CHECK_THROWS_WITH_AS(best_plan(m, bad, c),
                       "the model's 8 attention heads do not split over --tp 3",
                       weft::config_error);
  CHECK_THROWS_AS(best_plan(m, j, c, {.max_chunks = 0}), weft::config_error);
  // Zero sizes are refused by name before any plan is costed (pp 0 divided by zero; tp 0 was
  // refused by an internal function's name), and so are a cluster's facts out of range.
  bad.tp = 0;
  CHECK_THROWS_WITH_AS(best_plan(m, bad, c), "--tp must be at least 1, got 0", weft::config_error);
  bad.tp = 1;
  bad.pp = 0;
  CHECK_THROWS_WITH_AS(best_plan(m, bad, c), "--pp must be at least 1, got 0", weft::config_error);
  CHECK_THROWS_WITH_AS(detail::balanced_layout(m, bad, c, 2), "--pp must be at least 1, got 0",
                       weft::config_error);
  cluster slow = c;
  slow.device.efficiency = 1e-300;
  CHECK_THROWS_WITH_AS(best_plan(m, j, slow),
                       "cluster 'a100-80g': matmul_efficiency must be in [0.01, 1], "
                       "got 1e-300",
                       weft::config_error);
}

TEST_CASE("rule 5 in bytes: a rank's model states and live activations against its device") {
  // Two layers on pp 2, 1F1B, 2 micro-batches (the estimate's test in test_plan_model.cpp):
  // rank 0 holds both micro-batches' activations after its second forward, rank 1 one at a time.
  const transformer m = testing::tiny_dense(2);
  cluster c = testing::ideal_cluster();
  job j;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 2;
  const estimate e = estimate_job(m, j, c);
  const double states = 18 * e.stages[0].params, act = e.stages[0].activation_bytes;
  REQUIRE(e.states_per_rank.size() == 2);
  CHECK(e.states_per_rank[0] == doctest::Approx(states));
  CHECK(e.memory_per_rank[0] == doctest::Approx(states + 2 * act));

  CHECK(!first_overrun(e, states + 2 * act + 1));  // everything fits
  // Room for one micro-batch: the second forward on rank 0 goes over.
  const std::optional<memory_overrun> o = first_overrun(e, states + 1.5 * act);
  REQUIRE(o);
  CHECK(o->rank == 0);
  CHECK(e.sched.ops[o->index].mb == 1);
  CHECK(e.sched.ops[o->index].ph == weft::phase::F);
  CHECK(o->units == 2);
  CHECK(o->states == doctest::Approx(states));
  CHECK(o->activations == doctest::Approx(2 * act));
  const std::string text = to_string(*o, e.sched);
  CHECK(text.starts_with("weft: rule 5 (memory): block/F mb=1 on rank 0, slot "));
  CHECK(text.find(" — model states " + gibibytes(states) +
                  " and 2 live (micro-batch, chunk) "
                  "units of activations, " +
                  gibibytes(2 * act) + " — over the " + gibibytes(states + 1.5 * act) +
                  " a job may allocate") != std::string::npos);
  // No room even for the states: the first forward already goes over.
  const std::optional<memory_overrun> first = first_overrun(e, states / 2);
  REQUIRE(first);
  CHECK(first->rank == 0);
  CHECK(e.sched.ops[first->index].mb == 0);
  CHECK(first->units == 1);
  CHECK(first->buffers == 0);
  CHECK(to_string(*first, e.sched).find("buffers") == std::string::npos);

  // PyTorch's loss over whole fp32 logits needs two more of their size for a moment in the
  // backward: buffers, named apart from the model states.
  job eager = j;
  eager.eager_loss = true;
  eager.global_batch_size = 1;  // one micro-batch: rank 0 holds one unit
  const estimate l = estimate_job(m, eager, c);
  const std::size_t last = l.states_per_rank.size() - 1;
  REQUIRE(l.buffers_per_rank.size() == l.states_per_rank.size());
  CHECK(l.buffers_per_rank[0] == 0);
  CHECK(l.buffers_per_rank[last] > 0);
  CHECK(l.states_per_rank[last] - l.buffers_per_rank[last] ==
        doctest::Approx(e.states_per_rank[last]));
  // Room for rank 0's peak only: the last rank, with the loss, goes over.
  REQUIRE(l.memory_per_rank[last] > l.memory_per_rank[0]);
  const std::optional<memory_overrun> on_last = first_overrun(l, l.memory_per_rank[0]);
  REQUIRE(on_last);
  CHECK(on_last->rank == static_cast<int>(last));
  CHECK(on_last->buffers == doctest::Approx(l.buffers_per_rank[last]));
  CHECK(on_last->states == doctest::Approx(e.states_per_rank[last]));
  CHECK(on_last->needs() > l.memory_per_rank[0]);  // the buffers count toward the cap
  CHECK(to_string(*on_last, l.sched)
            .find(" — model states " + gibibytes(on_last->states) + ", buffers " +
                  gibibytes(on_last->buffers) + " and ") != std::string::npos);
}

TEST_CASE("a search's pipelines, made once, estimate as pipelines made afresh") {
  // Every plan of a 4-rank job, with Megatron's transfers and without, estimated with a cache
  // the plans share and without: the same step and memory, each shape made once.
  const transformer m = testing::tiny_dense(8);
  const cluster c = testing::ideal_cluster();
  job j;
  j.pp = 4;
  j.seq = 1024;
  j.global_batch_size = 16;
  program_cache programs;
  const estimate_options cached{.programs = &programs};
  std::size_t ran = 0;
  for (const pipeline_runtime runtime : {pipeline_runtime::pytorch, pipeline_runtime::megatron}) {
    j.runtime = runtime;
    for (int pass = 0; pass < 2; ++pass)  // the second pass from the cache
      for (const plan_choice& x : best_plan(m, j, c).judged) {
        if (!x.ran) continue;
        CAPTURE(x.tried.schedule);
        CAPTURE(x.tried.chunks);
        const estimate fresh = estimate_job(m, x.tried, c);
        const estimate again = estimate_job(m, x.tried, c, cached);
        CHECK(again.step == fresh.step);
        CHECK(again.memory_per_rank == fresh.memory_per_rank);
        CHECK(again.prog.size() == fresh.prog.size());
        ran += pass == 0 ? 1 : 0;
      }
  }
  REQUIRE(ran > 10);
  // Layouts share a pipeline: fewer kept than plans run. Megatron's transfers are another.
  CHECK(programs.size() < ran);
  CHECK(programs.size() > 2);
  // Bounded: with room for two, the cache starts again at the third.
  program_cache small(2);
  weft::generator_args a;
  a.ranks = 4;
  a.micro = 4;
  for (const int micro : {4, 8, 12}) {
    a.micro = micro;
    CHECK(small.get("1f1b", a).second.size() > 0);
  }
  CHECK(small.size() == 1);
  a.micro = 12;
  const std::size_t before = small.get("1f1b", a).second.size();
  CHECK(small.size() == 1);          // found, not made again
  program_cache tight(512, before);  // room for one pipeline of that size in ops
  CHECK(tight.get("1f1b", a).second.size() == before);
  a.micro = 4;
  (void)tight.get("1f1b", a);
  CHECK(tight.size() == 1);
}

TEST_CASE("PyTorch's eager operations are not Megatron's to run: refused by the flag's name") {
  const transformer m = testing::tiny_dense(2);
  const cluster c = testing::ideal_cluster();
  job j;
  j.pp = 2;
  j.seq = 1024;
  j.global_batch_size = 2;
  j.eager_loss = true;
  CHECK_THROWS_WITH_AS(best_plan(m, j, c, {.runtime = runs_on::megatron}),
                       doctest::Contains("--eager-loss prices PyTorch's eager operations"),
                       weft::config_error);
  j.eager = true;
  CHECK_THROWS_WITH_AS(best_plan(m, j, c, {.runtime = runs_on::megatron}),
                       doctest::Contains("--eager prices PyTorch's eager operations"),
                       weft::config_error);
  // Scaling's ZeRO-1 is not Megatron's either.
  job scaling = j;
  scaling.eager = scaling.eager_loss = false;
  scaling.dp = 2;
  scaling.global_batch_size = 4;
  scaling.grad_all_reduce_fp32 = true;
  CHECK_THROWS_WITH_AS(best_plan(m, scaling, c, {.runtime = runs_on::megatron}),
                       doctest::Contains("--grad-all-reduce-fp32 prices Scaling's ZeRO-1"),
                       weft::config_error);
  job interleaved = scaling;  // Scaling's own rule, before whose code runs it
  interleaved.schedule = "interleaved";
  CHECK_THROWS_WITH_AS(best_plan(m, interleaved, c),
                       doctest::Contains("whose pipeline engine runs 1F1B: it needs --schedule "
                                         "1f1b, not --schedule interleaved"),
                       weft::config_error);
  const plan_search_result engine = best_plan(m, scaling, c);
  REQUIRE(engine.best);
  for (const plan_choice& x : engine.judged)  // its pipeline engine runs 1F1B alone
    CHECK(x.tried.schedule == "1f1b");
  scaling.tp = 2;  // with what only Megatron-LM runs
  scaling.sequence_parallel = scaling.tp_comm_overlap = true;
  CHECK_THROWS_WITH_AS(
      best_plan(m, scaling, c),
      doctest::Contains("--grad-all-reduce-fp32 prices Scaling's ZeRO-1, where "
                        "Megatron-LM's distributed optimizer reduce-scatters the "
                        "gradients: no Megatron-LM run, nor what only Megatron-LM's "
                        "code runs (tp-comm-overlap"),
      weft::config_error);
  // fp16 is Megatron-LM's alone of it and torchtitan, not of a trainer of its own: Scaling
  // scales the loss itself (core/optimizer/loss_scaler.py), and so does PyTorch's GradScaler.
  job scaled = scaling;
  scaled.tp = 1;
  scaled.sequence_parallel = scaled.tp_comm_overlap = false;
  scaled.fp16 = true;
  CHECK(runs(scaled, runs_on::any));
  CHECK(!runs(scaled, runs_on::torchtitan));
  CHECK(!runs(scaled, runs_on::megatron));
  const plan_search_result half = best_plan(m, scaled, c);
  REQUIRE(half.best);
  CHECK(half.judged[*half.best].ran);
  job eager_half = j;
  eager_half.fp16 = true;
  CHECK(best_plan(m, eager_half, c).best.has_value());
  // Each refusal names its rule, not the schedule (which every one of these runs).
  const auto refused = [&](const job& x, runs_on r, const std::string& says) {
    CHECK_MESSAGE(not_run_because(x, r).find(says) != std::string::npos, not_run_because(x, r));
    CHECK_THROWS_WITH_AS(best_plan(m, x, c, {.runtime = r}), doctest::Contains(says.c_str()),
                         weft::config_error);
  };
  refused(scaled, runs_on::torchtitan, "Scaling's trainer runs itself, not torchtitan");
  refused(eager_half, runs_on::torchtitan, "torchtitan trains in bf16");
  refused(eager_half, runs_on::megatron, "--eager prices PyTorch's eager operations");
  job megatron_half = eager_half;
  megatron_half.eager = megatron_half.eager_loss = false;
  refused(megatron_half, runs_on::torchtitan, "torchtitan trains in bf16");
  CHECK(runs(megatron_half, runs_on::megatron));
  // Without a runtime named, PyTorch's runs it.
  const plan_search_result r = best_plan(m, j, c);
  REQUIRE(r.best);
  CHECK(r.judged[*r.best].ran);
}
