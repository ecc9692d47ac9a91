// Streams on a worker pool: issue order, events across streams, many streams on few workers,
// host synchronisation, failures, timers, and shutdown that never hangs.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <weft/rt/stream.hpp>
#include <weft/rt/timer.hpp>

using namespace weft::rt;
using namespace std::chrono_literals;

TEST_CASE("a stream runs its work in issue order") {
  worker_pool pool(2);
  stream s(pool);
  std::vector<int> seen;  // touched only by the stream's tasks, one at a time
  for (int i = 0; i < 1000; ++i) s.enqueue([&seen, i] { seen.push_back(i); });
  s.synchronize();
  REQUIRE(seen.size() == 1000);
  for (int i = 0; i < 1000; ++i) CHECK(seen[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("an event recorded on one stream orders work on another") {
  worker_pool pool(2);
  stream producer(pool), consumer(pool);
  for (int round = 0; round < 200; ++round) {
    int value = 0, seen = -1;
    event ready;
    consumer.wait(ready);
    consumer.enqueue([&] { seen = value; });
    producer.enqueue([&] { value = round + 1; });
    producer.record(ready);
    consumer.synchronize();
    CHECK(seen == round + 1);
  }
}

TEST_CASE("hundreds of streams share two workers, chained by events") {
  worker_pool pool(2);
  constexpr int n = 512;
  std::vector<std::unique_ptr<stream>> streams;
  std::vector<event> done(n);
  std::atomic<long> sum{0};
  for (int i = 0; i < n; ++i) streams.push_back(std::make_unique<stream>(pool));
  // Enqueue back to front, so most streams park on their predecessor's event first.
  for (int i = n - 1; i >= 0; --i) {
    if (i > 0) streams[static_cast<std::size_t>(i)]->wait(done[static_cast<std::size_t>(i - 1)]);
    for (int k = 0; k < 100; ++k)
      streams[static_cast<std::size_t>(i)]->enqueue([&sum, i] { sum += i; });
    streams[static_cast<std::size_t>(i)]->record(done[static_cast<std::size_t>(i)]);
  }
  done.back().wait();
  CHECK(sum == 100L * n * (n - 1) / 2);
}

TEST_CASE("a parked stream holds no worker") {
  worker_pool pool(1);
  stream waiting(pool), busy(pool);
  event never_yet;
  std::atomic<int> ran{0};
  waiting.wait(never_yet);
  waiting.enqueue([&] { ran += 1000; });
  for (int k = 0; k < 100; ++k) busy.enqueue([&] { ++ran; });
  busy.synchronize();  // the only worker was free to run these
  CHECK(ran == 100);
  CHECK(waiting.parked());
  never_yet.fire();
  waiting.synchronize();
  CHECK(ran == 1100);
}

TEST_CASE("a task that throws stops the run, names its tag, and nothing hangs") {
  worker_pool pool(2);
  stream a(pool), b(pool);
  event after;
  std::atomic<int> ran{0};
  a.enqueue([] {}, 1);
  a.enqueue([] { throw std::runtime_error("kernel failed"); }, 42);
  a.enqueue([&] { ++ran; }, 43);  // skipped: the run has stopped
  a.record(after);
  b.wait(after);                  // still fires, so b does not wait forever
  b.enqueue([&] { ++ran; }, 44);  // skipped too
  b.synchronize();
  CHECK(pool.failed());
  CHECK(pool.failure().tag == 42);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(pool.failure().error), "kernel failed",
                       std::runtime_error);
  CHECK(ran == 0);
  pool.clear_failure();
  a.enqueue([&] { ++ran; });
  a.synchronize();
  CHECK(ran == 1);
}

TEST_CASE("abandoning a stream that waits for an event that never fires returns at once") {
  auto pool = std::make_unique<worker_pool>(2);
  auto s = std::make_unique<stream>(*pool);
  event never;
  s->wait(never);
  s->enqueue([] {});
  CHECK_FALSE(s->synchronize_for(20ms));
  const auto t0 = std::chrono::steady_clock::now();
  s.reset();     // abandons
  pool.reset();  // joins every worker
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  never.fire();  // a late fire finds no waiter
}

TEST_CASE("a timer fires events at their time without holding a worker") {
  worker_pool pool(1);
  timer clock;
  stream comm(pool), compute(pool);
  event delivered;
  std::atomic<int> order{0};
  int comm_saw = -1;
  const auto t0 = std::chrono::steady_clock::now();
  clock.fire_after(50ms, delivered);
  comm.wait(delivered);
  comm.enqueue([&] { comm_saw = order.load(); });
  for (int k = 0; k < 10; ++k) compute.enqueue([&] { ++order; });
  compute.synchronize();
  comm.synchronize();
  CHECK(comm_saw == 10);  // compute ran while the transfer was "in flight"
  CHECK(std::chrono::steady_clock::now() - t0 >= 50ms);
}

TEST_CASE("destroying a timer fires what is pending") {
  event e;
  {
    timer clock;
    clock.fire_after(1h, e);
  }
  CHECK(e.done());
}

TEST_CASE("an async operation holds back what follows until it completes, holding no worker") {
  worker_pool pool(1);
  timer clock;
  stream comm(pool), compute(pool);
  std::atomic<int> computed{0};
  int seen_by_comm = -1;
  comm.enqueue_async([&] {
    event done;
    clock.fire_after(30ms, done);  // an operation "in flight" for 30 ms
    return done;
  });
  comm.enqueue([&] { seen_by_comm = computed.load(); });
  for (int k = 0; k < 20; ++k) compute.enqueue([&] { ++computed; });
  compute.synchronize();
  comm.synchronize();
  CHECK(seen_by_comm == 20);
}

TEST_CASE("abandoning a stream whose async operation never completes returns") {
  worker_pool pool(2);
  auto s = std::make_unique<stream>(pool);
  event never;
  s->enqueue_async([never] { return never; });
  s->enqueue([] {});
  CHECK_FALSE(s->synchronize_for(20ms));
  s.reset();
  never.fire();
}

TEST_CASE("comm workers run comm streams while every compute worker is busy") {
  worker_pool pool(1, 1);
  stream compute(pool), comm(pool, stream_role::comm);
  std::atomic<bool> started{false};
  std::thread::id compute_thread, comm_thread;
  // The one compute worker blocks until the comm stream has run: without a thread of its own
  // the comm stream would wait behind it.
  compute.enqueue([&] {
    compute_thread = std::this_thread::get_id();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!started.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100us);
  });
  comm.enqueue([&] {
    comm_thread = std::this_thread::get_id();
    started = true;
  });
  compute.synchronize();
  comm.synchronize();
  CHECK(started.load());
  CHECK(compute_thread != comm_thread);
  CHECK(pool.workers() == 1);
}

TEST_CASE("an event recorded on a compute stream releases a comm stream on its own worker") {
  worker_pool pool(2, 1);
  std::vector<std::unique_ptr<stream>> compute, comm;
  for (int r = 0; r < 8; ++r) {
    compute.push_back(std::make_unique<stream>(pool));
    comm.push_back(std::make_unique<stream>(pool, stream_role::comm));
  }
  std::vector<int> seen(8, -1);
  std::vector<int> value(8, 0);
  for (int r = 0; r < 8; ++r) {
    event e;
    compute[r]->enqueue([&value, r] { value[r] = r + 1; });
    compute[r]->record(e);
    comm[r]->wait(e);
    comm[r]->enqueue([&seen, &value, r] { seen[r] = value[r]; });
  }
  for (int r = 0; r < 8; ++r) {
    compute[r]->synchronize();
    comm[r]->synchronize();
    CHECK(seen[r] == r + 1);
  }
}

TEST_CASE("a host waiting on an event with a progress source polls it until it fires") {
  // A backend that completes operations only when polled (as MPI does): the third round fires
  // the event. Without polling, wait() would sleep for ever.
  struct polled final : progress_source {
    event e{this};
    int rounds = 0;
    void progress() override {
      if (++rounds == 3) e.fire();
    }
  } source;
  source.e.wait();
  CHECK(source.rounds == 3);
  // wait_for sleeps instead: it leaves the polling to others, and gives up.
  polled idle;
  CHECK_FALSE(idle.e.wait_for(std::chrono::milliseconds(20)));
  CHECK(idle.rounds == 0);
}

namespace {
// Helps until the pool has a place free: right after it is built (or has worked) its workers
// may not yet be asleep, and a host helps only in a worker's place.
template <class Fn>
bool help_when_free(worker_pool& pool, Fn queue_work) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    bool helping = false;
    pool.help(
        [&](bool h) {
          helping = h;
          if (h) queue_work();
        },
        [] { return true; });
    if (helping) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}
}  // namespace

TEST_CASE("a host that helps runs the work it queues in the one worker's place") {
  worker_pool pool(1);
  stream a(pool), b(pool);
  std::mutex m;
  std::vector<std::thread::id> ran;
  const auto note = [&] {
    std::lock_guard lock(m);
    ran.push_back(std::this_thread::get_id());
  };
  REQUIRE(help_when_free(pool, [&] {
    // A chain handed between two streams by events, and a third stream's work: with its one
    // place taken by the host, the worker may not run any of it.
    for (int blk = 0; blk < 10; ++blk) {
      stream& s = blk % 2 ? b : a;
      for (int i = 0; i < 10; ++i) s.enqueue(note);
      event e;
      s.record(e);
      (blk % 2 ? a : b).wait(e);
    }
  }));
  a.synchronize();
  b.synchronize();
  REQUIRE(ran.size() == 100);
  for (const std::thread::id& t : ran) CHECK(t == std::this_thread::get_id());
}

TEST_CASE("a host finds no place while every worker is awake, and only queues") {
  worker_pool pool(1);
  stream busy(pool), s(pool);
  std::atomic<bool> release{false}, running{false};
  busy.enqueue([&] {
    running = true;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!release.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100us);
  });
  while (!running.load()) std::this_thread::sleep_for(100us);
  std::thread::id ran_on;
  bool helping = true;
  const bool ran = pool.help(
      [&](bool h) {
        helping = h;
        s.enqueue([&] { ran_on = std::this_thread::get_id(); });
      },
      [] { return true; });
  CHECK_FALSE(helping);
  CHECK_FALSE(ran);
  release = true;
  s.synchronize();
  CHECK(ran_on != std::this_thread::get_id());
}

TEST_CASE("a host that stops helping leaves the rest to the workers, and one wakes for it") {
  worker_pool pool(1);
  stream s(pool);
  std::atomic<int> done{0};
  std::thread::id ran_on;
  bool ran = true;
  REQUIRE(help_when_free(pool, [&] {
    // enqueue_next makes it this thread's to run next; stopping at once hands it back.
    s.enqueue_next([&] {
      ran_on = std::this_thread::get_id();
      ++done;
    });
  }));
  s.synchronize();
  CHECK(done == 1);
  // Now stop before running anything.
  bool helping = false;
  for (int attempt = 0; attempt < 2000 && !helping; ++attempt) {
    ran = pool.help(
        [&](bool h) {
          helping = h;
          s.enqueue_next([&] {
            ran_on = std::this_thread::get_id();
            ++done;
          });
        },
        [] { return false; });
    if (!helping) {
      s.synchronize();
      std::this_thread::sleep_for(1ms);
    }
  }
  REQUIRE(helping);
  CHECK_FALSE(ran);
  CHECK(s.synchronize_for(5s));
  CHECK(ran_on != std::this_thread::get_id());
}

TEST_CASE("a host whose queueing throws gives its place back") {
  worker_pool pool(1);
  stream s(pool);
  int attempts = 0;
  for (bool thrown = false; !thrown && attempts < 2000; ++attempts) {
    try {
      pool.help(
          [&](bool h) {
            if (h) throw std::runtime_error("queueing failed");
          },
          [] { return true; });
      std::this_thread::sleep_for(1ms);
    } catch (const std::runtime_error&) {
      thrown = true;
    }
  }
  REQUIRE(attempts < 2000);
  // The place is free again: the host can help, and the worker still runs what it is given.
  CHECK(help_when_free(pool, [&] { s.enqueue([] {}); }));
  std::atomic<bool> ran{false};
  s.enqueue([&] { ran = true; });
  CHECK(s.synchronize_for(5s));
  CHECK(ran.load());
}

TEST_CASE("a task that leaves its stream hands what follows it, in order, to a worker") {
  // The host helps with no reason of its own to stop: leaving is what ends its help.
  worker_pool pool(1);
  stream s(pool);
  std::mutex m;
  std::vector<std::pair<int, std::thread::id>> ran;
  const auto note = [&](int i) {
    std::lock_guard lock(m);
    ran.emplace_back(i, std::this_thread::get_id());
  };
  bool helping = false;
  for (int attempt = 0; attempt < 2000 && !helping; ++attempt) {
    pool.help(
        [&](bool h) {
          helping = h;
          if (!h) return;
          s.enqueue([&] {
            note(0);
            stream::leave();
          });
          for (int i = 1; i < 5; ++i) s.enqueue([&, i] { note(i); });
        },
        [] { return true; });
    if (!helping) std::this_thread::sleep_for(1ms);
  }
  REQUIRE(helping);
  CHECK(s.synchronize_for(5s));
  REQUIRE(ran.size() == 5);
  CHECK(ran[0].second == std::this_thread::get_id());
  for (int i = 0; i < 5; ++i) CHECK(ran[static_cast<std::size_t>(i)].first == i);
  for (int i = 1; i < 5; ++i) CHECK(ran[static_cast<std::size_t>(i)].second != ran[0].second);
}
