// Fires events at points in time, from one thread: how modelled communication time passes
// without holding a worker (a stream waiting on the event holds no thread either).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include <weft/rt/stream.hpp>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace weft::rt {

class timer {
 public:
  using clock = std::chrono::steady_clock;

  timer() : thread_([this] { run(); }) {}
  timer(const timer&) = delete;
  timer& operator=(const timer&) = delete;
  /// Fires every pending event at once, then joins the thread: nothing waits forever.
  ~timer() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  /// Fires `e` at `when` (at once if that has passed) — on average: the timer learns how late
  /// its thread wakes up and wakes that much earlier, so one event may fire a few microseconds
  /// early rather than a scheduler's wake-up late. The first fires no earlier than `when`.
  void fire_at(clock::time_point when, const event& e) {
    {
      std::lock_guard lock(m_);
      due_.push({when, e});
    }
    cv_.notify_one();
  }
  template <class Rep, class Period>
  void fire_after(std::chrono::duration<Rep, Period> d, const event& e) {
    fire_at(clock::now() + std::chrono::duration_cast<clock::duration>(d), e);
  }

 private:
  struct item {
    clock::time_point when;
    event ev;
    bool operator>(const item& o) const { return when > o.when; }
  };
  void run() {
#if defined(__linux__)
    // Linux lets a sleeping thread wake up to 50 us late by default; a link model of a few
    // microseconds needs the timer on time.
    prctl(PR_SET_TIMERSLACK, 1UL);
#endif
    std::unique_lock lock(m_);
    for (;;) {
      if (due_.empty()) {
        if (stop_) return;
        cv_.wait(lock, [&] { return stop_ || !due_.empty(); });
        continue;
      }
      const clock::time_point next = due_.top().when;
      if (!stop_ && clock::now() < next - lead_) {
        cv_.wait_until(lock, next - lead_);
        continue;
      }
      const event e = due_.top().ev;
      due_.pop();
      // Waking up takes time: learn how late wake-ups are and wake up that much earlier, so
      // events fire on time on average without spinning.
      const auto late = clock::now() - next;
      lead_ = std::clamp(lead_ + late / 4, clock::duration::zero(), max_lead);
      lock.unlock();
      e.fire();
      lock.lock();
    }
  }

  static constexpr clock::duration max_lead = std::chrono::microseconds(500);

  std::mutex m_;
  std::condition_variable cv_;
  clock::duration lead_{};
  std::priority_queue<item, std::vector<item>, std::greater<>> due_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace weft::rt
