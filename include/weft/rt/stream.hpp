// Streams that emulate accelerator queues on a shared pool of worker threads: each stream runs
// its work in issue order; an event recorded on one stream can be waited on by another; the host
// can wait for a stream or an event. Many ranks x streams share few cores: a stream waiting for
// an event holds no thread (the event reschedules it when it fires), and idle workers sleep on a
// condition variable — nothing spins.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace weft::rt {

class stream;
class worker_pool;

namespace detail {
/// Per worker thread: its pool, and a stream an event it fired made ready. The worker runs that
/// stream next itself instead of waking another thread: an event handed from one stream to
/// another costs no sleep and no wake-up when the first stream has nothing else to do.
struct worker_local {
  worker_pool* pool = nullptr;
  int queue = 0;  ///< which of the pool's queues the thread serves
  stream* handoff = nullptr;
  bool leave = false;  ///< stop draining the stream after the task that runs (stream::leave)
};
inline thread_local worker_local this_worker;
}  // namespace detail

/// What makes an event fire sooner when a host thread waits for it: a communication backend that
/// completes operations by polling (MPI) lets the waiting thread poll, as MPI_Wait does, instead
/// of sleeping until its progress thread gets round to it. `progress` does one round of polling
/// and returns; it may fire the event from the calling thread.
class progress_source {
 public:
  virtual void progress() = 0;

 protected:
  ~progress_source() = default;
};

/// Something that happens once. Streams wait on it without holding a thread; the host can block
/// on it. Shared between the recording stream and the waiters.
class event {
 public:
  event() : state_(std::make_shared<state>()) {}
  /// An event a host wait drives by polling `source` (which must outlive the wait).
  explicit event(progress_source* source) : event() { state_->source = source; }

  bool done() const {
    std::lock_guard lock(state_->m);
    return state_->fired;
  }
  /// Blocks the calling (host) thread until the event fires — polling its progress source, if
  /// it has one, as MPI_Wait does (and, like it, for ever if the operation never completes).
  void wait() const {
    if (state_->source)
      while (!done()) state_->source->progress();
    std::unique_lock lock(state_->m);
    state_->host.wait(lock, [&] { return state_->fired; });
  }
  /// As `wait`, giving up after `timeout`; true if the event fired. It sleeps rather than
  /// polls: a thread that looks in now and then (a runner minding its deadline) leaves the
  /// polling to the backend.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    std::unique_lock lock(state_->m);
    return state_->host.wait_for(lock, timeout, [&] { return state_->fired; });
  }
  /// Fires the event now, from any thread (a timer, a communication backend).
  void fire() const { fire(*state_); }

 private:
  friend class stream;
  struct state {
    mutable std::mutex m;
    std::condition_variable host;
    bool fired = false;
    std::vector<stream*> waiters;
    progress_source* source = nullptr;
  };
  static void fire(state& st);
  /// Registers `s` to be rescheduled when the event fires; false if it already has.
  static bool add_waiter(state& st, stream* s) {
    std::lock_guard lock(st.m);
    if (st.fired) return false;
    st.waiters.push_back(s);
    return true;
  }
  /// Takes `s` off the waiters; false if the event has fired (and will reschedule it).
  static bool remove_waiter(state& st, stream* s) {
    std::lock_guard lock(st.m);
    for (auto it = st.waiters.begin(); it != st.waiters.end(); ++it)
      if (*it == s) {
        st.waiters.erase(it);
        return true;
      }
    return false;
  }
  std::shared_ptr<state> state_;
};

/// Why a run stopped: the first task that threw, with the tag its issuer gave it.
struct task_failure {
  std::uint64_t tag = 0;
  std::exception_ptr error;
};

/// What a stream does: compute, or communication (short tasks that start an operation and wait
/// for it). A pool with comm workers runs comm streams on them, as an accelerator runs its
/// collectives on engines of their own: starting a transfer never waits behind a long kernel.
enum class stream_role : std::uint8_t { compute, comm };

/// Worker threads shared by every stream of a world. Streams with work queue up here.
class worker_pool {
 public:
  /// `workers` threads run compute streams; `comm_workers` threads, if any, run comm streams
  /// (with none, the workers run both, first come, first served).
  explicit worker_pool(unsigned workers = std::thread::hardware_concurrency(),
                       unsigned comm_workers = 0) {
    if (workers == 0) workers = 1;
    comm_queue_ = comm_workers > 0 ? 1 : 0;
    workers_ = workers;
    // Every thread starts awake, holding one of its queue's places.
    places_[0] = awake_[0] = workers;
    places_[1] = awake_[1] = comm_workers;
    threads_.reserve(workers + comm_workers);
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(0); });
    for (unsigned i = 0; i < comm_workers; ++i) threads_.emplace_back([this] { work(1); });
  }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  /// Joins every worker. Streams must be idle (synchronise them first).
  ~worker_pool() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    for (auto& w : wake_) w.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  /// Threads that run compute streams.
  unsigned workers() const noexcept { return workers_; }

  /// The first failure of any task since the last `clear_failure`, if any. Once a task fails,
  /// streams skip the tasks that follow (events still fire, so nothing waits forever).
  bool failed() const {
    std::lock_guard lock(m_);
    return failure_.error != nullptr;
  }
  task_failure failure() const {
    std::lock_guard lock(m_);
    return failure_;
  }
  void clear_failure() {
    std::lock_guard lock(m_);
    failure_ = {};
    aborted_.store(false, std::memory_order_relaxed);
  }

  /// Lets the calling thread — a host about to wait for work it queues — run that work in a
  /// worker's place, as TBB's waiting thread runs its graph's tasks: a chain of work then costs
  /// no wake-up at its start (the host runs what it made ready rather than waking a worker for
  /// it) nor, when the host ran its last task, at its end. `queue_work(bool helping)` runs first,
  /// with this thread counted as a compute worker when `helping` (work it queues with
  /// `enqueue_next`, or that an event it fires makes ready, is its own to run next); then the
  /// thread runs what is ready on the compute queue until nothing is, and returns, true if it
  /// ran anything. It takes a worker's place only when one is free, so that no more than
  /// `workers()` threads ever run compute at once; when none is, it only calls
  /// `queue_work(false)`, and the workers run the rest.
  /// It stops taking work once `keep_going()` is false (checked between streams: a host minding a
  /// deadline) or a task it runs leaves its stream (`stream::leave`).
  template <class Fn, class KeepGoing>
  bool help(Fn&& queue_work, KeepGoing&& keep_going);

 private:
  friend class stream;
  friend class event;

  int queue_of(stream_role r) const noexcept { return r == stream_role::comm ? comm_queue_ : 0; }
  /// Queues a stream with work; `first`: ahead of the others (one that was running goes on).
  void schedule(stream* s, int queue, bool first = false) {
    bool wake = false;
    {
      std::lock_guard lock(m_);
      if (first)
        ready_[queue].push_front(s);
      else
        ready_[queue].push_back(s);
      wake = sleepers_[queue] > 0 && awake_[queue] < places_[queue];
    }
    if (wake) wake_[queue].notify_one();
  }
  void fail(std::uint64_t tag, std::exception_ptr e) {
    std::lock_guard lock(m_);
    if (!failure_.error) failure_ = {tag, std::move(e)};
    aborted_.store(true, std::memory_order_relaxed);
  }
  bool aborted() const noexcept { return aborted_.load(std::memory_order_relaxed); }
  void work(int queue);

  mutable std::mutex m_;
  std::condition_variable wake_[2];
  std::deque<stream*> ready_[2];  ///< compute (and comm without comm workers); comm
  unsigned sleepers_[2] = {0, 0};
  // Per queue, the threads that may run its streams at once (its workers), and those awake: a
  // worker sleeps when none is left, and a helping host takes one of them (`help`).
  unsigned places_[2] = {0, 0}, awake_[2] = {0, 0};
  int comm_queue_ = 0;
  unsigned workers_ = 0;
  bool stop_ = false;
  task_failure failure_;
  std::atomic<bool> aborted_{false};
  std::vector<std::thread> threads_;
};

/// An in-order queue of work running on a worker pool.
class stream {
 public:
  explicit stream(worker_pool& pool, stream_role role = stream_role::compute)
      : pool_(pool), pool_queue_(pool.queue_of(role)) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  /// Drops work not yet started, waits for the task that is running, if any.
  ~stream() { abandon(); }

  /// Runs `fn` after everything enqueued before it. `tag` names the task in a failure report.
  void enqueue(std::function<void()> fn, std::uint64_t tag = 0) {
    push({entry::run, std::move(fn), {}, tag});
  }
  /// As `enqueue`, called from a task of this stream's pool that is about to end: the calling
  /// worker runs this stream next itself, where it would otherwise wake another thread for it
  /// (work handed from one stream to another costs no sleep and no wake-up).
  void enqueue_next(std::function<void()> fn, std::uint64_t tag = 0) {
    push({entry::run, std::move(fn), {}, tag}, true);
  }
  /// Runs `start`, which begins an asynchronous operation (a send, a collective) and returns the
  /// event of its completion; what follows waits for that event, holding no thread meanwhile.
  void enqueue_async(std::function<event()> start, std::uint64_t tag = 0) {
    // The draining thread alone runs it, so it can leave the event in `async_result_`.
    push({entry::async,
          [this, start = std::move(start)] { async_result_ = start().state_; },
          {},
          tag});
  }
  /// Fires `e` when the stream reaches this point.
  void record(const event& e) { push({entry::fire, {}, e.state_, 0}); }
  /// Holds back what follows until `e` has fired; holds no thread meanwhile.
  void wait(const event& e) { push({entry::wait, {}, e.state_, 0}); }
  /// Blocks the host until everything enqueued so far has run.
  void synchronize() {
    // A host usually asks as the stream's last task returns (its completion woke the host):
    // look a few times before sleeping, since a wake-up costs tens of microseconds on a virtual
    // machine and the task is done in well under one.
    for (int look = 0; look < 64; ++look) {
      {
        std::lock_guard lock(m_);
        if (queue_.empty() && !active_) return;
      }
      std::this_thread::yield();
    }
    std::unique_lock lock(m_);
    idle_.wait(lock, [&] { return queue_.empty() && !active_; });
  }
  /// As `synchronize`, giving up after `timeout`; true if the stream is idle.
  template <class Rep, class Period>
  bool synchronize_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(m_);
    return idle_.wait_for(lock, timeout, [&] { return queue_.empty() && !active_; });
  }
  /// Drops everything not yet started, including a wait on an event that may never fire, and
  /// waits for the task that is running: how a run that failed or timed out shuts down.
  void abandon() {
    {
      std::lock_guard lock(m_);
      abandoning_ = true;
      queue_.clear();
    }
    for (;;) {
      std::shared_ptr<event::state> parked;
      {
        std::unique_lock lock(m_);
        if (queue_.empty() && !active_) break;
        parked = parked_on_;
      }
      if (parked && event::remove_waiter(*parked, this)) {
        std::lock_guard lock(m_);
        parked_on_.reset();
        queue_.clear();
        active_ = false;
        idle_.notify_all();
        break;
      }
      std::unique_lock lock(m_);  // a task is running: let it finish
      idle_.wait_for(lock, std::chrono::milliseconds(1));
    }
    std::lock_guard lock(m_);
    abandoning_ = false;
  }
  /// Called from a task (and only there: the flag waits for the thread's next task otherwise):
  /// once the task returns, the calling thread stops running this stream and puts it at the
  /// head of the pool's queue, what follows the task still in order (the next thread of the
  /// pool to look takes it up, the caller too). A host that helps (worker_pool::help) stops
  /// helping there: the stream goes on as if the worker whose place the host had took over.
  static void leave() noexcept { detail::this_worker.leave = true; }

  /// True while the stream's head waits for an event that has not fired.
  bool parked() const {
    std::lock_guard lock(m_);
    return parked_on_ != nullptr;
  }

 private:
  friend class worker_pool;
  friend class event;

  struct entry {
    enum kind_t : std::uint8_t { run, fire, wait, async } kind;
    std::function<void()> fn;
    std::shared_ptr<event::state> ev;  ///< for fire and wait
    std::uint64_t tag;
  };

  void push(entry e, bool here = false) {
    bool schedule = false;
    {
      std::lock_guard lock(m_);
      queue_.push_back(std::move(e));
      if (!active_) active_ = schedule = true;
    }
    if (!schedule) return;
    detail::worker_local& w = detail::this_worker;
    if (here && w.pool == &pool_ && w.queue == pool_queue_ && w.handoff == nullptr)
      w.handoff = this;
    else
      pool_.schedule(this, pool_queue_);
  }

  /// Runs entries until the queue is empty or the head waits for an event that has not fired
  /// (the event reschedules the stream then); true if a task left it (`leave`).
  bool drain() {
    for (;;) {
      {
        std::lock_guard lock(m_);
        if (queue_.empty()) {
          parked_on_.reset();
          active_ = false;
          idle_.notify_all();
          return false;
        }
        entry& head = queue_.front();
        if (head.kind == entry::wait) {
          if (event::add_waiter(*head.ev, this)) {
            parked_on_ = head.ev;
            return false;  // stays active: the event brings it back
          }
          parked_on_.reset();
          queue_.pop_front();
          continue;
        }
        // Take a run of entries up to the next wait, or up to and including an async entry, at
        // once: one lock for many ops.
        while (!queue_.empty() && queue_.front().kind != entry::wait && batch_.size() < 64) {
          batch_.push_back(std::move(queue_.front()));
          queue_.pop_front();
          if (batch_.back().kind == entry::async) break;
        }
      }
      std::shared_ptr<event::state> pending;
      std::size_t ran = 0;
      while (ran < batch_.size() && !detail::this_worker.leave) {
        entry& e = batch_[ran++];
        if (e.kind == entry::fire) {
          event::fire(*e.ev);
        } else if (!pool_.aborted()) {
          try {
            e.fn();
            if (e.kind == entry::async) pending = std::move(async_result_);
          } catch (...) {
            pool_.fail(e.tag, std::current_exception());
          }
        }
      }
      if (ran < batch_.size()) {  // leaving: what the batch holds yet goes back, in order
        std::lock_guard lock(m_);
        if (!abandoning_)
          for (std::size_t k = batch_.size(); k-- > ran;) queue_.push_front(std::move(batch_[k]));
      }
      batch_.clear();
      if (stream* woken = detail::this_worker.handoff) {
        std::unique_lock lock(m_);
        // Runnable work still queued here: another worker takes the woken stream. (A wait at the
        // head most likely parks this stream and frees the thread for it.)
        if (pending == nullptr && !queue_.empty() && queue_.front().kind != entry::wait) {
          lock.unlock();
          detail::this_worker.handoff = nullptr;
          woken->pool_.schedule(woken, woken->pool_queue_);
        }
      }
      if (pending) {  // the async operation's completion holds back what follows
        std::lock_guard lock(m_);
        if (!abandoning_) queue_.push_front({entry::wait, {}, std::move(pending), 0});
      }
      if (std::exchange(detail::this_worker.leave, false)) {
        {
          std::lock_guard lock(m_);
          if (queue_.empty()) {  // nothing to hand on: the stream goes idle as usual
            parked_on_.reset();
            active_ = false;
            idle_.notify_all();
            return true;
          }
        }
        pool_.schedule(this, pool_queue_, true);  // still active: the next worker goes on
        return true;
      }
    }
  }

  worker_pool& pool_;
  int pool_queue_;  ///< which of the pool's queues runs it
  mutable std::mutex m_;
  std::condition_variable idle_;
  std::deque<entry> queue_;
  bool active_ = false;  ///< queued on the pool, running, or parked on an event
  std::shared_ptr<event::state> parked_on_;
  std::vector<entry> batch_;  ///< used by the one thread draining the stream
  bool abandoning_ = false;
  std::shared_ptr<event::state> async_result_;  ///< set by an async entry as it runs
};

inline void event::fire(state& st) {
  std::vector<stream*> waiters;
  {
    std::lock_guard lock(st.m);
    if (st.fired) return;
    st.fired = true;
    waiters.swap(st.waiters);
  }
  st.host.notify_all();
  for (stream* s : waiters) {
    detail::worker_local& w = detail::this_worker;
    if (w.pool == &s->pool_ && w.queue == s->pool_queue_ && w.handoff == nullptr)
      w.handoff = s;
    else
      s->pool_.schedule(s, s->pool_queue_);
  }
}

inline void worker_pool::work(int queue) {
  detail::this_worker.pool = this;
  detail::this_worker.queue = queue;
  std::deque<stream*>& ready = ready_[queue];
  for (;;) {
    stream* s = nullptr;
    {
      std::unique_lock lock(m_);
      if (ready.empty() && !stop_) {  // sleep, giving up this thread's place
        --awake_[queue];
        ++sleepers_[queue];
        wake_[queue].wait(
            lock, [&] { return stop_ || (!ready.empty() && awake_[queue] < places_[queue]); });
        --sleepers_[queue];
        ++awake_[queue];
      }
      if (ready.empty()) return;  // stopping, and nothing left to run
      s = ready.front();
      ready.pop_front();
    }
    (void)s->drain();
    while (stream* next = std::exchange(detail::this_worker.handoff, nullptr)) (void)next->drain();
  }
}

template <class Fn, class KeepGoing>
bool worker_pool::help(Fn&& queue_work, KeepGoing&& keep_going) {
  detail::worker_local& w = detail::this_worker;
  bool place = false;
  if (w.pool == nullptr) {  // (a worker holds its place already: it only queues)
    std::lock_guard lock(m_);
    if (awake_[0] < places_[0]) {
      ++awake_[0];
      place = true;
    }
  }
  if (!place) {
    queue_work(false);
    return false;
  }
  w = {this, 0, nullptr};
  // Gives the place back; what this thread was to run next goes to the workers.
  const auto give_back = [&] {
    stream* next = std::exchange(w.handoff, nullptr);
    w = {};
    bool wake = false;
    {
      std::lock_guard lock(m_);
      if (next) ready_[0].push_back(next);
      --awake_[0];
      wake = !ready_[0].empty() && sleepers_[0] > 0;
    }
    if (wake) wake_[0].notify_one();
  };
  bool ran = false;
  try {
    queue_work(true);
    // As a worker's loop, ending where a worker would sleep, or where a task left its stream.
    while (keep_going()) {
      stream* s = std::exchange(w.handoff, nullptr);
      if (s == nullptr) {
        std::lock_guard lock(m_);
        if (ready_[0].empty()) break;
        s = ready_[0].front();
        ready_[0].pop_front();
      }
      ran = true;
      if (s->drain()) break;
    }
  } catch (...) {  // (a task's own exception is the pool's failure: this is the runtime's)
    give_back();
    throw;
  }
  give_back();
  return ran;
}

}  // namespace weft::rt
