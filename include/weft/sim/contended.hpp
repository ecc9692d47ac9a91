// Overlap has a price: the clock-ordered event simulator for a cost model with contention
// (`basic_cost_model::contention`). Readiness is the one semantics' (unit_time.hpp's arrival
// times); what changes is time. Every unit in progress drains its work at a rate: a comm unit's
// volume at its max-min fair share of the links on its path, slowed while its device computes;
// a compute unit's work slowed while its device has communication in flight. Rates change only
// when a unit starts, leaves its fixed part (latency) or ends, so time advances from event to
// event. A unit whose rate stays 1 ends exactly at its start plus its cost, as in the plain
// simulator: with nothing shared and no interference the two agree to the bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include <weft/core/buffer.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/unit_time.hpp>

namespace weft {

namespace detail {

/// The resources communication moves over: per rank an egress and an ingress port of each link
/// class, per ordered pair of sites an uplink.
struct link_resources {
  int ranks = 1, sites = 1;
  double uplink_capacity = 0;  ///< in ports' worth; 0: no uplink resource

  constexpr std::uint32_t port(int rank, link_class cls, bool ingress) const noexcept {
    return static_cast<std::uint32_t>((rank * 2 + static_cast<int>(cls)) * 2 + (ingress ? 1 : 0));
  }
  constexpr std::uint32_t uplink(int from, int to) const noexcept {
    return static_cast<std::uint32_t>(4 * ranks + from * sites + to);
  }
  constexpr std::uint32_t size() const noexcept {
    return static_cast<std::uint32_t>(4 * ranks + sites * sites);
  }
  constexpr double capacity(std::uint32_t r) const noexcept {
    return r < static_cast<std::uint32_t>(4 * ranks) ? 1.0 : uplink_capacity;
  }
};

/// The resources a flow moves over (at most a port out, a port in and an uplink).
struct flow_path {
  std::uint32_t res[3] = {};
  int n = 0;
  constexpr const std::uint32_t* begin() const noexcept { return res; }
  constexpr const std::uint32_t* end() const noexcept { return res + n; }
  constexpr void add(std::uint32_t r) noexcept { res[n++] = r; }
};

/// Max-min fair rates by progressive filling: every flow moves at full rate alone (rate 1 uses
/// one port's worth of each resource on its path); all unfrozen flows rise together until a
/// resource is full, whose flows then keep that rate. `paths[f]` lists flow f's resources, as
/// indices into `capacity` (in ports' worth).
class fair_share {
 public:
  void solve(const std::vector<double>& capacity, const std::vector<flow_path>& paths,
             std::vector<double>& rate) {
    const std::size_t F = paths.size(), R = capacity.size();
    rate.assign(F, 1.0);
    if (F == 0) return;
    used_.assign(R, 0.0);
    unfrozen_.assign(R, 0);
    frozen_.assign(F, 0);
    for (const auto& p : paths)
      for (const std::uint32_t r : p) ++unfrozen_[r];
    std::size_t left = F;
    while (left > 0) {
      double level = 1.0;
      for (std::size_t r = 0; r < R; ++r)
        if (unfrozen_[r] > 0) {
          const double l = (capacity[r] - used_[r]) / unfrozen_[r];
          if (l < level) level = l;
        }
      if (level < 0) level = 0;
      // Freeze the flows of every resource that is full at this level (all, at rate 1).
      bool any = false;
      for (std::size_t f = 0; f < F; ++f) {
        if (frozen_[f]) continue;
        bool full = level >= 1.0;
        for (const std::uint32_t r : paths[f])
          full = full || (capacity[r] - used_[r]) / unfrozen_[r] <= level * (1 + 1e-12);
        if (!full) continue;
        frozen_[f] = 1;
        rate[f] = level;
        any = true;
        --left;
      }
      if (!any) break;  // cannot happen: the bottleneck's flows freeze
      for (std::size_t f = 0; f < F; ++f)
        if (frozen_[f] == 1) {
          frozen_[f] = 2;
          for (const std::uint32_t r : paths[f]) {
            used_[r] += rate[f];
            --unfrozen_[r];
          }
        }
    }
  }
  /// The same over every resource of `links`.
  void solve(const link_resources& links, const std::vector<flow_path>& paths,
             std::vector<double>& rate) {
    std::vector<double> capacity(links.size());
    for (std::uint32_t r = 0; r < links.size(); ++r) capacity[r] = links.capacity(r);
    solve(capacity, paths, rate);
  }

 private:
  std::vector<double> used_;
  std::vector<int> unfrozen_;
  std::vector<std::uint8_t> frozen_;
};

/// A unit that becomes ready at `at`: the start queue's entries, earliest (then lowest unit) first.
template <time_type T>
struct start_at {
  T at;
  std::uint32_t unit;
  friend bool operator>(const start_at& a, const start_at& b) noexcept {
    return a.at > b.at || (a.at == b.at && a.unit > b.unit);
  }
};

/// The next event of every unit in progress, earliest (then lowest slot) first; a slot's time
/// moves when its rate changes (an indexed heap: one entry per unit, updated in place). Entries
/// hold their time, so a comparison reads the heap's own array and nothing beside it.
template <time_type T>
class slot_heap {
 public:
  bool empty() const noexcept { return heap_.empty(); }
  std::uint32_t top() const noexcept { return heap_[0].slot; }
  T top_at() const noexcept { return heap_[0].at; }
  void set(std::uint32_t s, T at) {
    if (s >= pos_.size()) pos_.resize(s + 1, npos);
    const entry e{at, s};
    std::uint32_t i = pos_[s];
    if (i == npos) {
      i = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(e);
      return place(up(i, e), e);
    }
    place(before(e, heap_[i]) ? up(i, e) : down(i, e), e);
  }
  /// Takes the earliest entry out.
  void pop() {
    pos_[heap_[0].slot] = npos;
    const entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) place(down(0, last), last);
  }

 private:
  struct entry {
    T at;
    std::uint32_t slot;
  };
  std::vector<entry> heap_;
  std::vector<std::uint32_t> pos_;
  static bool before(const entry& a, const entry& b) noexcept {
    return a.at < b.at || (a.at == b.at && a.slot < b.slot);
  }
  void place(std::uint32_t i, const entry& e) noexcept {
    heap_[i] = e;
    pos_[e.slot] = i;
  }
  // Where `e` belongs below hole `i`, moving the entries it passes up (a hole, not swaps).
  std::uint32_t down(std::uint32_t i, const entry& e) noexcept {
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t c = 2 * i + 1;
      if (c >= n) return i;
      if (c + 1 < n && before(heap_[c + 1], heap_[c])) ++c;
      if (!before(heap_[c], e)) return i;
      place(i, heap_[c]);
      i = c;
    }
  }
  // Where `e` belongs above hole `i`, moving the entries it passes down.
  std::uint32_t up(std::uint32_t i, const entry& e) noexcept {
    while (i > 0) {
      const std::uint32_t parent = (i - 1) / 2;
      if (!before(e, heap_[parent])) return i;
      place(i, heap_[parent]);
      i = parent;
    }
    return i;
  }
};

/// One run of the rate simulator. Rates are kept current incrementally: a unit's start, the end
/// of its fixed part and its end change only the compute on its ranks (when their communication
/// starts or stops), the communication on its ranks (when their compute does) and the flows that
/// share a resource with it, directly or through other flows (its component of the link graph,
/// whose fair shares are solved again). Each unit's next event sits in an indexed heap, moved
/// when its rate changes.
template <time_type T>
class contended_run {
 public:
  contended_run(const program& p, const basic_cost_model<T>& c, basic_sim_options<T> opt)
      : p_(p),
        g_(p, {.slot_barrier = opt.slot_barrier}),
        c_(c),
        f_(c.contention),
        st_(g_),
        compute_rate_(1.0 / (1.0 + f_.compute_slowdown)),
        comm_rate_(1.0 / (1.0 + f_.comm_slowdown)),
        record_slowed_(opt.record_slowed) {
    links_.ranks = g_.ranks();
    links_.sites = c.site_ranks > 0 ? (g_.ranks() + c.site_ranks - 1) / c.site_ranks : 1;
    links_.uplink_capacity = f_.uplink_ports;
    const auto R = static_cast<std::size_t>(g_.ranks());
    compute_on_.resize(R);
    comm_on_.resize(R);
    flows_on_.resize(links_.size());
    res_mark_.assign(links_.size(), 0);
    ev_.g = &g_;
    ev_.arrive.assign(g_.ops(), T{0});
    ev_.finish.assign(g_.ops(), T{-1});
    ev_.latency = opt.event_latency;
    start_.assign(g_.ops(), T{-1});
    done_.assign(g_.ops(), 0);
  }

  basic_timeline<T> run() {
    st_.begin(ev_);
    while (true) {
      // At one time, ends first (what a unit frees is there for the units that start then),
      // then the starts; then the clock moves to the next event.
      if (!due_.empty() && !(now_ < due_.top_at())) {
        const std::uint32_t slot = due_.top();
        if (slots_[slot].at + 1 < slots_[slot].count)
          end_part(slot, now_);
        else
          end_unit(slot, now_);
        continue;
      }
      if (!ev_.now.empty()) {
        starting_.swap(ev_.now);
        for (const std::uint32_t u : starting_) begin_unit(u, now_);
        starting_.clear();
        continue;
      }
      if (ev_.later.empty() && due_.empty()) break;
      if (!ev_.later.empty() && (due_.empty() || ev_.later.top().at < due_.top_at())) {
        ev_.clock = now_ = ev_.later.top().at;
        while (!ev_.later.empty() && ev_.later.top().at == now_) {
          ev_.now.push_back(ev_.later.top().unit);
          ev_.later.pop();
        }
      } else {
        ev_.clock = now_ = due_.top_at();
      }
    }
    basic_timeline<T> t;
    settle(g_, ev_, start_, done_, finished_, t);
    t.slowed = std::move(slowed_);
    return t;
  }

 private:
  // What a unit in progress does in turn: wait out its fixed part (latency, rendezvous: time
  // alone drains it), compute (slowed while its ranks communicate), move a volume over `path`
  // (at its fair share, slowed while its ranks compute). An op with tensor-parallel
  // communication inside moves its first part, does its own work (a comm op after its wait),
  // then moves the rest.
  enum class doing : std::uint8_t { wait, compute, move };
  struct part {
    doing what = doing::compute;
    T length{0};  ///< at rate 1
    flow_path path;
  };
  // A unit in progress. While `exact`, its rate has been 1 throughout: part i ends at its start
  // plus the lengths so far, the last at `plain_end` (start plus its span, as the plain
  // simulator says). After its first other rate it drains `left` of its current part at `rate`
  // from `anchor`.
  struct running {
    std::uint32_t unit = 0;
    std::uint32_t mark = 0;  ///< the last component search that found it
    part parts[4];
    int count = 0, at = 0;
    bool exact = true;
    int ranks[2] = {-1, -1};
    T begin{0}, plain_end{0};
    T anchor{0}, left{0};
    double rate = 1, share = 1;
    T slow_from{0};        ///< since when it runs at `slow_rate`
    double slow_rate = 1;  ///< its effective rate as last recorded

    // A slot taken again: its state from scratch, its search mark kept (parts are written as
    // they are added; clearing them all costs a unit more than anything else it does).
    void reset(std::uint32_t u, T now_at) {
      unit = u;
      count = at = 0;
      exact = true;
      ranks[0] = ranks[1] = -1;
      begin = now_at;
      rate = share = slow_rate = 1;
    }
    const part& now() const { return parts[at]; }
    bool comm() const { return now().what != doing::compute; }
    bool moving() const { return now().what == doing::move; }
    void add(doing what, T length, flow_path path = {}) {
      if (length > T{0}) parts[count++] = {what, length, path};
    }
    // Where part `i` ends at rate 1 throughout.
    T exact_end(int i) const {
      if (i == count - 1) return plain_end;
      T t = begin;
      for (int j = 0; j <= i; ++j) t += parts[j].length;
      return t < plain_end ? t : plain_end;
    }
    double effective_rate() const { return now().what == doing::wait ? 1.0 : rate; }
    T next_event() const { return exact ? exact_end(at) : anchor + left / effective_rate(); }
    bool set_rate(double r, T now_at) {
      if (r == rate) return false;
      if (exact) {
        exact = false;
        left = exact_end(at) - now_at;
      } else {
        left -= (now_at - anchor) * effective_rate();
      }
      anchor = now_at;
      rate = r;
      return true;
    }
    void next_part(T now_at) {
      ++at;
      if (!exact) {
        anchor = now_at;
        left = parts[at].length;
      }
    }
  };

  // Units that become ready: at the current time (`now`, the common case: nothing delays an
  // op after its last producer ends but an event latency), or later.
  struct events : timed_events<T> {
    const semantics* g = nullptr;
    T clock{0};
    std::vector<std::uint32_t> now;
    std::priority_queue<start_at<T>, std::vector<start_at<T>>, std::greater<>> later;
    void ready(std::uint32_t u) {
      // Without an event latency nothing arrives after the completion that readies it.
      if (!(this->latency > T{0})) return now.push_back(u);
      const T at = this->ready_at(*g, u);
      if (at > clock)
        later.push({at, u});
      else
        now.push_back(u);
    }
  };

  const program& p_;
  const semantics g_;
  const basic_cost_model<T>& c_;
  const contention_facts& f_;
  link_resources links_;
  readiness<> st_;
  events ev_;
  buffer<T> start_;
  buffer<std::uint8_t> done_;
  std::uint32_t finished_ = 0;
  double compute_rate_, comm_rate_;
  bool record_slowed_;
  T now_{0};
  std::vector<std::uint32_t> starting_;

  std::vector<running> slots_;
  std::vector<std::uint32_t> free_;
  slot_heap<T> due_;
  std::vector<std::vector<std::uint32_t>> compute_on_, comm_on_;  // per rank: slots
  std::vector<std::vector<std::uint32_t>> flows_on_;              // per resource: slots
  // A component's scratch: resources and flows found, marks by epoch.
  std::vector<std::uint32_t> res_mark_, comp_res_, comp_flows_;
  std::uint32_t epoch_ = 0;
  std::vector<double> capacity_, share_;
  buffer<basic_slowed<T>> slowed_;
  std::vector<flow_path> local_paths_;
  fair_share solver_;

  void schedule(std::uint32_t slot) {
    running& a = slots_[slot];
    due_.set(slot, a.next_event());
  }
  int rank_of(std::uint32_t x) const { return static_cast<int>(p_.rank[g_.op_of(x)]); }
  int site_of(int rank) const { return c_.site_ranks > 0 ? rank / c_.site_ranks : 0; }
  static void drop(std::vector<std::uint32_t>& v, std::uint32_t x) {
    for (std::uint32_t& y : v)
      if (y == x) {
        y = v.back();
        v.pop_back();
        return;
      }
  }
  // The interference on a unit: compute while its ranks communicate, communication while they
  // compute.
  double interference(const running& a) const {
    const bool comm = a.comm();
    for (const int r : a.ranks)
      if (r >= 0 && !(comm ? compute_on_ : comm_on_)[static_cast<std::size_t>(r)].empty())
        return comm ? comm_rate_ : compute_rate_;
    return 1.0;
  }
  // Sets a unit's rate from its share and the interference on it; true if that moved its event.
  bool rerate(std::uint32_t slot, T now) {
    running& a = slots_[slot];
    const bool moved = a.set_rate(a.share * interference(a), now);
    if (moved) schedule(slot);
    track(slot, now, a.effective_rate());
    return moved;
  }
  // Records where a unit ran below full rate: a stretch per rate, for the pictures.
  void track(std::uint32_t slot, T now, double rate) {
    if (!record_slowed_) return;
    running& a = slots_[slot];
    if (rate == a.slow_rate) return;
    if (a.slow_rate < 1 && a.slow_from < now)
      g_.each_member(a.unit, [&](std::uint32_t x) {
        if (x < g_.size()) slowed_.push_back({x, a.slow_from, now, a.slow_rate});
      });
    a.slow_rate = rate;
    a.slow_from = now;
  }
  // Units on rank r whose interference may have changed: its compute when communication there
  // started or stopped (`comm` true), its communication when compute did.
  void rerate_rank(int r, bool comm, T now) {
    if ((comm ? f_.compute_slowdown : f_.comm_slowdown) <= 0) return;
    for (const std::uint32_t s : (comm ? compute_on_ : comm_on_)[static_cast<std::size_t>(r)])
      rerate(s, now);
  }
  void join(std::uint32_t slot, int sign, T now);
  void rebalance(const flow_path& from, T now);
  void enter_flow(std::uint32_t slot, T now);
  void leave_flow(std::uint32_t slot, T now);
  void begin_unit(std::uint32_t u, T now);
  void end_part(std::uint32_t slot, T now);
  void end_unit(std::uint32_t slot, T now);
};

// A unit joins (sign 1) or leaves (-1) its ranks' lists; where a list turns empty or non-empty,
// the other class's units there change rate.
template <time_type T>
void contended_run<T>::join(std::uint32_t slot, int sign, T now) {
  const running& a = slots_[slot];
  const bool comm = a.comm();
  for (const int r : a.ranks) {
    if (r < 0) continue;
    auto& list = (comm ? comm_on_ : compute_on_)[static_cast<std::size_t>(r)];
    const bool was = !list.empty();
    if (sign > 0)
      list.push_back(slot);
    else
      drop(list, slot);
    if (was != !list.empty()) rerate_rank(r, comm, now);
  }
}

// Solves the fair shares of the component of the link graph that holds `from`'s resources again.
template <time_type T>
void contended_run<T>::rebalance(const flow_path& from, T now) {
  if (!f_.shared_links) return;
  // The common case: a flow alone on its resources, or none left on them.
  std::size_t most = 0;
  bool narrow = false;
  for (const std::uint32_t r : from) {
    most = std::max(most, flows_on_[r].size());
    narrow = narrow || links_.capacity(r) < 1;
  }
  if (most == 0) return;
  if (most == 1 && !narrow) {
    const std::uint32_t only = flows_on_[from.res[0]].empty() ? npos : flows_on_[from.res[0]][0];
    bool alone = only != npos;
    for (const std::uint32_t r : from)
      alone = alone && flows_on_[r].size() == 1 && flows_on_[r][0] == only;
    if (alone) {
      slots_[only].share = 1;
      rerate(only, now);
      return;
    }
  }
  ++epoch_;
  comp_res_.clear();
  comp_flows_.clear();
  const auto visit = [&](std::uint32_t r) {
    if (res_mark_[r] == epoch_) return;
    res_mark_[r] = epoch_;
    comp_res_.push_back(r);
  };
  for (const std::uint32_t r : from) visit(r);
  for (std::size_t i = 0; i < comp_res_.size(); ++i)
    for (const std::uint32_t s : flows_on_[comp_res_[i]]) {
      running& a = slots_[s];
      if (a.mark == epoch_) continue;
      a.mark = epoch_;
      comp_flows_.push_back(s);
      for (const std::uint32_t r : a.now().path) visit(r);
    }
  capacity_.resize(comp_res_.size());
  for (std::size_t i = 0; i < comp_res_.size(); ++i) capacity_[i] = links_.capacity(comp_res_[i]);
  local_paths_.clear();
  for (const std::uint32_t s : comp_flows_) {
    flow_path local;
    for (const std::uint32_t r : slots_[s].now().path)
      for (std::uint32_t i = 0; i < comp_res_.size(); ++i)
        if (comp_res_[i] == r) local.add(i);
    local_paths_.push_back(local);
  }
  solver_.solve(capacity_, local_paths_, share_);
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    slots_[comp_flows_[i]].share = share_[i];
    rerate(comp_flows_[i], now);
  }
}

// Slot `slot` starts moving its current part's volume, or stops: its flows join or leave the
// resources on their path, whose fair shares are solved again.
template <time_type T>
void contended_run<T>::enter_flow(std::uint32_t slot, T now) {
  if (!f_.shared_links || !slots_[slot].moving()) return;
  for (const std::uint32_t r : slots_[slot].now().path) flows_on_[r].push_back(slot);
  rebalance(slots_[slot].now().path, now);
}

template <time_type T>
void contended_run<T>::leave_flow(std::uint32_t slot, T now) {
  running& a = slots_[slot];
  if (!f_.shared_links || !a.moving()) return;
  for (const std::uint32_t r : a.now().path) drop(flows_on_[r], slot);
  a.share = 1;
  rebalance(a.now().path, now);
}

template <time_type T>
void contended_run<T>::begin_unit(std::uint32_t u, T now) {
  std::uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  running& a = slots_[slot];
  a.reset(u, now);
  const unit_kind uk = g_.kind_of(u);
  int n = 0;
  bool comm = false;
  std::uint32_t send = npos, recv = npos, lead = npos;
  const auto member = [&](std::uint32_t x) {
    const op& o = g_.at(x);
    comm = comm || stream_of(o.k) == stream_class::comm;
    if (lead == npos) lead = x;
    if (o.k == kind::send) send = x;
    if (o.k == kind::recv) recv = x;
    const int r = rank_of(x);
    if (n < 2 && (n == 0 || a.ranks[0] != r)) a.ranks[n++] = r;
    start_[x] = now;
  };
  if (uk == unit_kind::solo)
    member(u);  // most units: called here, where it inlines
  else
    g_.each_member(u, member);
  const op& o = g_.at(recv != npos ? recv : lead);
  const bool pair = uk == unit_kind::pair;
  // The op's parts once (its cost alone when it is its unit's only member).
  const auto pc = pair ? typename basic_cost_model<T>::parts{} : c_.parts_of(o, g_.model());
  const T cost = uk != unit_kind::solo ? cost_of(g_, c_, u) : pc.whole > T{0} ? pc.whole : T{0};
  const T span = uk == unit_kind::transfer ? span_of(g_, c_, ev_.arrive, u) : cost;
  const T tp = pc.tp_comm, first = pc.tp_first;
  a.plain_end = now + span;
  const auto ports = [&](int rank, link_class cls) {
    flow_path path;
    path.add(links_.port(rank, cls, false));
    path.add(links_.port(rank, cls, true));
    return path;
  };
  if (pair || !comm) {
    a.add(doing::move, first, ports(a.ranks[0], f_.collectives));
    a.add(doing::compute, span - tp);
    a.add(doing::move, tp - first, ports(a.ranks[0], f_.collectives));
  } else {
    // Its fixed part: the rendezvous wait (span beyond cost) and the link latency.
    const T fixed = (span - cost) + pc.fixed;
    flow_path path;
    if (send != npos && recv != npos) {
      const int from = rank_of(send), to = rank_of(recv);
      path.add(links_.port(from, f_.p2p, false));
      path.add(links_.port(to, f_.p2p, true));
      if (links_.uplink_capacity > 0 && site_of(from) != site_of(to))
        path.add(links_.uplink(site_of(from), site_of(to)));
    } else {
      path = ports(a.ranks[0], f_.class_of(o.k, o.ph));
    }
    a.add(doing::wait, fixed);
    a.add(doing::move, first, ports(a.ranks[0], f_.collectives));
    a.add(doing::move, span - fixed - tp, path);
    a.add(doing::move, tp - first, ports(a.ranks[0], f_.collectives));
  }
  if (a.count == 0) a.parts[a.count++] = {comm ? doing::wait : doing::compute, T{0}, {}};
  join(slot, 1, now);
  if (!rerate(slot, now)) schedule(slot);  // into the heap once, at its first rate
  enter_flow(slot, now);
}

// The end of a part that is not the last: the unit moves on to its next part, changing its
// class (compute or communication) or its flow where the two parts differ.
template <time_type T>
void contended_run<T>::end_part(std::uint32_t slot, T now) {
  const bool was_comm = slots_[slot].comm();
  leave_flow(slot, now);
  if (was_comm != (slots_[slot].parts[slots_[slot].at + 1].what != doing::compute)) {
    join(slot, -1, now);
    slots_[slot].next_part(now);
    join(slot, 1, now);
  } else {
    slots_[slot].next_part(now);
  }
  if (!rerate(slot, now)) schedule(slot);
  enter_flow(slot, now);
}

template <time_type T>
void contended_run<T>::end_unit(std::uint32_t slot, T now) {
  running& a = slots_[slot];
  due_.pop();  // the unit that ends is the earliest event
  free_.push_back(slot);
  const std::uint32_t u = a.unit;
  const bool flow = a.moving() && f_.shared_links;
  const flow_path path = a.now().path;
  track(slot, now, 1);
  if (flow)
    for (const std::uint32_t r : path) drop(flows_on_[r], slot);
  join(slot, -1, now);
  const auto finish = [&](std::uint32_t x) {
    ev_.finish[x] = now;
    done_[x] = 1;
  };
  if (g_.kind_of(u) == unit_kind::solo)
    finish(u);
  else
    g_.each_member(u, finish);
  finished_ += g_.member_count(u);
  st_.complete_unit(u, ev_);
  if (flow) rebalance(path, now);
}

}  // namespace detail

/// Simulates `p` under a cost model whose `contention` is active (`simulate` calls it then).
template <time_type T>
basic_timeline<T> simulate_contended(const program& p, const basic_cost_model<T>& c,
                                     basic_sim_options<T> opt = {}) {
  c.check_chunks(p.source.model);
  return detail::contended_run<T>(p, c, opt).run();
}

}  // namespace weft
