// The runtime's streams and the runner that drives them against two baselines, in one run: a
// plain std::thread worker with a condition-variable queue, and TBB's flow graph. Per-op launch
// cost on one stream, the latency of an event handed from one stream to another, and a chain of
// dependent ops on 2 workers — as raw streams, and as a stream program the runner executes
// through the one semantics (what every executor pays per op).
#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <weft/exec/runner.hpp>
#include <weft/rt/stream.hpp>
#include <weft/rt/timer.hpp>
#include <weft/schedule/lower.hpp>

#if WEFT_BENCH_HAVE_TBB
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#endif

namespace {

constexpr int chain = 10000;

// --- weft streams -------------------------------------------------------------------------

/// Enqueue `chain` empty tasks on one stream, then wait: the cost of launching an op.
void streams_launch(benchmark::State& state) {
  weft::rt::worker_pool pool(2);
  weft::rt::stream s(pool);
  std::int64_t sink = 0;
  for (auto _ : state) {
    for (int i = 0; i < chain; ++i) s.enqueue([&sink] { ++sink; });
    s.synchronize();
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * chain);
}

/// A token passed back and forth between a compute and a comm stream through events: each
/// handoff is an event recorded on one stream and waited on by the other.
void streams_handoff(benchmark::State& state) {
  weft::rt::worker_pool pool(2);
  weft::rt::stream compute(pool), comm(pool);
  constexpr int handoffs = 1000;
  for (auto _ : state) {
    std::vector<weft::rt::event> e(handoffs);
    for (int i = 0; i < handoffs; ++i) {
      weft::rt::stream& s = i % 2 ? comm : compute;
      if (i) s.wait(e[static_cast<std::size_t>(i - 1)]);
      s.enqueue([] {});
      s.record(e[static_cast<std::size_t>(i)]);
    }
    e.back().wait();
  }
  state.SetItemsProcessed(state.iterations() * handoffs);
}

/// A chain of dependent ops alternating over 2 streams on 2 workers, all enqueued up front.
void streams_chain(benchmark::State& state) {
  weft::rt::worker_pool pool(2);
  weft::rt::stream a(pool), b(pool);
  std::int64_t value = 0;
  for (auto _ : state) {
    std::vector<weft::rt::event> e(chain / 100);
    // Blocks of 100 ops alternate between the streams; each block waits for the previous.
    for (int blk = 0; blk < chain / 100; ++blk) {
      weft::rt::stream& s = blk % 2 ? b : a;
      if (blk) s.wait(e[static_cast<std::size_t>(blk - 1)]);
      for (int i = 0; i < 100; ++i) s.enqueue([&value] { ++value; });
      s.record(e[static_cast<std::size_t>(blk)]);
    }
    e.back().wait();
  }
  benchmark::DoNotOptimize(value);
  state.SetItemsProcessed(state.iterations() * chain);
}

// --- the runner: a stream program, readiness from the one semantics -----------------------

/// One rank, forward only, `chain` layers of one block each: layer l needs layer l-1. Blocks of
/// 100 layers alternate between compute lanes 0 and 1, as `streams_chain` alternates streams.
const weft::program& chain_program(int length = chain) {
  static std::map<int, weft::program> programs;
  auto it = programs.find(length);
  if (it == programs.end()) {
    weft::schedule s(weft::model_desc{.ranks = 1, .micro = 1, .layers = length, .backward = false});
    s.add_rank();
    for (int l = 0; l < length; ++l)
      s.add_slot(weft::make_op(weft::kind::block, weft::phase::F, 0, 0, l, 0, l / 100 % 2));
    it = programs.emplace(length, weft::lower(s)).first;
  }
  return it->second;
}

struct empty_kernels {
  std::int64_t* sink;
  int comm_steps(const weft::op&) const { return 1; }
  void operator()(weft::kinds::block, weft::phases::forward, weft::exec::run_call&) { ++*sink; }
};

weft::exec::run_options chain_options() {
  weft::exec::run_options opt;
  opt.workers = 2;
  opt.comm_workers = 0;
  return opt;
}

/// A runner built once, run step after step (what a trainer does): the per-op cost.
void runner_chain(benchmark::State& state) {
  std::int64_t sink = 0;
  empty_kernels k{&sink};
  const auto length = static_cast<int>(state.range(0));
  weft::exec::runner r(chain_program(length), 1, chain_options());
  for (auto _ : state) r.run(k);
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * length);
}

/// `run_program`: a runner built for one run (semantics, threads, streams), per op.
void runner_chain_once(benchmark::State& state) {
  std::int64_t sink = 0;
  empty_kernels k{&sink};
  for (auto _ : state) weft::exec::run_program(chain_program(), 1, k, chain_options());
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * chain);
}

// --- baseline: a worker thread with a condition-variable queue ----------------------------

class cv_queue {
 public:
  cv_queue() : worker_([this] { run(); }) {}
  ~cv_queue() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  void push(std::function<void()> fn) {
    {
      std::lock_guard lock(m_);
      q_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }
  void drain() {
    std::unique_lock lock(m_);
    idle_.wait(lock, [&] { return q_.empty() && !busy_; });
  }

 private:
  void run() {
    std::unique_lock lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      std::function<void()> fn = std::move(q_.front());
      q_.pop_front();
      busy_ = true;
      lock.unlock();
      fn();
      lock.lock();
      busy_ = false;
      if (q_.empty()) idle_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false, busy_ = false;
  std::thread worker_;
};

void condvar_launch(benchmark::State& state) {
  cv_queue q;
  std::int64_t sink = 0;
  for (auto _ : state) {
    for (int i = 0; i < chain; ++i) q.push([&sink] { ++sink; });
    q.drain();
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * chain);
}

/// Two condition-variable workers passing a token: each handoff pushes to the other's queue.
void condvar_handoff(benchmark::State& state) {
  constexpr int handoffs = 1000;
  for (auto _ : state) {
    auto a = std::make_unique<cv_queue>(), b = std::make_unique<cv_queue>();
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::function<void(int)> pass = [&](int i) {
      if (i == handoffs) {
        std::lock_guard lock(m);
        done = true;
        cv.notify_one();
        return;
      }
      (i % 2 ? *a : *b).push([&pass, i] { pass(i + 1); });
    };
    a->push([&pass] { pass(1); });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done; });
  }
  state.SetItemsProcessed(state.iterations() * handoffs);
}

#if WEFT_BENCH_HAVE_TBB
/// TBB's flow graph: a chain of continue_nodes, each depending on the previous.
void tbb_chain(benchmark::State& state) {
  tbb::global_control workers(tbb::global_control::max_allowed_parallelism, 2);
  std::int64_t value = 0;
  tbb::flow::graph g;
  std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> nodes;
  const auto length = static_cast<int>(state.range(0));
  for (int i = 0; i < length; ++i) {
    nodes.push_back(std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(
        g, [&value](const tbb::flow::continue_msg&) { ++value; }));
    if (i) tbb::flow::make_edge(*nodes[static_cast<std::size_t>(i - 1)], *nodes.back());
  }
  for (auto _ : state) {
    nodes.front()->try_put(tbb::flow::continue_msg());
    g.wait_for_all();
  }
  benchmark::DoNotOptimize(value);
  state.SetItemsProcessed(state.iterations() * length);
}
// Chains of 1,000, 10,000 and 50,000 ops: the slope is the per-op cost, the intercept what a
// run costs whatever its length (waking threads, setting up, collecting the timeline).
BENCHMARK(tbb_chain)
    ->Arg(1000)
    ->Arg(chain)
    ->Arg(50000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
#endif

}  // namespace

BENCHMARK(streams_launch)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(condvar_launch)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(streams_handoff)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(condvar_handoff)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(streams_chain)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(runner_chain)
    ->Arg(1000)
    ->Arg(chain)
    ->Arg(50000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(runner_chain_once)->Unit(benchmark::kMicrosecond)->UseRealTime();

// How long a 150 us modelled delay really takes: the timer fires an event, a comm stream waiting
// on it runs, the host sees it. What an emulated link adds on top of its model.
void timer_150us(benchmark::State& state) {
  weft::rt::worker_pool pool(1, 1);
  weft::rt::timer clock;
  weft::rt::stream comm(pool, weft::rt::stream_role::comm);
  for (auto _ : state) {
    weft::rt::event arrived, seen;
    clock.fire_after(std::chrono::microseconds(150), arrived);
    comm.wait(arrived);
    comm.record(seen);
    seen.wait();
  }
}
BENCHMARK(timer_150us)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same with the host waiting on the timer's event directly: the timer's own lateness.
void timer_150us_host(benchmark::State& state) {
  weft::rt::timer clock;
  for (auto _ : state) {
    weft::rt::event arrived;
    clock.fire_after(std::chrono::microseconds(150), arrived);
    arrived.wait();
  }
}
BENCHMARK(timer_150us_host)->Unit(benchmark::kMicrosecond)->UseRealTime();

// --- what decides the per-op figures ---------------------------------------------------------

namespace {

/// One reading of each clock: the runner reads its clock once per op of a chain.
void steady_clock_read(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(steady_clock_read);
void cycle_clock_read(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(weft::rt::cycle_clock::now());
}
BENCHMARK(cycle_clock_read);

std::string first_line_of(const char* path, std::string_view prefix = {}) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0) {
      const auto colon = prefix.empty() ? std::string::npos : line.find(':');
      return colon == std::string::npos ? line
                                        : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

}  // namespace

// The machine's facts beside the results: the clock source the kernel uses, whether the
// processor's time-stamp counter is invariant, which clock the runner reads, the cores.
int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu", first_line_of("/proc/cpuinfo", "model name"));
  benchmark::AddCustomContext(
      "clocksource",
      first_line_of("/sys/devices/system/clocksource/clocksource0/current_clocksource"));
  benchmark::AddCustomContext("invariant_tsc",
                              weft::rt::cycle_clock::invariant_tsc() ? "yes" : "no");
  benchmark::AddCustomContext("runner_clock", weft::rt::cycle_clock::name());
  benchmark::AddCustomContext("cores", std::to_string(std::thread::hardware_concurrency()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
