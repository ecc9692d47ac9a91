// A plan's makespan estimated step by step, in time linear in its steps: each step as long as
// its sub-stage slots one after another (step_costs.hpp, what the list scheduler builds plans
// with), waiting for the step of another chunk it needs and that step's transfer, which leaves
// when the sending rank's transfers before it have (they share a stream). The search
// screens its moves with it and has the simulator judge only those that promise; no plan is
// returned, compared with a generator's or called optimal on an estimate. It knows no stream,
// event or op of the lowered program: the program's semantics stay the simulator's alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include <weft/generators/stage_ops.hpp>
#include <weft/search/evaluate.hpp>
#include <weft/search/step_costs.hpp>
#include <weft/search/step_order.hpp>

namespace weft::search {

/// Whether plans of `q` are worth estimating: every rank a device of its own, nothing
/// contending, no host waiting for each slot, no event latency, transfers waited for as data
/// and no loss reduction to wait for — what the estimate times none of. Elsewhere the search
/// judges every plan in full.
template <time_type T>
bool estimable(const basic_problem<T>& q) {
  return q.workers == 0 && !q.cost.contention.active() && !q.sim.slot_barrier &&
         !(q.sim.event_latency > T{0}) && q.model.waits == transfer_wait::data &&
         q.model.loss == loss_reduce::none;
}

/// Estimates plans of one problem; holds the steps' costs per chunk and its scratch space, so
/// one object estimates many plans without allocating.
template <time_type T>
class step_timing {
 public:
  /// `q` must outlive the object.
  explicit step_timing(const basic_problem<T>& q) : q_(q), m_(q.model), inputs_(q) {
    const std::size_t C = chunks(), M = static_cast<std::size_t>(m_.micro);
    const gen::pattern f = gen::forward_pattern(m_, q.overlap),
                       b = gen::backward_pattern(m_, q.overlap, phase::B),
                       i = gen::backward_pattern(m_, q.overlap, phase::dX),
                       w = gen::backward_pattern(m_, q.overlap, phase::dW);
    pair_ = gen::overlap_pattern(m_, q.overlap);
    per_chunk_ = !q.cost.chunks.empty();
    for (std::size_t c = 0; c < (per_chunk_ ? C : 1); ++c) {
      const int k = static_cast<int>(c);
      len_.push_back({cost_of_step(q, f, k).length.count(), cost_of_step(q, b, k).length.count(),
                      cost_of_step(q, i, k).length.count(), cost_of_step(q, w, k).length.count()});
    }
    if (per_chunk_)
      pair_len_.assign(C * C, -1.0);
    else
      pair_len_.assign(1, cost_of_step(q, pair_).length.count());
    f_done_.assign(M * C, never);
    b_done_ = f_done_;
    f_waiter_.assign(M * C, none);
    b_waiter_ = f_waiter_;
    pos_.assign(static_cast<std::size_t>(m_.ranks), 0);
    free_.assign(pos_.size(), 0.0);
    send_free_ = free_;
  }

  /// The estimated makespan of `p` (T's count); nothing when a rank's live units go over the
  /// problem's cap (rule 5 as `live_change_of` counts it), a step is not of its rank's chunks or
  /// of the model's micro-batches, or the ranks' orders wait for each other forever. `p`'s
  /// steps are taken to keep each chunk's micro-batches in order, a backward after its forward
  /// and a dW after its dX (`detail::in_order`): the estimate counts no wait on the rank's own
  /// steps.
  std::optional<double> operator()(const step_order& p) { return estimate(p, {}, false); }

  /// The same for `p` whose rank r begins with the first `same[r]` steps of the plan last kept
  /// (`keep`), and holds the same units (forwards, backwards) after them — what the search's
  /// moves change. T0 is the earliest time a changed rank was free for its first changed step
  /// (in the plan kept): every step that started before T0 there keeps its time — nothing it
  /// waits for, its rank's step before it, the step it needs and the sends queued before that
  /// one, can start later — so only the rest is timed again. (A changed rank's unchanged steps
  /// that started after T0 may wait for another changed rank's: they are timed again too.)
  std::optional<double> operator()(const step_order& p, const std::vector<std::size_t>& same) {
    bool from_kept = kept_ && same.size() == p.ranks.size() && p.ranks.size() == pos_.size();
    for (std::size_t r = 0; from_kept && r < same.size(); ++r)
      from_kept = same[r] <= base_end_[r].size() && same[r] <= p.ranks[r].size();
    return estimate(p, same, from_kept);
  }

  /// The plan last estimated becomes the one `same` counts from; false (and nothing kept) when
  /// it had no estimate.
  bool keep() {
    if (!last_ok_) return false;
    last_ok_ = false;  // what is now the scratch space holds the plan kept before
    std::swap(start_, base_start_);
    std::swap(end_, base_end_);
    std::swap(sent_, base_sent_);
    std::swap(f_done_, base_f_done_);
    std::swap(b_done_, base_b_done_);
    kept_ = true;
    return true;
  }

 private:
  std::optional<double> estimate(const step_order& p, const std::vector<std::size_t>& same,
                                 bool incremental) {
    const std::size_t R = pos_.size();
    last_ok_ = false;
    if (p.ranks.size() != R) return std::nullopt;
    for (std::size_t r = 0; r < R; ++r)
      if ((!incremental || same[r] < p.ranks[r].size()) && !within_cap(p.ranks[r]))
        return std::nullopt;
    // What is kept: the steps that started before T0, on a changed rank only among its
    // unchanged ones.
    double t0 = never;
    if (incremental)
      for (std::size_t r = 0; r < R; ++r)
        if (same[r] < p.ranks[r].size())
          t0 = std::min(t0, same[r] == 0 ? 0.0 : base_end_[r][same[r] - 1]);
    if (incremental) {
      f_done_ = base_f_done_;
      b_done_ = base_b_done_;
    } else {  // (after `keep`, these are the tables of the plan kept before, or none)
      f_done_.assign(f_waiter_.size(), never);
      b_done_.assign(f_waiter_.size(), never);
    }
    std::fill(f_waiter_.begin(), f_waiter_.end(), none);
    std::fill(b_waiter_.begin(), b_waiter_.end(), none);
    start_.resize(R);
    end_.resize(R);
    sent_.resize(R);
    ready_.clear();
    double makespan = 0;
    for (std::size_t r = R; r-- > 0;) {
      const std::vector<step>& steps = p.ranks[r];
      std::size_t k = 0;
      if (incremental) {
        const std::vector<double>& bs = base_start_[r];  // a rank's starts never decrease
        k = static_cast<std::size_t>(
            std::lower_bound(bs.begin(), bs.begin() + static_cast<std::ptrdiff_t>(same[r]), t0) -
            bs.begin());
      }
      start_[r].resize(steps.size());
      end_[r].resize(steps.size());
      sent_[r].resize(steps.size());
      if (k > 0) {
        std::copy_n(base_start_[r].begin(), k, start_[r].begin());
        std::copy_n(base_end_[r].begin(), k, end_[r].begin());
        std::copy_n(base_sent_[r].begin(), k, sent_[r].begin());
        makespan = std::max(makespan, end_[r][k - 1]);
      }
      if (incremental)  // what the kept plan did after k is to be done again
        for (std::size_t x = k; x < steps.size(); ++x) forget(steps[x]);
      pos_[r] = k;
      free_[r] = k > 0 ? end_[r][k - 1] : 0.0;
      send_free_[r] = k > 0 ? sent_[r][k - 1] : 0.0;
      ready_.push_back(r);
    }
    // A rank runs its steps until one waits for another rank's step; that step's end wakes it.
    while (!ready_.empty()) {
      const std::size_t r = ready_.back();
      ready_.pop_back();
      const std::vector<step>& steps = p.ranks[r];
      for (; pos_[r] < steps.size(); ++pos_[r]) {
        const std::optional<double> end = take(steps[pos_[r]], r);
        if (!end) return std::nullopt;
        if (*end == never) break;  // waiting; registered to be woken
        start_[r][pos_[r]] = last_start_;
        end_[r][pos_[r]] = free_[r] = *end;
        sent_[r][pos_[r]] = send_free_[r];
        makespan = std::max(makespan, *end);
      }
    }
    for (std::size_t r = 0; r < R; ++r)
      if (pos_[r] < p.ranks[r].size()) return std::nullopt;  // they wait for each other
    last_ok_ = true;
    return makespan;
  }
  static constexpr double never = std::numeric_limits<double>::infinity();
  static constexpr std::size_t none = step_inputs::none;
  struct lengths {
    double f, b, i, w;
  };

  std::size_t chunks() const { return static_cast<std::size_t>(m_.chunks()); }
  std::size_t at(int mb, int c) const { return inputs_.at(mb, c); }
  const lengths& len(int c) const { return len_[per_chunk_ ? static_cast<std::size_t>(c) : 0]; }
  double pair_len(int fc, int bc) {
    if (!per_chunk_) return pair_len_[0];
    double& x = pair_len_[static_cast<std::size_t>(fc) * chunks() + static_cast<std::size_t>(bc)];
    if (x < 0) x = cost_of_step(q_, pair_, fc, bc).length.count();
    return x;
  }
  bool within_cap(const std::vector<step>& steps) const {
    if (m_.max_live <= 0) return true;
    int live = 0;
    for (const step& s : steps) {
      const live_change c = live_change_of(s.a);
      if (live + c.claims > m_.max_live) return false;
      live += c.claims - c.frees;
    }
    return true;
  }
  /// Step `s` not done: its units' ends unknown again. (A step not of the model's units is
  /// refused when it is taken.)
  void forget(const step& s) {
    const auto unit = [&](int mb, int c) {
      return mb < m_.micro && c < m_.chunks() ? at(mb, c) : none;
    };
    if (s.a == action::F || s.a == action::FB)
      if (const std::size_t k = unit(s.mb, s.chunk); k != none) f_done_[k] = never;
    if (s.a == action::B || s.a == action::I)
      if (const std::size_t k = unit(s.mb, s.chunk); k != none) b_done_[k] = never;
    if (s.a == action::FB)
      if (const std::size_t k = unit(s.bmb, s.bchunk); k != none) b_done_[k] = never;
  }
  /// Is (mb, c) a unit of rank r's?
  bool ours(int mb, int c, std::size_t r) const {
    return mb < m_.micro && c < m_.chunks() && inputs_.owner(at(mb, c)) == static_cast<int>(r);
  }
  /// When input `in` has arrived, for rank r: +infinity (and r registered to be woken by the
  /// step it waits for) while it has not.
  double arrived(const step_inputs::input& in, const std::vector<double>& done,
                 std::vector<std::size_t>& waiter, std::size_t r) {
    if (in.from == none) return 0.0;
    if (done[in.from] == never) waiter[in.from] = r;
    return done[in.from];
  }
  /// Unit k's step of rank r ends at `end`: its output is sent (`out`: the transfer, 0 for none)
  /// when the rank's sends before it are — one after another, as a rank's sends share a stream
  /// (`p2p_lanes::per_peer`) — and arrives in `done`, waking the rank that waits for it.
  double finish(std::vector<double>& done, std::vector<std::size_t>& waiter, std::size_t k,
                double end, double out, std::size_t r) {
    done[k] = end;
    if (out > 0) done[k] = send_free_[r] = std::max(end, send_free_[r]) + out;
    if (waiter[k] != none) {
      ready_.push_back(waiter[k]);
      waiter[k] = none;
    }
    return end;
  }

  /// Takes step `s` of rank r if what it needs has ended: when it ends; +infinity while it
  /// waits; nothing for a step not of the rank's units.
  std::optional<double> take(const step& s, std::size_t r) {
    const double t0 = free_[r];
    const bool fwd = s.a == action::F || s.a == action::FB;
    const bool bwd = s.a == action::B || s.a == action::I;
    if (!ours(s.mb, s.chunk, r) || (s.a == action::FB && !ours(s.bmb, s.bchunk, r)))
      return std::nullopt;
    if (s.a == action::W) {
      last_start_ = t0;
      return t0 + len(s.chunk).w;
    }
    const std::size_t f = at(s.mb, s.chunk);
    const std::size_t b = s.a == action::FB ? at(s.bmb, s.bchunk) : f;
    const double in = std::max(
        fwd ? arrived(inputs_.forward(f), f_done_, f_waiter_, r) : 0.0,
        bwd || s.a == action::FB ? arrived(inputs_.backward(b), b_done_, b_waiter_, r) : 0.0);
    if (in == never) return never;
    const double start = last_start_ = std::max(t0, in);
    switch (s.a) {
      case action::F:
        return finish(f_done_, f_waiter_, f, start + len(s.chunk).f, inputs_.forward_out(f), r);
      case action::B:
      case action::I: {
        const lengths& l = len(s.chunk);
        return finish(b_done_, b_waiter_, b, start + (s.a == action::B ? l.b : l.i),
                      inputs_.backward_out(b), r);
      }
      default: {  // FB
        const double end = start + pair_len(s.chunk, s.bchunk);
        finish(f_done_, f_waiter_, f, end, inputs_.forward_out(f), r);
        return finish(b_done_, b_waiter_, b, end, inputs_.backward_out(b), r);
      }
    }
  }

  const basic_problem<T>& q_;
  const model_desc& m_;
  gen::pattern pair_;
  bool per_chunk_ = false;
  std::vector<lengths> len_;      ///< per chunk (one for all without costs per chunk)
  std::vector<double> pair_len_;  ///< an overlapped pair's, per (forward, backward) chunk
  const step_inputs inputs_;
  std::vector<double> f_done_, b_done_;  ///< per (mb, chunk), when its forward / backward ended
  std::vector<std::size_t> f_waiter_, b_waiter_;  ///< per (mb, chunk), the rank waiting for it
  std::vector<std::size_t> pos_;                  ///< per rank, its next step
  std::vector<double> free_;                      ///< per rank, when its last step ended
  std::vector<std::size_t> ready_;                ///< ranks to run on
  double last_start_ = 0;                         ///< when the step `take` took began
  std::vector<std::vector<double>> start_, end_;  ///< per rank and step, the last plan's times
  std::vector<std::vector<double>> sent_;  ///< per rank and step, when its sends so far are done
  std::vector<double> send_free_;          ///< per rank, when its sends so far are done
  // The plan kept (`keep`): its steps' times and its units' ends.
  bool kept_ = false, last_ok_ = false;
  std::vector<std::vector<double>> base_start_, base_end_, base_sent_;
  std::vector<double> base_f_done_, base_b_done_;
};

}  // namespace weft::search
