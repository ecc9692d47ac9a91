// Overlap has a price: the clock-ordered event simulator for a cost model with contention
// (`basic_cost_model::contention`). Readiness is the one semantics' (unit_time.hpp's arrival
// times); what changes is time. Every unit in progress drains its work at a rate: a comm unit's
// volume at its max-min fair share of the links on its path, slowed while its device computes;
// a compute unit's work slowed while its device has communication in flight. Rates change only
// when a unit starts, leaves its fixed part (latency) or ends, so time advances from event to
// event. A unit whose rate stays 1 ends exactly at its start plus its cost, as in the plain
// simulator: with nothing shared and no interference the two agree to the bit.
#pragma once

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
/// resource is full, whose flows then keep that rate. `paths[f]` lists flow f's resources.
class fair_share {
 public:
  void solve(const link_resources& links, const std::vector<flow_path>& paths,
             std::vector<double>& rate) {
    const std::size_t F = paths.size();
    rate.assign(F, 1.0);
    if (F == 0) return;
    used_.assign(links.size(), 0.0);
    unfrozen_.assign(links.size(), 0);
    frozen_.assign(F, 0);
    for (const auto& p : paths)
      for (const std::uint32_t r : p) ++unfrozen_[r];
    std::size_t left = F;
    while (left > 0) {
      double level = 1.0;
      for (std::uint32_t r = 0; r < links.size(); ++r)
        if (unfrozen_[r] > 0) {
          const double l = (links.capacity(r) - used_[r]) / unfrozen_[r];
          if (l < level) level = l;
        }
      if (level < 0) level = 0;
      // Freeze the flows of every resource that is full at this level (all, at rate 1).
      bool any = false;
      for (std::size_t f = 0; f < F; ++f) {
        if (frozen_[f]) continue;
        bool full = level >= 1.0;
        for (const std::uint32_t r : paths[f])
          full = full || (links.capacity(r) - used_[r]) / unfrozen_[r] <= level * (1 + 1e-12);
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

}  // namespace detail

/// Simulates `p` under a cost model whose `contention` is active (`simulate` calls it then).
template <time_type T>
basic_timeline<T> simulate_contended(const program& p, const basic_cost_model<T>& c,
                                     basic_sim_options<T> opt = {}) {
  const semantics g(p, {.slot_barrier = opt.slot_barrier});
  const contention_facts& facts = c.contention;
  const model_desc& m = g.model();
  detail::link_resources links;
  links.ranks = g.ranks();
  links.sites = c.site_ranks > 0 ? (g.ranks() + c.site_ranks - 1) / c.site_ranks : 1;
  links.uplink_capacity = facts.uplink_ports;
  const auto site_of = [&](int rank) { return c.site_ranks > 0 ? rank / c.site_ranks : 0; };
  const auto rank_of = [&](std::uint32_t x) { return static_cast<int>(p.rank[g.op_of(x)]); };
  const double compute_rate = 1.0 / (1.0 + facts.compute_slowdown);
  const double comm_rate = 1.0 / (1.0 + facts.comm_slowdown);

  readiness<> st(g);

  struct events : detail::timed_events<T> {
    const semantics* g = nullptr;
    std::priority_queue<detail::start_at<T>, std::vector<detail::start_at<T>>, std::greater<>>
        starts;
    void ready(std::uint32_t u) { starts.push({this->ready_at(*g, u), u}); }
  } ev;
  ev.g = &g;
  ev.arrive.assign(g.ops(), T{0});
  ev.finish.assign(g.ops(), T{-1});
  ev.latency = opt.event_latency;
  buffer<T> start(g.ops(), T{-1});
  buffer<std::uint8_t> done(g.ops(), 0);
  std::uint32_t finished = 0;

  // A unit in progress. While `exact`, its rate has been 1 throughout and it ends at
  // `plain_end` (start plus its span, as the plain simulator says); after its first other rate,
  // it drains `fixed_left` with time and `work_left` at `rate` from `anchor`.
  struct running {
    std::uint32_t unit;
    bool comm = false, volume = true, exact = true;
    int ranks[2] = {-1, -1};
    detail::flow_path path;
    T begin{0}, plain_end{0}, fixed_end{0};
    T anchor{0}, fixed_left{0}, work_left{0};
    double rate = 1;

    T next_event() const {
      if (!volume) return exact ? fixed_end : anchor + fixed_left;
      return exact ? plain_end : anchor + work_left / rate;
    }
    void set_rate(double r, T now) {
      if (r == rate) return;
      if (exact) {
        exact = false;
        if (!volume) {
          fixed_left = fixed_end - now;
          work_left = plain_end - fixed_end;
        } else {
          fixed_left = T{0};
          work_left = plain_end - now;
        }
      } else if (!volume) {
        fixed_left -= now - anchor;
      } else {
        work_left -= (now - anchor) * rate;
      }
      anchor = now;
      rate = r;
    }
  };
  std::vector<running> active;
  std::vector<int> comm_on(static_cast<std::size_t>(g.ranks()), 0),
      compute_on(static_cast<std::size_t>(g.ranks()), 0);
  std::vector<detail::flow_path> paths;
  std::vector<double> rates;
  std::vector<std::size_t> flow_of;
  std::vector<double> share;
  detail::fair_share solver;

  const auto rerate = [&](T now) {
    paths.clear();
    flow_of.clear();
    if (facts.shared_links)
      for (std::size_t i = 0; i < active.size(); ++i)
        if (active[i].comm && active[i].volume && active[i].path.n > 0) {
          paths.push_back(active[i].path);
          flow_of.push_back(i);
        }
    solver.solve(links, paths, share);
    rates.assign(active.size(), 1.0);
    for (std::size_t f = 0; f < flow_of.size(); ++f) rates[flow_of[f]] = share[f];
    for (std::size_t i = 0; i < active.size(); ++i) {
      running& a = active[i];
      bool slowed = false;
      for (const int r : a.ranks)
        if (r >= 0)
          slowed = slowed || (a.comm ? compute_on[static_cast<std::size_t>(r)] > 0
                                     : comm_on[static_cast<std::size_t>(r)] > 0);
      if (slowed) rates[i] *= a.comm ? comm_rate : compute_rate;
      a.set_rate(rates[i], now);
    }
  };

  const auto begin_unit = [&](std::uint32_t u, T now) {
    running a;
    a.unit = u;
    a.begin = now;
    const T span = span_of(g, c, ev.arrive, u);
    a.plain_end = now + span;
    const unit_kind uk = g.kind_of(u);
    int n = 0;
    std::uint32_t send = npos, recv = npos, lead = npos;
    g.each_member(u, [&](std::uint32_t x) {
      const op& o = g.at(x);
      a.comm = a.comm || stream_of(o.k) == stream_class::comm;
      if (lead == npos) lead = x;
      if (o.k == kind::send) send = x;
      if (o.k == kind::recv) recv = x;
      const int r = rank_of(x);
      if (n < 2 && (n == 0 || a.ranks[0] != r)) a.ranks[n++] = r;
    });
    if (uk == unit_kind::pair) a.comm = false;
    if (a.comm) {
      // Its fixed part: the rendezvous wait (span beyond cost) and the link latency.
      const op& o = g.at(recv != npos ? recv : lead);
      const T fixed = (span - cost_of(g, c, u)) + c.fixed_of(o, m);
      a.fixed_end = now + fixed;
      a.volume = !(fixed > T{0});
      if (send != npos && recv != npos) {
        const int from = rank_of(send), to = rank_of(recv);
        a.path.add(links.port(from, facts.p2p, false));
        a.path.add(links.port(to, facts.p2p, true));
        if (links.uplink_capacity > 0 && site_of(from) != site_of(to))
          a.path.add(links.uplink(site_of(from), site_of(to)));
      } else {
        const link_class cls = is_collective(o.k) ? facts.collectives
                               : is_p2p(o.k)      ? facts.p2p
                                                  : facts.a2a;
        a.path.add(links.port(a.ranks[0], cls, false));
        a.path.add(links.port(a.ranks[0], cls, true));
      }
    }
    for (const int r : a.ranks)
      if (r >= 0) ++(a.comm ? comm_on : compute_on)[static_cast<std::size_t>(r)];
    g.each_member(u, [&](std::uint32_t x) { start[x] = now; });
    active.push_back(std::move(a));
  };

  st.begin(ev);
  constexpr double never = std::numeric_limits<double>::infinity();
  while (!ev.starts.empty() || !active.empty()) {
    std::size_t next = active.size();
    T t_active = T{never};
    for (std::size_t i = 0; i < active.size(); ++i)
      if (const T t = active[i].next_event(); next == active.size() || t < t_active) {
        t_active = t;
        next = i;
      }
    if (!ev.starts.empty() && (next == active.size() || ev.starts.top().at < t_active)) {
      const T now = ev.starts.top().at;
      while (!ev.starts.empty() && ev.starts.top().at == now) {
        begin_unit(ev.starts.top().unit, now);
        ev.starts.pop();
      }
      rerate(now);
      continue;
    }
    running& a = active[next];
    const T now = t_active;
    if (!a.volume) {  // its latency has passed: its volume starts to flow
      a.volume = true;
      if (!a.exact) {
        a.fixed_left = T{0};
        a.anchor = now;
      }
      rerate(now);
      continue;
    }
    const std::uint32_t u = a.unit;
    for (const int r : a.ranks)
      if (r >= 0) --(a.comm ? comm_on : compute_on)[static_cast<std::size_t>(r)];
    active[next] = std::move(active.back());
    active.pop_back();
    g.each_member(u, [&](std::uint32_t x) {
      ev.finish[x] = now;
      done[x] = 1;
    });
    finished += g.member_count(u);
    st.complete_unit(u, ev);
    rerate(now);
  }
  basic_timeline<T> t;
  detail::settle(g, ev, start, done, finished, t);
  return t;
}

}  // namespace weft
