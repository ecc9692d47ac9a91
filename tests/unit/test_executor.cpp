// Executing schedules for real: every generator's loss and gradients equal the serial
// reference; repeated runs are bit-for-bit equal; failures and hangs are reported, not hung on.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <weft/exec/executor.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedules/dualpipe.hpp>
#include <weft/schedules/interleaved.hpp>
#include <weft/schedules/one_f_one_b.hpp>
#include <weft/schedules/zero_bubble_v.hpp>

using namespace weft;
using namespace weft::exec;

namespace {

struct case_ {
  const char* name;
  schedule s;
  int stages;
};

}  // namespace

TEST_CASE("every whole-block generator: loss and gradients equal the serial run") {
  const int P = 4, M = 8;
  const pipeline_params p{.ranks = P, .micro = M};
  for (const case_& c :
       {case_{"gpipe", gpipe(p), P}, case_{"1f1b", one_f_one_b(p), P}, case_{"zb-h1", zb_h1(p), P},
        case_{"interleaved", interleaved({.ranks = P, .micro = M, .chunks = 2}), 2 * P},
        case_{"zb-v", zb_v(p), 2 * P}, case_{"dualpipev", dualpipev(p), 2 * P},
        case_{"dualpipe", dualpipe(p), P},
        case_{"1f1b+transfers", one_f_one_b({.ranks = P, .micro = M, .transfers = true}), P}}) {
    CAPTURE(c.name);
    dense_model<float> model({.stages = c.stages, .micro = M, .seed = 11});
    dense_executor<float> ex(model);
    const run_result<float> run = ex.run(c.s);
    const float loss = model.serial_step();
    CHECK(run.loss == doctest::Approx(loss).epsilon(1e-5));
    CHECK(max_grad_rel_err(run, model) < 1e-5);
    CHECK(run.time.makespan > 0);
    // Again: bit for bit.
    const run_result<float> again = ex.run(c.s);
    CHECK(again.loss == run.loss);
    bool same = true;
    for (std::size_t s = 0; s < run.grads.size(); ++s)
      for (std::size_t l = 0; l < run.grads[s].size(); ++l)
        for (std::size_t k = 0; k < run.grads[s][l].size(); ++k)
          same = same && run.grads[s][l][k] == again.grads[s][l][k];
    CHECK(same);
  }
}

TEST_CASE("a schedule that does not fit the model is refused") {
  dense_model<float> model({.stages = 4, .micro = 4});
  dense_executor<float> ex(model);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 2})),
                       "weft: run: the schedule has 2 micro-batches, the model 4",
                       std::invalid_argument);
  CHECK_THROWS_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 4, .stages = stage_set::moe()})),
                  std::invalid_argument);
}

TEST_CASE("an op that throws stops the run and names the rank and the op") {
  dense_model<float> model({.stages = 4, .micro = 4});
  run_options opt;
  opt.before_op = [](int rank, const op& o) {
    if (rank == 2 && o.k == kind::block && o.ph == phase::B && o.mb == 1)
      throw std::runtime_error("out of memory");
  };
  dense_executor<float> ex(model, opt);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 4})),
                       "weft: run: rank 2, block/B mb=1 chunk=2 failed: out of memory", run_error);
}

TEST_CASE("a transfer that never completes is reported within the timeout, for every rank") {
  dense_model<float> model({.stages = 2, .micro = 2});
  run_options opt;
  opt.delay = rt::delay_model{link_model{.alpha = 3600, .beta = 0}};  // an hour per message
  opt.timeout = std::chrono::milliseconds(200);
  dense_executor<float> ex(model, opt);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ex.run(one_f_one_b({.ranks = 2, .micro = 2}));
    FAIL("the run should time out");
  } catch (const run_error& e) {
    const std::string what = e.what();
    CHECK(what.find("weft: run: not finished after 200 ms; waiting:") == 0);
    CHECK(what.find("rank 0: ") != std::string::npos);
    CHECK(what.find("rank 1: ") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

namespace {
// Two ranks, one micro-batch, transfers on one comm stream (lane 1) per rank. Rank 0 posts the
// receive of the gradient before the send of the activation (`recv_first`): each rank's comm
// stream then blocks on a receive whose send sits behind the other's blocked receive.
schedule one_comm_stream(bool recv_first) {
  const auto snd = send(F, mb{0}, lane{1});
  const auto rcv = recv(B, mb{0}, lane{1});
  return with_model(ranks(recv_first ? slots(block(F, mb{0}), rcv, snd, block(B, mb{0}))
                                     : slots(block(F, mb{0}), snd, rcv, block(B, mb{0})),
                          slots(recv(F, mb{0}, chunk{1}, lane{1}), block(F, mb{0}, chunk{1}),
                                block(B, mb{0}, chunk{1}), send(B, mb{0}, chunk{1}, lane{1}))),
                    model_desc{.ranks = 2, .micro = 1});
}
}  // namespace

TEST_CASE(
    "a schedule rule 4 rejects, run anyway, hangs where the checker said; repaired, it runs") {
  const report r = check(one_comm_stream(true));
  REQUIRE_FALSE(r.ok());
  CHECK(r.violations.front().code == rule::deadlock);
  CHECK(r.violations.front().subject == op(recv(B, mb{0}, lane{1})));

  dense_model<float> model({.stages = 2, .micro = 1});
  run_options opt;
  opt.timeout = std::chrono::milliseconds(300);
  {
    // Through the runner with the check bypassed: the in-process backend matches transfers FIFO
    // per channel as the checker does, so the run hangs exactly there, and the timeout says so.
    const program p = lower_unchecked(one_comm_stream(true));
    const auto t0 = std::chrono::steady_clock::now();
    try {
      dense_executor<float>(model, opt).run(p);
      FAIL("the run should hang and time out");
    } catch (const run_error& e) {
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(what.find("weft: run: not finished after 300 ms; waiting:") == 0);
      CHECK(what.find("rank 0: recv/B mb=0 lane=1 (started), waits for send/B mb=0 chunk=1 lane=1 "
                      "on rank 1") != std::string::npos);
      CHECK(what.find("rank 1: recv/F mb=0 chunk=1 lane=1 (started), waits for send/F mb=0 "
                      "lane=1 on rank 0") != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }
  CHECK(check(one_comm_stream(false)).ok());
  dense_model<float> reference({.stages = 2, .micro = 1});
  reference.serial_step();
  const run_result<float> ok = dense_executor<float>(model, opt).run(one_comm_stream(false));
  CHECK(max_grad_rel_err(ok, reference) < 1e-5);
}

TEST_CASE(
    "measured times: a transfer starts at its later end; the runtime's cost per unit is seen") {
  dense_model<float> model({.stages = 2, .micro = 4});
  run_options opt;
  opt.workers = 1;
  const run_result<float> quick =
      dense_executor<float>(model, opt).run(one_f_one_b({.ranks = 2, .micro = 4}));
  for (std::uint32_t i = 0; i < quick.prog.size(); ++i) {
    const std::uint32_t j = quick.prog.partner[i];
    if (!is_p2p(quick.prog.at(i).k) || j == program::none) continue;
    CHECK(quick.time.start[i] == quick.time.start[j]);  // one unit: both ends start together
    CHECK(quick.time.start[i] == std::max(quick.posted[i], quick.posted[j]));
  }
  // Work the runtime does for an op before it starts (here: before_op sleeping 3 ms) shows up as
  // the gap between two units on the one worker.
  opt.before_op = [](int, const op& o) {
    if (o.k == kind::block) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  };
  const run_result<float> slow =
      dense_executor<float>(model, opt).run(one_f_one_b({.ranks = 2, .micro = 4}));
  CHECK(slow.dispatch_gap >= 0.0025);
  CHECK(quick.dispatch_gap < slow.dispatch_gap);
}
