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
#include <utility>
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

/// One run of the list scheduler: the state every rank's choice reads (what is done and when,
/// what each rank holds, the dW it deferred, the prefix's steps still to take) and the moves.
template <time_type T>
class list_run {
 public:
  list_run(const basic_problem<T>& q, const list_policy& pol, const step_order* prefix,
           const std::vector<std::size_t>& keep)
      : q_(q),
        m_(q.model),
        pol_(pol),
        cost_(q),
        inputs_(q),
        prefix_(prefix),
        keep_(keep),
        limit_(pol.live_limit > 0 ? pol.live_limit
               : m_.max_live > 0  ? m_.max_live
                                  : std::numeric_limits<int>::max()),
        out_{m_, q.overlap, std::vector<std::vector<step>>(ranks())} {
    const int C = m_.chunks(), M = m_.micro;
    mbs_.resize(static_cast<std::size_t>(C));
    for (int mb = 0; mb < M; ++mb)
      for (int c = m_.first_chunk(mb); c < m_.end_chunk(mb); ++c)
        mbs_[static_cast<std::size_t>(c)].push_back(mb);
    next_f_.assign(static_cast<std::size_t>(C), 0);
    next_b_ = next_f_;
    f_done_.assign(static_cast<std::size_t>(M) * static_cast<std::size_t>(C), never);
    b_done_ = f_done_;
    free_.assign(ranks(), 0.0);
    ready_.assign(ranks(), never);
    stale_.assign(ranks(), 1);
    for (std::size_t r = 0; r < ranks(); ++r) stale_list_.push_back(r);
    live_.assign(ranks(), 0);
    ahead_.assign(ranks(), 0);
    forced_.assign(ranks(), 0);
    weights_.resize(ranks());
    chunks_of_.resize(ranks());
    for (int c = 0; c < C; ++c) chunks_of_[static_cast<std::size_t>(m_.rank_of(c))].push_back(c);
    // A forward of a rank's chunk leaves room for one unit of each later chunk of the rank: the
    // micro-batch it starts has to pass them before its backward comes back to free anything.
    reserve_.assign(static_cast<std::size_t>(C), 0);
    for (const auto& v : chunks_of_)
      for (std::size_t i = 0; i < v.size(); ++i)
        reserve_[static_cast<std::size_t>(v[i])] = static_cast<int>(v.size() - 1 - i);
    if (pol.later_chunk_first)
      for (auto& v : chunks_of_) std::reverse(v.begin(), v.end());
    for (int c = 0; c < C; ++c) left_ += 2 * mbs_[static_cast<std::size_t>(c)].size();
  }

  /// Ranks take steps, the one that can start first each time, until every step is taken;
  /// nothing when every rank waits for memory nothing frees.
  std::optional<step_order> run() && {
    while (left_ > 0 || deferred_ > 0) {
      const auto [rank, t] = first_ready();
      if (rank < 0) return std::nullopt;
      const auto r = static_cast<std::size_t>(rank);
      mark_stale(r);  // whatever it takes (or waits for) changes when it is ready next
      if (forced_left(r))
        take_forced(r, t);
      else
        take_chosen(r, t);
    }
    return std::move(out_);
  }

 private:
  static constexpr double never = std::numeric_limits<double>::infinity();
  /// A dW deferred by a split backward, ready at `ready`.
  struct pending_w {
    int mb, chunk;
    double ready;
  };

  std::size_t ranks() const { return static_cast<std::size_t>(m_.ranks); }
  std::size_t at(int mb, int c) const {
    return static_cast<std::size_t>(mb) * static_cast<std::size_t>(m_.chunks()) +
           static_cast<std::size_t>(c);
  }
  const std::vector<int>& mbs(int c) const { return mbs_[static_cast<std::size_t>(c)]; }

  /// May rank r start a forward of chunk c: its forwards ahead and its live units within limits.
  bool may_claim(std::size_t r, int c) const {
    if (pol_.inflight > 0 &&
        ahead_[r] >= std::max(1, pol_.inflight - pol_.stagger * static_cast<int>(r)))
      return false;
    return live_[r] + reserve_[static_cast<std::size_t>(c)] < limit_;
  }

  /// When chunk c's next forward can start; never if none is left or its input is not done.
  double f_ready(int c) const {
    const auto& v = mbs(c);
    const std::size_t k = next_f_[static_cast<std::size_t>(c)];
    if (k >= v.size()) return never;
    return step_inputs::arrival(inputs_.forward(at(v[k], c)), f_done_);
  }

  /// When chunk c's next backward can start: after its forward and the next chunk's backward.
  double b_ready(int c) const {
    const auto& v = mbs(c);
    const std::size_t k = next_b_[static_cast<std::size_t>(c)];
    if (k >= v.size() || k >= next_f_[static_cast<std::size_t>(c)]) return never;
    const std::size_t u = at(v[k], c);
    return std::max(f_done_[u], step_inputs::arrival(inputs_.backward(u), b_done_));
  }

  /// Has rank r steps of the prefix still to take?
  bool forced_left(std::size_t r) const {
    return prefix_ && r < keep_.size() && forced_[r] < std::min(keep_[r], prefix_->ranks[r].size());
  }

  auto find_w(std::size_t r, int mb, int c) const {
    const auto& w = weights_[r];
    return std::find_if(w.begin(), w.end(),
                        [&](const auto& x) { return x.mb == mb && x.chunk == c; });
  }

  /// Is `mb` the next micro-batch of chunk c in `next` (forwards or backwards)?
  bool next_is(const std::vector<std::size_t>& next, int mb, int c) const {
    const auto& v = mbs(c);
    const std::size_t k = next[static_cast<std::size_t>(c)];
    return k < v.size() && v[k] == mb;
  }

  /// When the prefix's next step on rank r can start; never if it is not next in its chunk.
  double forced_ready(std::size_t r) const {
    const step& x = prefix_->ranks[r][forced_[r]];
    switch (x.a) {
      case action::F:
        return next_is(next_f_, x.mb, x.chunk) ? f_ready(x.chunk) : never;
      case action::B:
      case action::I:
        return next_is(next_b_, x.mb, x.chunk) ? b_ready(x.chunk) : never;
      case action::W: {
        const auto it = find_w(r, x.mb, x.chunk);
        return it == weights_[r].end() ? never : it->ready;
      }
      case action::FB:
        return next_is(next_f_, x.mb, x.chunk) && next_is(next_b_, x.bmb, x.bchunk)
                   ? std::max(f_ready(x.chunk), b_ready(x.bchunk))
                   : never;
    }
    return never;
  }

  /// When rank r can start its next step (the prefix's, or any ready); never if nothing is.
  double ready_at(std::size_t r) const {
    if (forced_left(r)) return std::max(forced_ready(r), free_[r]);
    double t = never;
    for (const int c : chunks_of_[r]) {
      t = std::min(t, b_ready(c));
      if (may_claim(r, c)) t = std::min(t, f_ready(c));
    }
    if (!weights_[r].empty()) t = std::min(t, weights_[r].front().ready);
    return t == never ? never : std::max(t, free_[r]);
  }

  /// The rank that can start something first, and when; rank -1 when none can.
  /// (A rank's readiness is kept between steps and computed again only when it, or a rank whose
  /// chunk neighbours one of its own, has taken a step: a scan of every rank's chunks a step
  /// made the list scheduler quadratic in the ranks.)
  std::pair<int, double> first_ready() {
    for (const std::size_t r : stale_list_) {
      ready_[r] = ready_at(r);
      stale_[r] = 0;
    }
    stale_list_.clear();
    const auto first = std::min_element(ready_.begin(), ready_.end());  // the lowest rank of ties
    if (*first == never) return {-1, never};
    return {static_cast<int>(first - ready_.begin()), *first};
  }

  void mark_stale(std::size_t r) {
    if (stale_[r]) return;
    stale_[r] = 1;
    stale_list_.push_back(r);
  }

  /// A step of chunk c has ended: the ranks of the chunks next to it may be ready sooner.
  void neighbours_stale(int c) {
    if (c > 0) mark_stale(static_cast<std::size_t>(m_.rank_of(c - 1)));
    if (c + 1 < m_.chunks()) mark_stale(static_cast<std::size_t>(m_.rank_of(c + 1)));
  }

  int forward_done(std::size_t r, int c, double end) {
    const int mb = mbs(c)[next_f_[static_cast<std::size_t>(c)]++];
    f_done_[at(mb, c)] = end;
    neighbours_stale(c);
    ++live_[r];
    ++ahead_[r];
    --left_;
    return mb;
  }

  int backward_done(std::size_t r, int c, double end, bool split) {
    const int mb = mbs(c)[next_b_[static_cast<std::size_t>(c)]++];
    b_done_[at(mb, c)] = end;
    neighbours_stale(c);
    --ahead_[r];
    --left_;
    if (split) {
      weights_[r].push_back({mb, c, end});
      ++deferred_;
    } else {
      --live_[r];
    }
    return mb;
  }

  /// Rank r takes the prefix's next step at t, whatever the policy would choose.
  void take_forced(std::size_t r, double t) {
    const step x = prefix_->ranks[r][forced_[r]++];
    double end = t;
    switch (x.a) {
      case action::F:
        end += cost_.f.length.count();
        forward_done(r, x.chunk, end);
        break;
      case action::B:
      case action::I:
        end += (x.a == action::I ? cost_.i : cost_.b).length.count();
        backward_done(r, x.chunk, end, x.a == action::I);
        break;
      case action::W:
        end += cost_.w.length.count();
        weights_[r].erase(find_w(r, x.mb, x.chunk));
        --deferred_;
        --live_[r];
        break;
      case action::FB:
        end += cost_.fb.length.count();
        forward_done(r, x.chunk, end);
        backward_done(r, x.bchunk, end, false);
        break;
    }
    out_.ranks[r].push_back(x);
    free_[r] = end;
  }

  /// Rank r takes what the policy chooses among the steps ready at t: a backward (the earliest
  /// ready), a forward (in chunk preference), both as a pair, or a dW.
  void take_chosen(std::size_t r, double t) {
    int bc = -1, fc = -1;
    double bt = never, next_other = never;
    for (const int c : chunks_of_[r]) {
      const double b = b_ready(c);
      if (b <= t && b < bt) {
        bt = b;
        bc = c;
      }
      next_other = std::min(next_other, b);
      if (may_claim(r, c)) {
        const double f = f_ready(c);
        if (f <= t && fc < 0) fc = c;
        next_other = std::min(next_other, f);
      }
    }
    std::vector<step>& steps = out_.ranks[r];
    const auto u16 = [](int x) { return static_cast<std::uint16_t>(x); };
    if (bc >= 0 && fc >= 0 && pol_.pair) {
      const double end = t + cost_.fb.length.count();
      const int fmb = forward_done(r, fc, end), bmb = backward_done(r, bc, end, false);
      steps.push_back({action::FB, u16(fmb), u16(fc), u16(bmb), u16(bc)});
      free_[r] = end;
    } else if (bc >= 0 && !(fc >= 0 && pol_.forward_first)) {
      const double end = t + (pol_.split ? cost_.i : cost_.b).length.count();
      const int mb = backward_done(r, bc, end, pol_.split);
      steps.push_back({pol_.split ? action::I : action::B, u16(mb), u16(bc), 0, 0});
      free_[r] = end;
    } else if (fc >= 0) {
      const double end = t + cost_.f.length.count();
      const int mb = forward_done(r, fc, end);
      steps.push_back({action::F, u16(mb), u16(fc), 0, 0});
      free_[r] = end;
    } else {
      // Only a dW is ready: run it — unless it must fit the wait and does not, and something
      // else will come (then wait for that).
      const pending_w w = weights_[r].front();
      const double end = std::max(t, w.ready) + cost_.w.length.count();
      if (pol_.fit_weights && next_other != never && end > next_other && live_[r] < limit_) {
        free_[r] = std::max(free_[r], next_other);
        return;
      }
      weights_[r].pop_front();
      --deferred_;
      --live_[r];
      steps.push_back({action::W, u16(w.mb), u16(w.chunk), 0, 0});
      free_[r] = end;
    }
  }

  const basic_problem<T>& q_;
  const model_desc& m_;
  const list_policy& pol_;
  const step_costs<T> cost_;
  const step_inputs inputs_;
  const step_order* prefix_;
  const std::vector<std::size_t>& keep_;
  const int limit_;
  std::vector<std::vector<int>> mbs_;  ///< per chunk, the micro-batches that pass it, in order
  std::vector<std::size_t> next_f_, next_b_;  ///< per chunk, its next forward and backward
  std::vector<double> f_done_, b_done_;       ///< completion times (T's counts), never until taken
  std::vector<double> free_;                  ///< per rank, when it is free
  std::vector<double> ready_;                 ///< per rank, `ready_at` when last computed
  std::vector<std::uint8_t> stale_;           ///< per rank, is `ready_` out of date?
  std::vector<std::size_t> stale_list_;       ///< the ranks whose `ready_` is out of date
  std::vector<int> live_, ahead_;  ///< per rank, live units and forwards awaiting their backward
  std::vector<int> reserve_;       ///< per chunk, the units its forward leaves room for
  std::vector<std::deque<pending_w>> weights_;  ///< per rank, its deferred dW
  std::vector<std::vector<int>> chunks_of_;     ///< per rank, its chunks in preference order
  std::vector<std::size_t> forced_;             ///< per rank, the prefix's steps taken
  step_order out_;
  std::size_t left_ = 0;      ///< forwards and backwards not taken
  std::size_t deferred_ = 0;  ///< dW deferred and not taken, over every rank
};

}  // namespace detail

/// The plan the list scheduler makes for `q` under `pol`; nothing when the policy cannot finish
/// (a live limit too small for the placement: every rank waits for memory no backward frees).
/// With `prefix`, each rank r first takes the first `keep[r]` steps of `prefix` (a plan of `q`
/// that keeps every chunk's micro-batches in order) as they come, and the policy only chooses
/// after them: the search's ruin-and-recreate move.
template <time_type T>
std::optional<step_order> list_schedule(const basic_problem<T>& q, const list_policy& pol,
                                        const step_order* prefix = nullptr,
                                        const std::vector<std::size_t>& keep = {}) {
  return detail::list_run<T>(q, pol, prefix, keep).run();
}

}  // namespace weft::search
