// The runtime's communication interface (rt/comm.hpp) over MPI: one process per rank, every
// operation a nonblocking MPI call completed by a progress thread that fires its event. A
// (group, channel) of the interface is an MPI communicator of its own, created the first time it
// is used (MPI_Comm_create_group, matched by a tag derived from the group and the channel, so
// members need not agree on an order of creation). With MPI_THREAD_MULTIPLE the callers issue
// their calls themselves and the progress thread only tests for completion; otherwise the
// progress thread owns every MPI call. Sums are taken in member order by default — every
// member's data gathered, then added 0 + m0 + m1 + ... as the in-process backend does — so a run
// over MPI equals an in-process run bit for bit (docs/mpi.md).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/mpi/environment.hpp>
#include <weft/rt/comm.hpp>

namespace weft::mpi {

/// How all-reduce and reduce-scatter add.
enum class reduction_order : unsigned char {
  /// Gather every member's values, add them in member order on each member: equal bit for bit
  /// to the in-process backend, at p times the bytes of a ring.
  member,
  /// MPI_Iallreduce and MPI_Ireduce_scatter_block: the library's algorithm and order (the same
  /// from run to run for one build, group size and count; not the in-process sum bit for bit).
  library,
};

struct options {
  reduction_order reduce = reduction_order::member;
  threading threads = threading::automatic;
  /// After a completion the progress thread polls without sleeping for this long (low latency
  /// while traffic flows), then backs off to short sleeps (little CPU while it waits).
  std::chrono::microseconds spin{200};
};

/// One rank of a world of processes: the communicator over `parent` (MPI_COMM_WORLD by default;
/// its ranks are the interface's ranks). Construct it on every rank of `parent`; it duplicates
/// `parent`, so its traffic never meets anyone else's.
class communicator final : public rt::communicator, private rt::progress_source {
 public:
  explicit communicator(MPI_Comm parent = MPI_COMM_WORLD, options opt = {}) : opt_(opt) {
    int level = 0;
    detail::check(MPI_Query_thread(&level), "MPI_Query_thread");
    if (opt_.threads == threading::multiple && level < MPI_THREAD_MULTIPLE)
      throw mpi_error("weft: mpi: threading::multiple needs MPI_THREAD_MULTIPLE (provided: " +
                      std::to_string(level) + ")");
    multiple_ = opt_.threads != threading::progress_thread && level >= MPI_THREAD_MULTIPLE;
    detail::check(MPI_Comm_dup(parent, &p2p_), "MPI_Comm_dup");
    detail::check(MPI_Comm_dup(parent, &groups_parent_), "MPI_Comm_dup");
    detail::check(MPI_Comm_dup(parent, &control_), "MPI_Comm_dup");
    for (MPI_Comm c : {p2p_, groups_parent_, control_})
      detail::check(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    detail::check(MPI_Comm_rank(p2p_, &rank_), "MPI_Comm_rank");
    detail::check(MPI_Comm_size(p2p_, &size_), "MPI_Comm_size");
    detail::check(MPI_Comm_group(p2p_, &world_group_), "MPI_Comm_group");
    int* ub = nullptr;
    int has = 0;
    detail::check(MPI_Comm_get_attr(p2p_, MPI_TAG_UB, &ub, &has), "MPI_Comm_get_attr");
    tag_ub_ = has && ub ? *ub : 32767;
    // A failure notice from any peer, at any time.
    detail::check(MPI_Irecv(notice_.data(), static_cast<int>(notice_.size()), MPI_CHAR,
                            MPI_ANY_SOURCE, notice_tag, control_, &notice_req_),
                  "MPI_Irecv");
    progress_ = std::thread([this] { progress_loop(); });
  }
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  ~communicator() override {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    progress_.join();
    const bool healthy = fault().empty();
    // A creation waiting for a peer that is gone would wait forever: leave it.
    for (auto& c : creators_) healthy ? c.join() : c.detach();
    if (!healthy) return;  // peers may be gone: leave MPI's state to the job's end
    MPI_Cancel(&notice_req_);
    MPI_Wait(&notice_req_, MPI_STATUS_IGNORE);
    for (auto& g : groups_)
      if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
    MPI_Group_free(&world_group_);
    for (MPI_Comm* c : {&p2p_, &groups_parent_, &control_}) MPI_Comm_free(c);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  /// True when callers issue their MPI calls themselves (MPI_THREAD_MULTIPLE).
  bool multiple() const noexcept { return multiple_; }
  reduction_order order() const noexcept { return opt_.reduce; }

 protected:
  const char* backend() const noexcept override { return "mpi"; }
  rt::event start_send(rt::const_data data, int dst, int tag) override {
    const int n = count_of(data.count, "a send");
    return submit(nullptr, "send to rank", dst, [=, this](pending& p, MPI_Comm) {
      p.cancellable = true;
      return MPI_Isend(data.data, n, type_of(data.type), dst, tag, p2p_, p.add());
    });
  }
  rt::event start_recv(rt::mutable_data data, int src, int tag) override {
    const int n = count_of(data.count, "a receive");
    return submit(nullptr, "receive from rank", src, [=, this](pending& p, MPI_Comm) {
      p.cancellable = true;
      p.expect = n;
      p.expect_type = data.type;
      return MPI_Irecv(data.data, n, type_of(data.type), src, tag, p2p_, p.add());
    });
  }

  rt::event start_all_to_all(rt::const_data send, std::span<const std::size_t> send_counts,
                             rt::mutable_data recv, std::span<const std::size_t> recv_counts,
                             std::span<const int> members, int channel) override {
    group& g = group_of(members, channel);
    // The counts add up to the buffers (checked by the front end): buffers within MPI's ints
    // keep every count and displacement within them.
    count_of(send.count, "an all-to-all");
    count_of(recv.count, "an all-to-all");
    // The counts are read when the call is made, maybe later (a group being created): like the
    // buffers, the caller keeps them until the event fires (rt/comm.hpp).
    return submit(&g, "all-to-all", -1, [=](pending& p, MPI_Comm c) {
      const std::size_t k = send_counts.size();
      p.counts.resize(4 * k);
      int* sc = p.counts.data();
      int* sd = sc + k;
      int* rc = sd + k;
      int* rd = rc + k;
      int sent_so_far = 0, received_so_far = 0;
      for (std::size_t j = 0; j < k; ++j) {  // counts add up to the buffers (rt/comm.hpp)
        sc[j] = static_cast<int>(send_counts[j]);
        rc[j] = static_cast<int>(recv_counts[j]);
        sd[j] = sent_so_far;
        rd[j] = received_so_far;
        sent_so_far += sc[j];
        received_so_far += rc[j];
      }
      return MPI_Ialltoallv(send.data, sc, sd, type_of(send.type), recv.data, rc, rd,
                            type_of(recv.type), c, p.add());
    });
  }

  rt::event start_all_reduce(rt::mutable_data data, std::span<const int> members,
                             int channel) override {
    group& g = group_of(members, channel);
    const int n = count_of(data.count, "an all-reduce");
    if (opt_.reduce == reduction_order::library)
      return submit(&g, "all-reduce", -1, [=](pending& p, MPI_Comm c) {
        return MPI_Iallreduce(MPI_IN_PLACE, data.data, n, type_of(data.type), MPI_SUM, c, p.add());
      });
    const std::size_t members_n = members.size();
    count_of(data.count * members_n, "an all-reduce's gather");
    return submit(&g, "all-reduce", -1, [=](pending& p, MPI_Comm c) {
      p.scratch.resize(data.bytes() * members_n);
      p.then = [=, &p] { sum_slices(p.scratch.data(), members_n, data); };
      return MPI_Iallgather(data.data, n, type_of(data.type), p.scratch.data(), n,
                            type_of(data.type), c, p.add());
    });
  }

  rt::event start_all_gather(rt::const_data mine, rt::mutable_data all,
                             std::span<const int> members, int channel) override {
    group& g = group_of(members, channel);
    const int n = count_of(mine.count, "an all-gather");
    count_of(all.count, "an all-gather");
    return submit(&g, "all-gather", -1, [=](pending& p, MPI_Comm c) {
      return MPI_Iallgather(mine.data, n, type_of(mine.type), all.data, n, type_of(all.type), c,
                            p.add());
    });
  }

  rt::event start_reduce_scatter(rt::const_data all, rt::mutable_data mine,
                                 std::span<const int> members, int channel) override {
    group& g = group_of(members, channel);
    const int n = count_of(mine.count, "a reduce-scatter");
    count_of(all.count, "a reduce-scatter");
    if (opt_.reduce == reduction_order::library)
      return submit(&g, "reduce-scatter", -1, [=](pending& p, MPI_Comm c) {
        return MPI_Ireduce_scatter_block(all.data, mine.data, n, type_of(mine.type), MPI_SUM, c,
                                         p.add());
      });
    const std::size_t members_n = members.size();
    return submit(&g, "reduce-scatter", -1, [=](pending& p, MPI_Comm c) {
      // Member j receives every member's j-th slice, then adds them in member order.
      p.scratch.resize(mine.bytes() * members_n);
      p.then = [=, &p] { sum_slices(p.scratch.data(), members_n, mine); };
      return MPI_Ialltoall(all.data, n, type_of(all.type), p.scratch.data(), n, type_of(mine.type),
                           c, p.add());
    });
  }

  rt::event start_barrier(std::span<const int> members, int channel) override {
    group& g = group_of(members, channel);
    return submit(&g, "barrier", -1,
                  [](pending& p, MPI_Comm c) { return MPI_Ibarrier(c, p.add()); });
  }

 public:
  void announce_failure(std::string_view what) override {
    const std::string text(what.substr(0, notice_size - 1));
    const auto send_all = [this, text] {
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        MPI_Request q = MPI_REQUEST_NULL;
        // Small: sent eagerly. Nobody waits for it, so a dead peer costs nothing.
        if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, notice_tag, control_,
                      &q) == MPI_SUCCESS)
          MPI_Request_free(&q);
      }
    };
    std::unique_lock lock(m_);
    if (multiple_) {
      lock.unlock();
      send_all();
      lock.lock();
    } else {
      commands_.push_back(send_all);
    }
    // This rank's run is over: what it still has in flight is dropped before this returns, so
    // nothing lands in buffers the caller is about to free; the world's fault is its own.
    set_fault("rank " + std::to_string(rank_) + " (this rank): " + text);
    failed_ = true;
    wake_.notify_all();
    dropped_.wait_for(lock, std::chrono::seconds(1), [&] { return in_flight_dropped_ || stop_; });
  }

  std::string fault() const override {
    std::lock_guard lock(fault_m_);
    return fault_;
  }

 private:
  static constexpr int notice_tag = 1;
  static constexpr std::size_t notice_size = 1024;

  struct group;
  /// One operation in flight: its requests, what to do once they are complete (a member-order
  /// sum), the event that then fires.
  struct pending {
    std::vector<MPI_Request> reqs;
    std::vector<std::byte> scratch;
    std::vector<int> counts;  ///< an all-to-all's counts and displacements, read by MPI
    std::function<void()> then;
    explicit pending(rt::progress_source* source) : done(source) {}
    rt::event done;
    const char* op = "";       ///< what it is: "send to rank", "all-to-all", ...
    int peer = -1;             ///< a transfer's peer
    const group* g = nullptr;  ///< a collective's group
    /// In words, for an error (built then, not per operation).
    std::string what() const {
      std::string w = op;
      if (peer >= 0) w += " " + std::to_string(peer);
      if (g) w += " of " + g->name;
      return w;
    }
    bool cancellable = false;  ///< point-to-point
    int expect = -1;           ///< a receive: how many values it must get
    rt::element expect_type = rt::element::f32;
    MPI_Request* add() { return &reqs.emplace_back(MPI_REQUEST_NULL); }
  };
  using issue_fn = std::function<int(pending&, MPI_Comm)>;

  /// A (group, channel): its communicator, created on first use; operations issued before it
  /// exists wait in `backlog`, in call order.
  struct group {
    std::string name;
    std::vector<int> members;
    int channel = 0;
    int tag = 0;
    std::mutex m;
    MPI_Comm comm = MPI_COMM_NULL;
    bool creating = false;
    std::deque<std::pair<std::shared_ptr<pending>, issue_fn>> backlog;
  };

  static MPI_Datatype type_of(rt::element e) noexcept {
    return e == rt::element::f32 ? MPI_FLOAT : MPI_DOUBLE;
  }
  /// MPI counts are ints: a larger one is refused, not wrapped.
  static int count_of(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(INT_MAX))
      throw config_error(std::string("weft: mpi: ") + what + " of " + std::to_string(n) +
                         " values exceeds MPI's int counts (at most " + std::to_string(INT_MAX) +
                         ")");
    return static_cast<int>(n);
  }
  /// `out` = the sum of `parts` slices of its length laid end to end, in member order.
  static void sum_slices(const std::byte* slices, std::size_t parts, rt::mutable_data out) {
    const auto add = [&]<class T>(T*) {
      const T* s = reinterpret_cast<const T*>(slices);
      rt::sum_in_member_order<T>(
          parts, [&](std::size_t j) { return s + j * out.count; },
          std::span<T>(static_cast<T*>(out.data), out.count));
    };
    if (out.type == rt::element::f32)
      add(static_cast<float*>(nullptr));
    else
      add(static_cast<double*>(nullptr));
  }

  /// The (group, channel)'s communicator (the front end checked this rank is a member).
  group& group_of(std::span<const int> members, int channel) {
    std::lock_guard lock(m_);
    for (const auto& known : groups_)  // few groups, looked up per collective: no allocation
      if (known->channel == channel &&
          std::equal(members.begin(), members.end(), known->members.begin(), known->members.end()))
        return *known;
    auto& slot = groups_.emplace_back(std::make_unique<group>());
    slot->members.assign(members.begin(), members.end());
    slot->channel = channel;
    slot->name = "ranks {";
    for (std::size_t j = 0; j < members.size(); ++j)
      slot->name += (j ? "," : "") + std::to_string(members[j]);
    slot->name += "} channel " + std::to_string(channel);
    // The tag that makes the members' MPI_Comm_create_group calls meet: the same on every
    // member, different (but for a 1 in tag_ub chance) between groups created concurrently.
    std::uint64_t h = 1469598103934665603ull;
    for (const int v : members) h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull;
    h = (h ^ static_cast<std::uint32_t>(channel)) * 1099511628211ull;
    slot->tag = static_cast<int>(h % static_cast<std::uint64_t>(tag_ub_));
    return *slot;
  }

  /// Issues an operation: now, on the caller's thread (MPI_THREAD_MULTIPLE and its group's
  /// communicator exists), or later in call order (the group is being created, or the progress
  /// thread owns MPI).
  template <class Issue>
  rt::event submit(group* g, const char* op, int peer, Issue&& issue) {
    auto p =
        std::make_shared<pending>(multiple_ ? static_cast<rt::progress_source*>(this) : nullptr);
    p->op = op;
    p->peer = peer;
    p->g = g;
    rt::event done = p->done;
    if (!multiple_) {
      std::lock_guard lock(m_);
      commands_.push_back([this, g, p, issue = std::forward<Issue>(issue)] {
        MPI_Comm c = p2p_;
        if (g) {
          if (g->comm == MPI_COMM_NULL) create(*g);  // blocks this thread: docs/mpi.md
          c = g->comm;
        }
        issue_now(p, issue, c, false);
      });
      wake_.notify_all();
      return done;
    }
    if (!g) {
      issue_now(p, issue, p2p_, true);
      return done;
    }
    std::unique_lock lock(g->m);
    if (g->comm != MPI_COMM_NULL && g->backlog.empty()) {
      issue_now(p, issue, g->comm, true);
      return done;
    }
    g->backlog.emplace_back(p, issue_fn(std::forward<Issue>(issue)));
    if (!g->creating) {
      g->creating = true;
      // A thread of its own: creation blocks until every member is there, and another group's
      // creation, or this rank's other work, must not wait behind it.
      std::lock_guard l(m_);
      creators_.emplace_back([this, g] {
        try {
          create(*g);
        } catch (const std::exception& e) {
          set_fault(e.what());
          return;
        }
        std::lock_guard gl(g->m);
        while (!g->backlog.empty()) {
          auto [q, fn] = std::move(g->backlog.front());
          g->backlog.pop_front();
          issue_now(q, fn, g->comm, false);
        }
      });
    }
    return done;
  }

  /// Calls `issue`; on success hands the operation to the progress thread. A failed call throws
  /// on the caller's thread (`throw_errors`) or becomes the world's fault.
  template <class Issue>
  void issue_now(const std::shared_ptr<pending>& p, const Issue& issue, MPI_Comm c,
                 bool throw_errors) {
    if (const int rc = issue(*p, c); rc != MPI_SUCCESS) {
      const std::string why = "weft: mpi: " + p->what() + " failed: " + detail::error_string(rc);
      if (throw_errors) throw mpi_error(why);
      set_fault(why);
      return;
    }
    std::lock_guard lock(m_);
    fresh_.push_back(p);
    idle_.store(false);
    wake_.notify_all();
  }

  void create(group& g) {
    MPI_Group members;
    detail::check(MPI_Group_incl(world_group_, static_cast<int>(g.members.size()), g.members.data(),
                                 &members),
                  "MPI_Group_incl");
    MPI_Comm c = MPI_COMM_NULL;
    const int rc = MPI_Comm_create_group(groups_parent_, members, g.tag, &c);
    MPI_Group_free(&members);
    detail::check(rc, ("MPI_Comm_create_group for " + g.name).c_str());
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    g.comm = c;
  }

  void set_fault(std::string why) {
    std::lock_guard lock(fault_m_);
    if (fault_.empty()) fault_ = std::move(why);
  }

  void poll() override {
    if (!multiple_) return;  // the progress thread owns MPI
    std::unique_lock lock(poll_m_, std::try_to_lock);
    if (lock && !idle_.load()) poll_once();
  }

  /// A host thread waiting for one of this communicator's events polls, as MPI_Wait does
  /// (MPI_THREAD_MULTIPLE only; otherwise it sleeps until the progress thread fires it).
  void progress() override {
    host_polled_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                       std::memory_order_relaxed);
    std::unique_lock poll(poll_m_, std::try_to_lock);
    if (!poll) return std::this_thread::yield();  // another thread is polling: let it
    poll_once();
  }

  /// One round: what was issued joins what is in flight, every operation's requests are tested,
  /// the complete ones finished and fired. True if anything completed. Holds `poll_m_`.
  bool poll_once() {
    {
      std::lock_guard lock(m_);
      for (auto& p : fresh_) active_.push_back(std::move(p));
      fresh_.clear();
    }
    bool moved = false;
    for (std::size_t i = 0; i < active_.size();) {
      pending& p = *active_[i];
      int flag = 0;
      statuses_.resize(p.reqs.size());
      const int rc =
          MPI_Testall(static_cast<int>(p.reqs.size()), p.reqs.data(), &flag, statuses_.data());
      if (rc != MPI_SUCCESS) {
        int code = rc;
        for (const MPI_Status& st : statuses_)
          if (st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != MPI_ERR_PENDING) code = st.MPI_ERROR;
        set_fault("weft: mpi: " + p.what() + " failed: " + detail::error_string(code));
        active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (!flag) {
        ++i;
        continue;
      }
      if (p.expect >= 0) {
        int got = 0;
        MPI_Get_count(&statuses_[0], type_of(p.expect_type), &got);
        if (got != p.expect) {
          set_fault("weft: mpi: a " + p.what() + " expected " + std::to_string(p.expect) + " " +
                    rt::name_of(p.expect_type) + " values and got " + std::to_string(got));
          active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
      }
      // Out of the list before it fires: a waiter may poll again at once.
      const std::shared_ptr<pending> done = std::move(active_[i]);
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
      if (done->then) done->then();
      done->done.fire();
      moved = true;
    }
    idle_.store(active_.empty());
    return moved;
  }

  /// Completes what is in flight (with the host threads that poll meanwhile), makes the calls a
  /// progress thread owns, and watches for failure notices and the launcher ending the job.
  void progress_loop() {
    std::vector<std::function<void()>> commands;
    auto last_progress = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::unique_lock lock(m_);
        if (idle_.load() && commands_.empty() && fresh_.empty() && !stop_)
          wake_.wait_for(lock, std::chrono::milliseconds(5));
        if (stop_) break;
        if (!fresh_.empty()) last_progress = std::chrono::steady_clock::now();  // traffic: spin
        commands.assign(std::make_move_iterator(commands_.begin()),
                        std::make_move_iterator(commands_.end()));
        commands_.clear();
      }
      bool moved = !commands.empty();
      for (auto& cmd : commands) {
        try {
          cmd();
        } catch (const std::exception& e) {
          set_fault(e.what());
        }
      }
      commands.clear();
      // While a host thread polls, it completes what it can: this thread stays out of its way
      // and off the cores it needs (each of its wake-ups would preempt the poller), looking in
      // every 5 ms for what nobody waits on.
      const auto polled = std::chrono::steady_clock::time_point(
          std::chrono::steady_clock::duration(host_polled_.load(std::memory_order_relaxed)));
      if (std::chrono::steady_clock::now() - polled < std::chrono::milliseconds(1)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      std::unique_lock poll(poll_m_, std::try_to_lock);
      if (poll) {
        moved = poll_once() || moved;
        std::string why = notice();
        if (why.empty() && environment::launcher_ending())
          why = "the launcher is ending the job: another rank exited, was killed or failed";
        if (!why.empty() || failed_.load() || !fault().empty()) {
          // The world cannot finish: drop what is in flight (a receive cancelled writes
          // nothing) before the fault is told, so that a caller who has seen it may free its
          // buffers.
          drop(active_);
          if (!why.empty()) set_fault(std::move(why));
          std::lock_guard lock(m_);
          in_flight_dropped_ = true;
          dropped_.notify_all();
        }
        idle_.store(active_.empty());
        poll.unlock();  // before the back-off: a host thread may take over
      }
      const auto now = std::chrono::steady_clock::now();
      if (moved) last_progress = now;
      if (idle_.load()) continue;
      if (poll && now - last_progress < opt_.spin)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  /// Cancels point-to-point requests (MPI cannot cancel a collective) and lets go of all.
  static void drop(std::vector<std::shared_ptr<pending>>& active) {
    for (auto& p : active)
      for (MPI_Request& q : p->reqs) {
        if (q == MPI_REQUEST_NULL) continue;
        if (p->cancellable) MPI_Cancel(&q);
        MPI_Request_free(&q);
      }
    active.clear();
  }

  /// A failure notice from a peer, if one has come.
  std::string notice() {
    int flag = 0;
    MPI_Status st;
    if (notice_req_ == MPI_REQUEST_NULL || MPI_Test(&notice_req_, &flag, &st) != MPI_SUCCESS ||
        !flag)
      return {};
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    notice_req_ = MPI_REQUEST_NULL;
    return "rank " + std::to_string(st.MPI_SOURCE) + ": " +
           std::string(notice_.data(), static_cast<std::size_t>(std::max(0, len)));
  }

  options opt_;
  bool multiple_ = false;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  MPI_Comm p2p_ = MPI_COMM_NULL, groups_parent_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  MPI_Group world_group_ = MPI_GROUP_NULL;
  std::array<char, notice_size> notice_{};
  MPI_Request notice_req_ = MPI_REQUEST_NULL;

  mutable std::mutex fault_m_;
  std::string fault_;

  std::atomic<bool> failed_{false};  ///< this rank announced a failure
  std::atomic<bool> idle_{true};     ///< nothing in flight, as of the last round
  /// When a host thread last polled (steady_clock ticks).
  std::atomic<std::chrono::steady_clock::rep> host_polled_{0};

  std::mutex poll_m_;  ///< one thread polls at a time; guards what follows
  std::vector<std::shared_ptr<pending>> active_;
  std::vector<MPI_Status> statuses_;

  std::mutex m_;  ///< guards what follows
  std::condition_variable wake_, dropped_;
  bool stop_ = false;
  bool in_flight_dropped_ = false;
  std::vector<std::unique_ptr<group>> groups_;
  std::vector<std::shared_ptr<pending>> fresh_;  ///< issued, not yet seen by the progress thread
  std::deque<std::function<void()>> commands_;   ///< MPI calls for the progress thread to make
  std::vector<std::thread> creators_;
  std::thread progress_;
};

}  // namespace weft::mpi
