// Executing MoE sub-stage schedules: every generator, with and without fb-overlap, on one and on
// two expert-parallel replicas, gives the serial reference's loss and gradients; repeated runs
// are bit-for-bit equal; schedules that do not fit the model are refused by name.
#include <doctest/doctest.h>

#include <string>

#include <weft/exec/moe_executor.hpp>
#include <weft/exec/optimizer.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/sim/calibrate.hpp>

using namespace weft;
using namespace weft::exec;

namespace {

struct case_ {
  std::string name;
  schedule s;
  int stages;
};

std::vector<case_> every_generator(int P, int M, int layers, overlap_options o) {
  const stage_set st = stage_set::moe_with_shared();
  const pipeline_params p{.ranks = P, .micro = M, .layers = layers, .stages = st, .overlap = o};
  return {{"gpipe", gpipe(p), P},
          {"1f1b", one_f_one_b(p), P},
          {"zb-h1", zb_h1(p), P},
          {"interleaved",
           interleaved({.ranks = P,
                        .micro = M,
                        .chunks = 2,
                        .layers = layers,
                        .stages = st,
                        .overlap = o,
                        .extra_warmup = o.pair_forward_backward}),
           2 * P},
          {"zb-v", zb_v(p), 2 * P},
          {"dualpipev", dualpipev(p), 2 * P},
          {"dualpipe", dualpipe(p), P}};
}

}  // namespace

TEST_CASE("every generator on MoE sub-stages, +- fb-overlap, 1 and 2 replicas: equals serial") {
  for (const int replicas : {1, 2})
    for (const bool fb : {false, true}) {
      const overlap_options o = fb ? overlap_options::all() : overlap_options::none();
      for (const case_& c : every_generator(2, 4, 2, o)) {
        const std::string what =
            c.name + (fb ? " +fb-overlap" : "") + ", replicas " + std::to_string(replicas);
        CAPTURE(what);
        moe_model<float> model(
            {.stages = c.stages, .layers = 2, .micro = 4, .replicas = replicas, .seed = 5});
        moe_executor<float> ex(model);
        const run_result<float> run = ex.run(c.s);
        const float loss = model.serial_step();
        CHECK(run.loss == doctest::Approx(loss).epsilon(1e-5));
        CHECK(max_grad_rel_err(run, model) < 1e-5);
        CHECK(same_bits(run, ex.run(c.s)));
      }
    }
}

TEST_CASE("in fp64 every generator equals serial to 1e-12: the order of sums is the only gap") {
  for (const case_& c : every_generator(2, 4, 2, overlap_options::all())) {
    CAPTURE(c.name);
    moe_model<double> model(
        {.stages = c.stages, .layers = 2, .micro = 4, .replicas = 2, .seed = 5});
    moe_executor<double> ex(model);
    const run_result<double> run = ex.run(c.s);
    const double loss = model.serial_step();
    CHECK(run.loss == doctest::Approx(loss).epsilon(1e-12));
    CHECK(max_grad_rel_err(run, model) < 1e-12);
  }
}

TEST_CASE("MoE layers without a shared expert") {
  const stage_set st = stage_set::moe();
  for (const bool fb : {false, true}) {
    const overlap_options o = fb ? overlap_options::all() : overlap_options::none();
    for (const schedule& s : {one_f_one_b({.ranks = 2, .micro = 4, .stages = st, .overlap = o}),
                              zb_h1({.ranks = 2, .micro = 4, .stages = st, .overlap = o})}) {
      moe_model<float> model(
          {.stages = 2, .shared_expert = false, .micro = 4, .replicas = 2, .seed = 7});
      moe_executor<float> ex(model);
      const run_result<float> run = ex.run(s);
      const float loss = model.serial_step();
      CHECK(run.loss == doctest::Approx(loss).epsilon(1e-5));
      CHECK(max_grad_rel_err(run, model) < 1e-5);
    }
  }
}

TEST_CASE("tokens really cross replicas: each replica's experts see the other's tokens") {
  moe_model<float> model({.stages = 2, .micro = 2, .replicas = 2, .seed = 9});
  moe_executor<float> ex(model);
  const run_result<float> run =
      ex.run(one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe_with_shared()}));
  model.serial_step();
  // Experts 0-1 live on replica 0, 2-3 on replica 1: all four got gradients, so every replica
  // received rows (each replica's copy of another's expert stays zero and adds nothing).
  for (const auto& stage : run.grads) {
    const std::size_t experts_from = stage[0].size() - 8;
    for (std::size_t k = experts_from; k < stage[0].size(); ++k) CHECK(stage[0][k].norm() > 0);
  }
}

TEST_CASE("a schedule or configuration that does not fit the MoE model is refused by name") {
  moe_model<float> model({.stages = 2, .micro = 4});
  moe_executor<float> ex(model);
  const stage_set moe = stage_set::moe_with_shared();
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 2, .micro = 4})),
                       "weft: run: the MoE model runs schedules of its sub-stages (attn, "
                       "dispatch, mlp, combine, shared)",
                       config_error);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 2, .micro = 2, .stages = moe})),
                       "weft: run: the schedule has 2 micro-batches, the model 4", config_error);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 2, .micro = 4, .layers = 3, .stages = moe})),
                       "weft: run: the schedule has 3 layers per chunk, the model 1", config_error);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 4, .stages = moe})),
                       "weft: run: the schedule's chunks do not carry the model's 2 stages",
                       config_error);
  CHECK_THROWS_WITH_AS(moe_model<float>({.experts = 6, .replicas = 4}),
                       "weft: moe model: replicas (expert parallelism) must divide experts",
                       config_error);
  CHECK_THROWS_WITH_AS(moe_model<float>({.experts = 2, .top_k = 3}),
                       "weft: moe model: top_k must be in [1, experts]", config_error);
}

TEST_CASE("all-to-alls on two comm lanes are two channels: each meets its group in its order") {
  // One combine on lane 3: it may now start before an earlier dispatch on lane 0 finished, on
  // one replica and not the other; matched by channel, every exchange still meets its own.
  moe_model<float> model({.stages = 2, .micro = 4, .replicas = 2, .seed = 3});
  moe_executor<float> ex(model);
  schedule s = one_f_one_b({.ranks = 2, .micro = 4, .stages = stage_set::moe_with_shared()});
  for (op& o : s.ops)
    if (o.k == kind::combine && o.ph == phase::F && o.mb == 1) o.lane = 3;
  const run_result<float> run = ex.run(s);
  CHECK(run.loss == doctest::Approx(model.serial_step()).epsilon(1e-5));
  CHECK(max_grad_rel_err(run, model) < 1e-5);
}

TEST_CASE("MoE faults: a throwing expert names its replica; a stuck all-to-all times out") {
  const stage_set moe = stage_set::moe_with_shared();
  {
    moe_model<float> model({.stages = 2, .micro = 2, .replicas = 2});
    run_options opt;
    opt.before_op = [](int rank, const op& o) {
      if (rank == 3 && o.k == kind::mlp && o.ph == phase::F && o.mb == 1)
        throw std::runtime_error("expert overflow");
    };
    moe_executor<float> ex(model, opt);
    CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 2, .micro = 2, .stages = moe})),
                         "weft: run: rank 3 (pipeline rank 1, replica 1), mlp/F mb=1 chunk=1 "
                         "failed: expert overflow",
                         run_error);
  }
  {
    moe_model<float> model({.stages = 2, .micro = 2, .replicas = 2});
    run_options opt;
    opt.delay = rt::delay_model{link_model{.alpha = seconds(3600)}};  // an hour per message
    opt.timeout = weft::seconds(0.2);
    moe_executor<float> ex(model, opt);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ex.run(one_f_one_b({.ranks = 2, .micro = 2, .stages = moe}));
      FAIL("the run should time out");
    } catch (const run_error& e) {
      const std::string what = e.what();
      CHECK(what.find("weft: run: not finished after 0.2 s; waiting:") == 0);
      for (const char* who : {"rank 0 (pipeline rank 0, replica 0): dispatch/F mb=0",
                              "rank 1 (pipeline rank 0, replica 1): dispatch/F mb=0"})
        CHECK(what.find(who) != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }
}

TEST_CASE("comm spans leave out the wait for late peers, end when the last party has it") {
  moe_model<float> model({.stages = 2, .micro = 2, .replicas = 2});
  run_options opt;
  const seconds alpha{0.005};
  opt.delay = rt::delay_model{link_model{.alpha = alpha}};
  moe_executor<float> ex(model, opt);
  const run_result<float> run =
      ex.run(one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe_with_shared()}));
  const program& p = run.prog;
  REQUIRE(run.comm_span.size() == p.size());
  const semantics g(p, {.replicas = 2});
  int transfers = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (stream_of(p.at(i).k) == stream_class::compute) {
      CHECK(run.comm_span[i] == seconds(0));
      continue;
    }
    CHECK(run.comm_span[i] >= 0.5 * alpha);  // every message crossed the link
    // From the last party's start (the unit's start) to the last party's finish: for a send,
    // its receive's, which the sender's own completion does not wait for.
    seconds last = run.time.finish[i];
    g.each_member(g.unit_of(i), [&](std::uint32_t y) {
      if (g.replica_of(y) == 0) last = std::max(last, run.time.finish[g.op_of(y)]);
    });
    CHECK(run.comm_span[i] >= last - run.time.start[i] - seconds(1e-12));
    if (p.at(i).k == kind::send) {
      ++transfers;
      CHECK(run.comm_span[i] >= run.time.duration_of(i));
    }
  }
  CHECK(transfers > 0);
  const cost_model c = calibrated(p, run.time, cost_model{}, run.comm_span);
  for (const kind k : {kind::combine, kind::send})
    for (const phase ph : {phase::F, phase::B}) {
      CHECK(c.of(k, ph) >= 0.5 * alpha);
      CHECK(c.of(k, ph) < 4 * alpha);
    }
  CHECK(c.of(kind::dispatch, phase::F) >= 1.5 * alpha);  // counts, then rows
  CHECK(c.of(kind::attn, phase::F) > seconds(0));
}

TEST_CASE("sgd_step moves every parameter against its gradient, and training lowers the loss") {
  moe_model<float> model({.stages = 2, .micro = 2, .replicas = 2, .seed = 3});
  const moe_model<float> before = model;
  moe_executor<float> ex(model);
  const schedule s = one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe_with_shared()});
  const run_result<float> first = ex.run(s);
  sgd_step(model, first, 0.01f);
  for (std::size_t st = 0; st < model.stages.size(); ++st)
    for (std::size_t l = 0; l < model.stages[st].size(); ++l) {
      std::vector<nn::matrix<float>> was, now;
      auto old_layer = before.stages[st][l];
      old_layer.each_param([&](nn::param<float>& p) { was.push_back(p.value); });
      model.stages[st][l].each_param([&](nn::param<float>& p) { now.push_back(p.value); });
      for (std::size_t k = 0; k < was.size(); ++k)
        CHECK((now[k] - (was[k] - 0.01f * first.grads[st][l][k])).norm() <= 1e-6f * was[k].norm());
    }
  CHECK(ex.run(s).loss < first.loss);
}
