// Executing schedules for real: every generator's loss and gradients equal the serial
// reference; repeated runs are bit-for-bit equal; failures and hangs are reported, not hung on.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <weft/exec/executor.hpp>
#include <weft/exec/measures.hpp>  // deprecated forwards: still compile
#include <weft/exec/prediction.hpp>
#include <weft/generators/controllable_memory.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/interleaved_zero_bubble.hpp>
#include <weft/generators/looped_bfs.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/rt/cpu_time.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/prediction.hpp>
#include <weft/sim/shared_workers.hpp>
#include <weft/sim/simulate.hpp>

using namespace weft;
using namespace weft::exec;

namespace {

struct case_ {
  const char* name;
  schedule s;
  int stages;
};

}  // namespace

namespace run_binding_checks {
// run_binding checks what it says: a kernel taking a run_call, and comm_steps returning a count.
struct no_kernels {};
struct kernel_call_only {  // a planning-time model, no runtime call record
  void operator()(kinds::block, phases::forward, weft::kernel_call&, int);
};
struct one_kernel {
  void operator()(kinds::block, phases::forward, exec::run_call&);
};
struct steps_of_nothing {
  void operator()(kinds::block, phases::forward, exec::run_call&);
  void comm_steps(const op&);
};
struct steps_counted {
  void operator()(kinds::block, phases::forward, exec::run_call&);
  int comm_steps(const op&);
};
static_assert(!exec::run_binding<int>);
static_assert(!exec::run_binding<no_kernels>);
static_assert(!exec::run_binding<kernel_call_only>);
static_assert(exec::run_binding<one_kernel>);
static_assert(!exec::run_binding<steps_of_nothing>);
static_assert(exec::run_binding<steps_counted>);
}  // namespace run_binding_checks

// The old spellings still name the same things for a release (CHANGELOG.md): a trainer written
// against them keeps compiling.
static_assert(std::is_same_v<weft::exec::run_measures, weft::run_measures>);
static_assert(std::is_same_v<decltype(&weft::exec::predicted_run), decltype(&weft::predicted_run)>);
static_assert(
    std::is_same_v<decltype(&weft::exec::co_run_slowdown), decltype(&weft::co_run_slowdown)>);

TEST_CASE("every whole-block generator: loss and gradients equal the serial run") {
  const int P = 4, M = 8;
  const pipeline_params p{.ranks = P, .micro = M};
  for (const case_& c :
       {case_{"gpipe", gpipe(p), P}, case_{"1f1b", one_f_one_b(p), P}, case_{"zb-h1", zb_h1(p), P},
        case_{"interleaved", interleaved({.ranks = P, .micro = M, .chunks = 2}), 2 * P},
        case_{"interleaved+nanopipe",
              interleaved({.ranks = P, .micro = M, .chunks = 2, .nanopipe = true}), 2 * P},
        case_{"looped-bfs", looped_bfs({.ranks = P, .micro = M, .chunks = 2}), 2 * P},
        case_{"interleaved-zb", interleaved_zero_bubble({.ranks = P, .micro = M, .chunks = 2}),
              2 * P},
        case_{"zb-v", zb_v(p), 2 * P}, case_{"v-half", v_half(p), 2 * P},
        case_{"v-min", v_min(p), 2 * P}, case_{"dualpipev", dualpipev(p), 2 * P},
        case_{"dualpipe", dualpipe(p), P},
        case_{"1f1b+transfers", one_f_one_b({.ranks = P, .micro = M, .transfers = true}), P}}) {
    CAPTURE(c.name);
    dense_model<float> model({.stages = c.stages, .micro = M, .seed = 11});
    dense_executor<float> ex(model);
    const run_result<float> run = ex.run(c.s);
    const float loss = model.serial_step();
    CHECK(run.loss == doctest::Approx(loss).epsilon(1e-5));
    CHECK(max_grad_rel_err(run, model) < 1e-5);
    CHECK(run.time.makespan > seconds(0));
    // Again: bit for bit.
    const run_result<float> again = ex.run(c.s);
    CHECK(same_bits(again, run));
  }
}

TEST_CASE("cross-DC options over two emulated sites: loss and gradients equal the serial run") {
  // pp 4 in two sites (ranks 0-1 | 2-3) 0.5 ms apart; Megatron's lowering, blocking, MindSpeed's
  // early receives on ping/pong streams, with the loss all-reduce for logging or not.
  const int P = 4, M = 8;
  exec::run_options opt;
  opt.delay = {.on = link_model::inter_node(),
               .site_ranks = 2,
               .far = link_model::with_bandwidth(seconds(5e-4), 1e9)};
  const p2p_options mindspeed{.overlap_p2p = true, .multi_stream = true};
  p2p_options mindspeed_async = mindspeed;
  mindspeed_async.async_log_allreduce = true;
  for (const case_& c :
       {case_{"interleaved, megatron",
              interleaved({.ranks = P, .micro = M, .chunks = 2, .p2p = {.megatron = true}}), 2 * P},
        case_{"interleaved, mindspeed, async loss all-reduce",
              interleaved({.ranks = P, .micro = M, .chunks = 2, .p2p = mindspeed_async}), 2 * P},
        case_{
            "interleaved, mindspeed, NanoPipe",
            interleaved({.ranks = P, .micro = M, .chunks = 2, .p2p = mindspeed, .nanopipe = true}),
            2 * P},
        case_{
            "1f1b, blocking, loss all-reduce",
            one_f_one_b({.ranks = P, .micro = M, .p2p = {.blocking = true, .log_allreduce = true}}),
            P},
        case_{"1f1b, mindspeed", one_f_one_b({.ranks = P, .micro = M, .p2p = mindspeed}), P},
        case_{"interleaved, early receives without their own streams",
              interleaved({.ranks = P, .micro = M, .chunks = 2, .p2p = {.overlap_p2p = true}}),
              2 * P}}) {
    CAPTURE(c.name);
    dense_model<float> model({.stages = c.stages, .micro = M, .seed = 13});
    dense_executor<float> ex(model, opt);
    const run_result<float> run = ex.run(c.s);
    const float loss = model.serial_step();
    CHECK(run.loss == loss);
    CHECK(max_grad_rel_err(run, model) == 0);
  }
}

TEST_CASE("fp64: the dense executor equals the serial run to 1e-12") {
  const int P = 4, M = 8;
  for (const schedule& s : {one_f_one_b({.ranks = P, .micro = M}),
                            zb_h1({.ranks = P, .micro = M, .transfers = true})}) {
    dense_model<double> model({.stages = P, .micro = M, .seed = 11});
    dense_executor<double> ex(model);
    const run_result<double> run = ex.run(s);
    const double loss = model.serial_step();
    CHECK(run.loss == doctest::Approx(loss).epsilon(1e-12));
    CHECK(max_grad_rel_err(run, model) < 1e-12);
  }
}

TEST_CASE("a schedule that does not fit the model is refused") {
  dense_model<float> model({.stages = 4, .micro = 4});
  dense_executor<float> ex(model);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 2})),
                       "weft: run: the schedule has 2 micro-batches, the model 4",
                       weft::config_error);
  CHECK_THROWS_AS(ex.run(one_f_one_b({.ranks = 4, .micro = 4, .stages = stage_set::moe()})),
                  weft::config_error);
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
  // The parts, for a program that handles the failure: weft's one run-time error.
  try {
    ex.run(one_f_one_b({.ranks = 4, .micro = 4}));
    FAIL("the run should fail");
  } catch (const weft::run_error& e) {
    CHECK(e.rank == 2);
    REQUIRE(e.at);
    CHECK(*e.at == make_op(kind::block, phase::B, 1, 2));
    REQUIRE(e.cause);
    CHECK_THROWS_WITH(std::rethrow_exception(e.cause), "out of memory");
  }
}

TEST_CASE("a transfer that never completes is reported within the timeout, for every rank") {
  dense_model<float> model({.stages = 2, .micro = 2});
  run_options opt;
  opt.delay = rt::delay_model{link_model{.alpha = seconds(3600)}};  // an hour per message
  opt.timeout = weft::seconds(0.2);
  dense_executor<float> ex(model, opt);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ex.run(one_f_one_b({.ranks = 2, .micro = 2}));
    FAIL("the run should time out");
  } catch (const run_error& e) {
    const std::string what = e.what();
    CHECK(what.find("weft: run: not finished after 0.2 s; waiting:") == 0);
    CHECK(what.find("rank 0: ") != std::string::npos);
    CHECK(what.find("rank 1: ") != std::string::npos);
    // The first rank named, at the op it is stuck at; a timeout has no cause.
    CHECK(e.rank == 0);
    CHECK(e.at);
    CHECK(!e.cause);
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
/// What a run of `p` that never finishes says when its 300 ms are up.
std::string time_out_of(const program& p, dense_model<float>& model) {
  run_options opt;
  opt.timeout = weft::seconds(0.3);
  try {
    dense_executor<float>(model, opt).run(p);
  } catch (const run_error& e) {
    return e.what();
  }
  return "finished";
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
  opt.timeout = weft::seconds(0.3);
  {
    // Through the runner with the check bypassed: the in-process backend matches transfers FIFO
    // per channel as the checker does, so the run hangs exactly there, and the timeout says so.
    const auto t0 = std::chrono::steady_clock::now();
    const std::string what = time_out_of(lower_unchecked(one_comm_stream(true)), model);
    CAPTURE(what);
    CHECK(what.find("weft: run: not finished after 0.3 s; waiting:") == 0);
    CHECK(what.find("rank 0: recv/B mb=0 lane=1 (started), waits for send/B mb=0 chunk=1 lane=1 "
                    "on rank 1") != std::string::npos);
    CHECK(what.find("rank 1: recv/F mb=0 chunk=1 lane=1 (started), waits for send/F mb=0 "
                    "lane=1 on rank 0") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }
  CHECK(check(one_comm_stream(false)).ok());
  dense_model<float> reference({.stages = 2, .micro = 1});
  reference.serial_step();
  const run_result<float> ok = dense_executor<float>(model, opt).run(one_comm_stream(false));
  CHECK(max_grad_rel_err(ok, reference) < 1e-5);
}

TEST_CASE("an unchecked backward before its forward waits for it: the time-out names it") {
  // One rank, B0 issued before F0 on the one compute stream: the program keeps B0's wait for
  // its forward, so the run hangs at B0 (it once ran B0 first: an Eigen assertion, or a null
  // dereference in a release build).
  const schedule s =
      with_model(ranks(slots(block(B, mb{0}), block(F, mb{0}))), model_desc{.ranks = 1});
  REQUIRE_FALSE(check(s).ok());
  const program p = lower_unchecked(s);
  dense_model<float> model({.stages = 1, .micro = 1});
  const std::string what = time_out_of(p, model);
  CAPTURE(what);
  CHECK(what.find("weft: run: not finished after 0.3 s; waiting:") == 0);
  CHECK(what.find("rank 0: block/B mb=0, waits for block/F mb=0") != std::string::npos);
  // The simulator sees the same: stuck at B0.
  const unit_timeline t = simulate(p, unit_cost_model::pipeline({.F = 1, .B = 2}));
  REQUIRE(t.deadlocked());
  CHECK(to_string(s.ops[t.blocked[0]]) == "block/B mb=0");
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
    if (!is_p2p(quick.prog.at(i).k) || j == weft::npos) continue;
    CHECK(quick.time.start[i] == quick.time.start[j]);  // one unit: both ends start together
    CHECK(quick.time.start[i] == std::max(quick.posted[i], quick.posted[j]));
  }
  // The runtime's other threads' CPU (the host's at least), charged to the transfers in flight.
  CHECK(quick.cpu.size() == quick.prog.size());
  CHECK(quick.comm_cores > 0);
  // Work the runtime does for an op before it starts (here: before_op sleeping 3 ms) shows up as
  // the gap between two units on the one worker.
  opt.before_op = [](int, const op& o) {
    if (o.k == kind::block) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  };
  const run_result<float> slow =
      dense_executor<float>(model, opt).run(one_f_one_b({.ranks = 2, .micro = 4}));
  CHECK(slow.dispatch_gap >= seconds(0.0025));
  CHECK(quick.dispatch_gap < slow.dispatch_gap);
}

namespace {
// A model that records the order its kernels ran in and can be told to fail once.
struct recording_model {
  std::vector<op> ran;
  std::mutex m;
  bool fail_next = false;
  int comm_steps(const op&) const { return 1; }
  template <class Phase>
  void operator()(kinds::block, Phase, run_call& c) {
    std::lock_guard lock(m);
    if (c.rank == 1 && std::exchange(fail_next, false)) throw std::runtime_error("injected");
    ran.push_back(c.op);
  }
  // Each transfer carries the number of the step that sent it: a receive that meets a send a
  // failed step left behind gets an old number.
  float step = 0;
  std::map<std::pair<int, std::string>, std::unique_ptr<float>> boxes;
  float& box(const run_call& c) {
    std::lock_guard lock(m);
    auto& b = boxes[{c.rank, to_string(c.op)}];
    if (!b) b = std::make_unique<float>(-1.0f);
    return *b;
  }
  template <class Phase>
  void operator()(kinds::send, Phase, run_call& c) {
    float& b = box(c);
    b = step;
    c.started = c.comm->isend({&b, 1}, c.peer, c.tag);
  }
  template <class Phase>
  void operator()(kinds::recv, Phase, run_call& c) {
    c.started = c.comm->irecv({&box(c), 1}, c.peer, c.tag);
  }
  bool received_all(float from_step) {
    for (const auto& [key, value] : boxes)
      if (key.second.rfind("recv", 0) == 0 && *value != from_step) return false;
    return true;
  }
};
}  // namespace

TEST_CASE("a runner runs its program step after step, and again after a failed step") {
  const schedule s = one_f_one_b({.ranks = 3, .micro = 4});
  runner r(lower(s), 1, {.timeout = std::chrono::seconds(5)});
  recording_model model;
  const timeline first = r.run(model);
  const std::vector<op> order = model.ran;
  const auto blocks =
      static_cast<std::size_t>(std::count_if(r.prog().source.ops.begin(), r.prog().source.ops.end(),
                                             [](const op& o) { return o.k == kind::block; }));
  REQUIRE(order.size() == blocks);
  CHECK(first.makespan > seconds(0));
  for (std::uint32_t i = 0; i < r.prog().size(); ++i) {
    CHECK(first.ran(i));
    CHECK(first.start[i] <= first.finish[i]);
    CHECK(first.finish[i] <= first.makespan);
  }
  CHECK(model.received_all(0));
  model.ran.clear();
  model.step = 1;
  model.fail_next = true;  // rank 1 fails once rank 0 has posted sends to it
  CHECK_THROWS_AS(r.run(model), run_error);
  model.ran.clear();
  model.step = 2;
  const timeline third = r.run(model);
  CHECK(model.ran.size() == blocks);
  CHECK(model.received_all(2));  // nothing the failed step posted reached this one
  CHECK(third.makespan > seconds(0));
  // Every wait of the semantics holds in the third run's timeline too.
  for (std::uint32_t x = 0; x < r.graph().ops(); ++x)
    r.graph().each_wait(x,
                        [&](std::uint32_t y, bool) { CHECK(third.finish[y] <= third.start[x]); });
}

namespace {
// Forward kernels sleep (wall time, no CPU), backward kernels spin (CPU): what a run's CPU
// times tell apart. A unit's CPU time also holds the runtime's own work around the kernel,
// which a sanitizer's build makes over a millisecond: the line between the two is a third of
// the unit's time, far from both.
constexpr auto unit_time = std::chrono::milliseconds(9);
const seconds cpu_line{0.003};
struct sleep_or_spin_model {
  int comm_steps(const op&) const { return 1; }
  template <class Phase>
  void operator()(kinds::block, Phase, run_call& c) {
    const auto until = std::chrono::steady_clock::now() + unit_time;
    if (c.op.ph == phase::F) {
      std::this_thread::sleep_until(until);
      return;
    }
    while (std::chrono::steady_clock::now() < until) {
    }
  }
};
}  // namespace

TEST_CASE("a run's measures: each unit's CPU time, and the CPU the rest of the runtime took") {
  runner r(lower(one_f_one_b({.ranks = 1, .micro = 2})), 1, {.workers = 1});
  sleep_or_spin_model model;
  run_measures m;
  const timeline t = r.run(model, &m);
  REQUIRE(m.cpu.size() == r.prog().size());
  for (std::uint32_t i = 0; i < r.prog().size(); ++i) {
    CAPTURE(to_string(r.prog().at(i)));
    CHECK(t.duration_of(i) >= seconds(0.009));
    CHECK(m.cpu[i] <= t.duration_of(i) + seconds(1e-3));  // a thread takes at most its time
    if (r.prog().at(i).ph == phase::F)
      CHECK(m.cpu[i] < cpu_line);  // asleep
    else
      CHECK(m.cpu[i] > cpu_line);  // spinning: most of its 9 ms, unless preempted long
  }
  CHECK(m.background_cores >= 0);
  CHECK(m.background_cores < 4);
  // The cores the simulation of this run gets: the process's, at least one.
  CHECK(rt::usable_cores() >= 1);
  CHECK(rt::usable_cores() <= std::max(1u, std::thread::hardware_concurrency()));
  CHECK(sim_options_from(r.prog(), t, m).cores == rt::usable_cores());
  CHECK(m.comm_cores == 0);  // no communication to charge it to
  // One worker: no two units of compute ever ran at once. Two, with two replicas: side by side.
  REQUIRE(m.co_run.size() == r.prog().size());
  for (const double f : m.co_run) CHECK(f == 0);
  runner two(lower(one_f_one_b({.ranks = 1, .micro = 2})), 2, {.workers = 2});
  run_measures m2;
  const timeline t2 = two.run(model, &m2);
  CHECK(*std::max_element(m2.co_run.begin(), m2.co_run.end()) > 0.5);
  // Every replica's copy measured (replica 0's first), and each given to the simulator as the
  // work of its own unit.
  const std::size_t n = two.prog().size();
  REQUIRE(m2.cpu.size() == 2 * n);
  REQUIRE(m2.co_run.size() == 2 * n);
  CHECK(m2.has_cpu(n));
  for (std::size_t i = 0; i < n; ++i) {
    if (two.prog().at(static_cast<std::uint32_t>(i)).ph != phase::F) continue;
    CHECK(m2.cpu[i] < cpu_line);      // asleep
    CHECK(m2.cpu[n + i] < cpu_line);  // asleep, in replica 1 too
  }
  const sim_options o = sim_options_from(two.prog(), t2, m2);
  REQUIRE(o.work.size() == 2 * n);
  for (std::size_t x = 0; x < 2 * n; ++x)
    CHECK(o.work[x] == m2.cpu[x] / (1 + o.co_run_slowdown * m2.co_run[x]));
}

TEST_CASE("the co-run slowdown read off a run, and the work calibrated without it") {
  // Forwards and backwards of one rank, half of them run alone (1 and 2 ms of CPU), half beside
  // another unit all along (1.5 and 3 ms): half as long again side by side.
  const program p = lower(one_f_one_b({.ranks = 1, .micro = 4}));
  run_measures m;
  timeline t;
  t.start.assign(p.size(), seconds(0));
  t.finish.assign(p.size(), seconds(1));
  m.posted.assign(t.start.begin(), t.start.end());
  m.cpu.assign(p.size(), seconds(0));
  m.co_run.assign(p.size(), 0.0);
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const bool beside = p.at(i).mb >= 2;
    m.co_run[i] = beside ? 1.0 : 0.0;
    m.cpu[i] = seconds((p.at(i).ph == phase::F ? 1e-3 : 2e-3) * (beside ? 1.5 : 1.0));
  }
  CHECK(co_run_slowdown(p, m) == doctest::Approx(0.5));
  const cost_model c = calibrated_from(p, t, m);
  CHECK(c.of(kind::block, phase::F).count() == doctest::Approx(1e-3));
  CHECK(c.of(kind::block, phase::B).count() == doctest::Approx(2e-3));
  CHECK(sim_options_from(p, t, m).co_run_slowdown == doctest::Approx(0.5));
  // Every unit side by side about equally (90 or 100 % of its time): the fit still finds it.
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    m.co_run[i] = p.at(i).mb >= 2 ? 1.0 : 0.9;
    m.cpu[i] = seconds((p.at(i).ph == phase::F ? 1e-3 : 2e-3) * (1 + 0.5 * m.co_run[i]));
  }
  CHECK(co_run_slowdown(p, m) == doctest::Approx(0.5).epsilon(1e-6));
  // Nothing side by side: nothing to read.
  std::fill(m.co_run.begin(), m.co_run.end(), 0.0);
  CHECK(co_run_slowdown(p, m) == 0);
}

TEST_CASE("a runner refuses a replica count below one") {
  CHECK_THROWS_WITH_AS(runner(lower(one_f_one_b({.ranks = 2, .micro = 2})), 0),
                       "weft: run: replicas must be >= 1", weft::config_error);
}

namespace {
// Blocks that take `each` of wall time (and count how many ran).
struct slow_blocks {
  std::chrono::milliseconds each;
  std::atomic<int> ran{0};
  int comm_steps(const op&) const { return 1; }
  template <class Phase>
  void operator()(kinds::block, Phase, run_call&) {
    std::this_thread::sleep_for(each);
    ++ran;
  }
};
}  // namespace

TEST_CASE("a chain the host runs itself still stops at the run's timeout") {
  // One rank, 60 blocks in a chain of 5 ms each (300 ms) against a timeout of 60 ms: the host,
  // which runs the first units itself in a worker's place, must hand the chain on and mind
  // the deadline, not finish the chain first.
  schedule chain(model_desc{.ranks = 1, .micro = 1, .layers = 60, .backward = false});
  chain.add_rank();
  for (int l = 0; l < 60; ++l) chain.add_slot(make_op(kind::block, phase::F, 0, 0, l));
  runner r(lower(chain), 1, {.workers = 1, .timeout = std::chrono::milliseconds(60)});
  for (int run = 0; run < 3; ++run) {  // the first run's worker may be awake: the host queues
    slow_blocks model{std::chrono::milliseconds(5)};
    CHECK_THROWS_WITH_AS(r.run(model), doctest::Contains("weft: run: not finished after 0.06 s"),
                         run_error);
    CHECK(model.ran < 60);
  }
}

TEST_CASE("one worker runs units in the order the shared-worker simulator gives them") {
  // Two micro-batches' chains on two lanes of one rank, issued interleaved: the runner's worker
  // keeps a stream whose next unit its completion readied, and the simulator says the same.
  schedule two(model_desc{.ranks = 1, .micro = 2, .layers = 4, .backward = false});
  two.add_rank();
  for (int l = 0; l < 4; ++l)
    for (int m = 0; m < 2; ++m) two.add_slot(make_op(kind::block, phase::F, m, 0, l, 0, m));
  const program p = lower(two);
  const unit_timeline predicted =
      simulate_on_workers(p, unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1}), 1);
  std::vector<std::uint32_t> by_start(p.size());
  for (std::uint32_t i = 0; i < p.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [&](std::uint32_t a, std::uint32_t b) {
    return predicted.start[a] < predicted.start[b];
  });
  for (int attempt = 0; attempt < 5; ++attempt) {
    recording_model model;
    runner r(p, 1, {.workers = 1});
    r.run(model);
    REQUIRE(model.ran.size() == p.size());
    for (std::size_t k = 0; k < p.size(); ++k) CHECK(model.ran[k] == p.at(by_start[k]));
  }
}

namespace {
// Kernels for blocks only: the transfers lowering adds are missing.
struct blocks_only_model {
  int ran = 0;
  int comm_steps(const op&) const { return 1; }
  template <class Phase>
  void operator()(kinds::block, Phase, run_call&) {
    ++ran;
  }
};
}  // namespace

TEST_CASE("a model without a kernel the lowered program uses is refused before anything runs") {
  runner r(lower(one_f_one_b({.ranks = 2, .micro = 2, .transfers = true})));
  blocks_only_model model;
  CHECK_THROWS_WITH_AS(r.run(model),
                       "weft: run: the model has no kernel for send F, which the program uses: add "
                       "`void operator()(weft::kinds::send, weft::phases::forward, "
                       "weft::exec::run_call&)`",
                       config_error);
  CHECK(model.ran == 0);
}
