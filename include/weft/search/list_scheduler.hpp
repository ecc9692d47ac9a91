// Building plans: a list scheduler at the pipeline level, in the manner of zero-bubble's greedy
// auto-scheduler. Ranks take steps as time goes on; a rank that is free takes a ready backward
// first (it frees memory and is on the critical path; or the forward first, as 1F1B's steady
// phase), else a forward while its live activations and its forwards ahead of their backwards
// stay under limits, else a deferred dW to fill the wait, else it idles until something
// arrives. A `list_policy` sets the limit and the choices; the search tries many.
// Step durations are estimates from the cost model (each step's sub-stage slots, one after
// another, a slot as long as its longest op); the plans it returns are judged by the simulator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

#include <weft/generators/stage_ops.hpp>
#include <weft/search/evaluate.hpp>
#include <weft/search/step_costs.hpp>

namespace weft::search {

/// How the list scheduler chooses.
struct list_policy {
  /// Live activation units a rank may hold (its forwards claim them, its last backward op of a
  /// unit frees it); 0: the problem's cap (model.max_live), or no limit without one.
  int live_limit = 0;
  /// Backwards as dX then a deferred dW (zero bubble); else fused.
  bool split = false;
  /// A forward and a backward both ready run as an overlapped pair (DualPipe's F&B).
  bool pair = false;
  /// Among ready forwards, the later chunk first (finish a micro-batch's pass through the
  /// rank's chunks); else the earlier (start more micro-batches).
  bool later_chunk_first = true;
  /// A deferred dW fills a wait only when it ends before the next step is ready; else any wait.
  bool fit_weights = false;
  /// Forwards whose backward has not started, at most `inflight - stagger * rank` on a rank (at
  /// least 1); 0: no limit but the live one. 1F1B is inflight = ranks, stagger 1: its warm-up
  /// depth; the live limit then leaves the rest of the memory to deferred dW.
  int inflight = 0;
  int stagger = 0;
  /// A forward and a backward both ready (and not paired): the forward first, as 1F1B's steady
  /// phase issues them; else the backward.
  bool forward_first = false;
};

namespace detail {
/// A pipeline transfer's cost from chunk `from` to chunk `to` (none on one rank).
template <time_type T>
T hop(const basic_problem<T>& q, int mb, int from, int to, phase ph) {
  const model_desc& m = q.model;
  if (m.rank_of(from) == m.rank_of(to)) return T{0};
  return q.cost.of(make_op(kind::send, ph, mb, from, 0, 0, 0), m);
}
}  // namespace detail

/// The plan the list scheduler makes for `q` under `pol`; nothing when the policy cannot finish
/// (a live limit too small for the placement: every rank waits for memory no backward frees).
/// With `prefix`, each rank r first takes the first `keep[r]` steps of `prefix` (a plan of `q`
/// that keeps every chunk's micro-batches in order) as they come, and the policy only chooses
/// after them: the search's ruin-and-recreate move.
template <time_type T>
std::optional<plan> list_schedule(const basic_problem<T>& q, const list_policy& pol,
                                  const plan* prefix = nullptr,
                                  const std::vector<std::size_t>& keep = {}) {
  const model_desc& m = q.model;
  const step_costs<T> cost(q);
  const int R = m.ranks, C = m.chunks(), M = m.micro;
  const int limit = pol.live_limit > 0 ? pol.live_limit
                    : m.max_live > 0   ? m.max_live
                                       : std::numeric_limits<int>::max();
  constexpr double never = std::numeric_limits<double>::infinity();
  // Per chunk, the micro-batches that pass it, in order; the next forward and backward of each.
  std::vector<std::vector<int>> mbs(static_cast<std::size_t>(C));
  for (int mb = 0; mb < M; ++mb)
    for (int c = m.first_chunk(mb); c < m.end_chunk(mb); ++c)
      mbs[static_cast<std::size_t>(c)].push_back(mb);
  std::vector<std::size_t> next_f(static_cast<std::size_t>(C), 0), next_b(next_f);
  // Completion times (as doubles of T's count), never until scheduled.
  const auto at = [&](int mb, int c) {
    return static_cast<std::size_t>(mb) * static_cast<std::size_t>(C) + static_cast<std::size_t>(c);
  };
  std::vector<double> f_done(static_cast<std::size_t>(M) * static_cast<std::size_t>(C), never),
      b_done(f_done);
  std::vector<double> free(static_cast<std::size_t>(R), 0.0);
  std::vector<int> live(static_cast<std::size_t>(R), 0);
  struct pending_w {
    int mb, chunk;
    double ready;
  };
  std::vector<std::deque<pending_w>> weights(static_cast<std::size_t>(R));
  std::vector<std::vector<int>> chunks_of(static_cast<std::size_t>(R));
  for (int c = 0; c < C; ++c) chunks_of[static_cast<std::size_t>(m.rank_of(c))].push_back(c);
  // A forward of a rank's chunk leaves room for one unit of each later chunk of the rank: the
  // micro-batch it starts has to pass them before its backward comes back to free anything.
  std::vector<int> reserve(static_cast<std::size_t>(C), 0);
  for (const auto& v : chunks_of)
    for (std::size_t i = 0; i < v.size(); ++i)
      reserve[static_cast<std::size_t>(v[i])] = static_cast<int>(v.size() - 1 - i);
  if (pol.later_chunk_first)
    for (auto& v : chunks_of) std::reverse(v.begin(), v.end());
  std::vector<int> ahead(static_cast<std::size_t>(R), 0);  // forwards awaiting their backward
  const auto may_claim = [&](std::size_t r, int c) {
    if (pol.inflight > 0 &&
        ahead[r] >= std::max(1, pol.inflight - pol.stagger * static_cast<int>(r)))
      return false;
    return live[r] + reserve[static_cast<std::size_t>(c)] < limit;
  };
  plan out{m, q.overlap, std::vector<std::vector<step>>(static_cast<std::size_t>(R))};
  std::size_t left = 0;
  for (int c = 0; c < C; ++c) left += 2 * mbs[static_cast<std::size_t>(c)].size();

  const auto f_ready = [&](int c) {  // when chunk c's next forward can start; never if none
    const auto& v = mbs[static_cast<std::size_t>(c)];
    const std::size_t k = next_f[static_cast<std::size_t>(c)];
    if (k >= v.size()) return never;
    const int mb = v[k], prev = m.prev_chunk(mb, c);
    if (prev < 0) return 0.0;
    const double d = f_done[at(mb, prev)];
    return d == never ? never : d + detail::hop(q, mb, prev, c, phase::F).count();
  };
  const auto b_ready = [&](int c) {
    const auto& v = mbs[static_cast<std::size_t>(c)];
    const std::size_t k = next_b[static_cast<std::size_t>(c)];
    if (k >= v.size() || k >= next_f[static_cast<std::size_t>(c)]) return never;
    const int mb = v[k], next = m.next_chunk(mb, c);
    const double own = f_done[at(mb, c)];
    if (next < 0) return own;
    const double d = b_done[at(mb, next)];
    return d == never ? never : std::max(own, d + detail::hop(q, mb, next, c, phase::B).count());
  };
  // The prefix's steps still to take on each rank, and when the next of them can start.
  std::vector<std::size_t> forced(static_cast<std::size_t>(R), 0);
  const auto forced_left = [&](std::size_t r) {
    return prefix && r < keep.size() && forced[r] < std::min(keep[r], prefix->ranks[r].size());
  };
  const auto find_w = [&](std::size_t r, int mb, int c) {
    auto& w = weights[r];
    return std::find_if(w.begin(), w.end(),
                        [&](const auto& x) { return x.mb == mb && x.chunk == c; });
  };
  const auto forced_ready = [&](std::size_t r) {
    const step& x = prefix->ranks[r][forced[r]];
    const auto next_is = [&](const std::vector<std::size_t>& next, int mb, int c) {
      const auto& v = mbs[static_cast<std::size_t>(c)];
      const std::size_t k = next[static_cast<std::size_t>(c)];
      return k < v.size() && v[k] == mb;
    };
    switch (x.a) {
      case action::F:
        return next_is(next_f, x.mb, x.chunk) ? f_ready(x.chunk) : never;
      case action::B:
      case action::I:
        return next_is(next_b, x.mb, x.chunk) ? b_ready(x.chunk) : never;
      case action::W: {
        const auto it = find_w(r, x.mb, x.chunk);
        return it == weights[r].end() ? never : it->ready;
      }
      case action::FB:
        return next_is(next_f, x.mb, x.chunk) && next_is(next_b, x.bmb, x.bchunk)
                   ? std::max(f_ready(x.chunk), b_ready(x.bchunk))
                   : never;
    }
    return never;
  };
  while (left > 0 ||
         std::any_of(weights.begin(), weights.end(), [](const auto& w) { return !w.empty(); })) {
    // The rank that can start something first, and what.
    int best_rank = -1;
    double best_t = never;
    for (int r = 0; r < R; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      if (forced_left(ri)) {
        const double t = std::max(forced_ready(ri), free[ri]);
        if (t < best_t) {
          best_t = t;
          best_rank = r;
        }
        continue;
      }
      double t = never;
      for (const int c : chunks_of[ri]) {
        t = std::min(t, b_ready(c));
        if (may_claim(ri, c)) t = std::min(t, f_ready(c));
      }
      if (!weights[ri].empty()) t = std::min(t, weights[ri].front().ready);
      if (t == never) continue;
      t = std::max(t, free[ri]);
      if (t < best_t) {
        best_t = t;
        best_rank = r;
      }
    }
    if (best_rank < 0) return std::nullopt;  // every rank waits for memory nothing frees
    const auto ri = static_cast<std::size_t>(best_rank);
    const double t = best_t;
    // Ready at t: a backward (the earliest ready), a forward (in chunk preference), a dW.
    int bc = -1, fc = -1;
    double bt = never, next_other = never;
    for (const int c : chunks_of[ri]) {
      const double b = b_ready(c);
      if (b <= t && b < bt) {
        bt = b;
        bc = c;
      }
      next_other = std::min(next_other, b);
      if (may_claim(ri, c)) {
        const double f = f_ready(c);
        if (f <= t && fc < 0) fc = c;
        next_other = std::min(next_other, f);
      }
    }
    std::vector<step>& steps = out.ranks[ri];
    const auto forward_done = [&](int c, double end) {
      const int mb = mbs[static_cast<std::size_t>(c)][next_f[static_cast<std::size_t>(c)]++];
      f_done[at(mb, c)] = end;
      ++live[ri];
      ++ahead[ri];
      --left;
      return mb;
    };
    const auto backward_done = [&](int c, double end, bool split) {
      const int mb = mbs[static_cast<std::size_t>(c)][next_b[static_cast<std::size_t>(c)]++];
      b_done[at(mb, c)] = end;
      --ahead[ri];
      --left;
      if (split)
        weights[ri].push_back({mb, c, end});
      else
        --live[ri];
      return mb;
    };
    if (forced_left(ri)) {  // the prefix's next step, whatever the policy would choose
      const step x = prefix->ranks[ri][forced[ri]++];
      double end = t;
      switch (x.a) {
        case action::F:
          end += cost.f.length.count();
          forward_done(x.chunk, end);
          break;
        case action::B:
        case action::I:
          end += (x.a == action::I ? cost.i : cost.b).length.count();
          backward_done(x.chunk, end, x.a == action::I);
          break;
        case action::W:
          end += cost.w.length.count();
          weights[ri].erase(find_w(ri, x.mb, x.chunk));
          --live[ri];
          break;
        case action::FB:
          end += cost.fb.length.count();
          forward_done(x.chunk, end);
          backward_done(x.bchunk, end, false);
          break;
      }
      steps.push_back(x);
      free[ri] = end;
    } else if (bc >= 0 && fc >= 0 && pol.pair) {
      const double end = t + cost.fb.length.count();
      const int fmb = forward_done(fc, end), bmb = backward_done(bc, end, false);
      steps.push_back({action::FB, static_cast<std::uint16_t>(fmb), static_cast<std::uint16_t>(fc),
                       static_cast<std::uint16_t>(bmb), static_cast<std::uint16_t>(bc)});
      free[ri] = end;
    } else if (bc >= 0 && !(fc >= 0 && pol.forward_first)) {
      const double end = t + (pol.split ? cost.i : cost.b).length.count();
      const int mb = backward_done(bc, end, pol.split);
      steps.push_back({pol.split ? action::I : action::B, static_cast<std::uint16_t>(mb),
                       static_cast<std::uint16_t>(bc), 0, 0});
      free[ri] = end;
    } else if (fc >= 0) {
      const double end = t + cost.f.length.count();
      const int mb = forward_done(fc, end);
      steps.push_back(
          {action::F, static_cast<std::uint16_t>(mb), static_cast<std::uint16_t>(fc), 0, 0});
      free[ri] = end;
    } else {
      // Only a dW is ready: run it — unless it must fit the wait and does not, and something
      // else will come (then wait for that).
      const pending_w w = weights[ri].front();
      const double end = std::max(t, w.ready) + cost.w.length.count();
      if (pol.fit_weights && next_other != never && end > next_other && live[ri] < limit) {
        free[ri] = std::max(free[ri], next_other);
        continue;
      }
      weights[ri].pop_front();
      --live[ri];
      steps.push_back(
          {action::W, static_cast<std::uint16_t>(w.mb), static_cast<std::uint16_t>(w.chunk), 0, 0});
      free[ri] = end;
    }
  }
  return out;
}

}  // namespace weft::search
