// Lower bounds on the makespan of any plan of a problem, to judge a search's result by ("within
// x % of the bound"). Each holds for every plan the search can produce — every chunk's
// micro-batches in order, fused or split backwards, overlapped pairs no shorter than their
// longer half — under the same simulator:
//
// - critical path: one micro-batch alone, through every chunk and back (the simulator's runs of
//   it, fused and split, each chunk finishing by whichever of the two is sooner there — a plan
//   may mix them): no micro-batch finishes sooner;
// - work: per rank, the earliest any of its steps can start (a forward has to reach it first),
//   plus the compute its steps hold (one compute stream per rank runs them one at a time), plus
//   what must follow its last step on other ranks (nothing when dW may come last);
// - in order: the rank of the first chunk runs every micro-batch's forward there in order, so
//   the last one starts after micro - 1 forwards, and then has its critical path to go;
// - memory: under a cap of L live units, a rank claims its k-th unit (at a forward's start) only
//   after its (k-1)-th and that forward's compute, and after its (k-L)-th was freed — a unit
//   lives at least its round trip alone (forward down the pipeline and backward back up to the
//   rank); from the k-th claim on, the rank still computes n - k units, and the last unit has the
//   rest of its micro-batch's path to go;
// - one rank: each rank runs its own steps on its one compute stream, under the cap, the other
//   ranks relaxed to unlimited capacity but their paths as long as alone (a micro-batch's forward
//   reaches the rank no sooner than the rank above could send it, its gradient returns a round
//   trip later at the earliest, and then has the path above to go) — solved exactly by a
//   dynamic programme over how many forwards, backwards and dW the rank has done, rank by rank
//   down the pipeline and back up so that each rank's earliest times bound the next one's. This
//   is the machine-based bound of flow-shop scheduling. For pipelines of whole blocks with one
//   chunk per rank, and (each step its compute only) for a V; 0 for anything else.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/stage_ops.hpp>
#include <weft/schedule/timeline.hpp>
#include <weft/search/evaluate.hpp>
#include <weft/search/list_scheduler.hpp>
#include <weft/search/step_costs.hpp>

namespace weft::search {

template <time_type T>
struct lower_bounds {
  T critical_path{0};
  T work{0};
  T in_order{0};
  T memory{0};
  T one_rank{0};
  /// The largest of them: no plan is faster.
  constexpr T best() const noexcept {
    return std::max({critical_path, work, in_order, memory, one_rank});
  }
};

namespace detail {
/// One micro-batch through every chunk and back, fused or split: the simulated run.
template <time_type T>
basic_timeline<T> alone(const basic_problem<T>& q, bool split, program& prog) {
  model_desc m = q.model;
  m.micro = 1;
  m.bidirectional = false;
  m.max_live = 0;
  gen::pipeline_builder b(m, q.overlap);
  const int C = m.chunks();
  for (int r = 0; r < m.ranks; ++r) {
    b.add_rank();
    for (int c = 0; c < C; ++c)
      if (m.rank_of(c) == r) b.forward(0, c);
    for (int c = C - 1; c >= 0; --c)
      if (m.rank_of(c) == r) {
        if (!split) {
          b.backward(0, c);
          continue;
        }
        b.backward_input(0, c);
      }
    if (split)
      for (int c = C - 1; c >= 0; --c)
        if (m.rank_of(c) == r) b.backward_weight(0, c);
  }
  prog = lower(b.take());
  return simulate(prog, q.cost);
}

/// One micro-batch alone, per chunk: when its forward starts, and the earliest its backward can
/// be done in any plan — plans may fuse one chunk's backward and split the next one's, which
/// neither run alone does. With split backwards allowed, the gradient reaches each chunk no
/// sooner than the chain of dX alone brings it (dX is part of a fused backward; the dW of the
/// split run come last, after every dX); from there the chunk finishes no sooner than its fused
/// backward alone takes, or than both its dX alone and its dX and dW computed in turn on its one
/// compute stream, in either order. `end`: the latest of them, the whole micro-batch done.
struct chunks_alone {
  std::vector<double> first, done;
  double end = 0;
};

template <time_type T>
chunks_alone chunks_of(const model_desc& m, const basic_timeline<T>& fused, const program& fp,
                       const basic_timeline<T>* halves, const program* sp) {
  const auto C = static_cast<std::size_t>(m.chunks());
  struct passage {  // a chunk's backward in one run: its first op's start, its dX part's end, ...
    double start = std::numeric_limits<double>::infinity(), x_end = 0, end = 0, compute = 0;
  };
  chunks_alone out;
  out.first.assign(C, std::numeric_limits<double>::infinity());
  const auto passages = [&](const basic_timeline<T>& run, const program& p) {
    std::vector<passage> v(C);
    for (std::uint32_t i = 0; i < p.size(); ++i) {
      const op& o = p.at(i);
      if (is_p2p(o.k)) continue;
      const auto c = static_cast<std::size_t>(o.chunk);
      const double s = run.start[i].count(), e = run.finish[i].count();
      if (o.ph == phase::F) {
        out.first[c] = std::min(out.first[c], s);
        continue;
      }
      passage& x = v[c];
      x.start = std::min(x.start, s);  // its gradient's first use, an all-to-all's included
      if (stream_of(o.k) == stream_class::compute) x.compute += e - s;
      if (!is_layer_stage(o.k)) continue;  // done (and the unit freed, rule 5): its layer ops
      x.end = std::max(x.end, e);
      if (o.ph != phase::dW) x.x_end = std::max(x.x_end, e);
    }
    return v;
  };
  const std::vector<passage> whole = passages(fused, fp);
  out.done.assign(C, 0.0);
  if (!halves) {
    for (std::size_t c = 0; c < C; ++c) out.done[c] = whole[c].end;
  } else {
    const std::vector<passage> parts = passages(*halves, *sp);
    for (std::size_t c = 0; c < C; ++c) {
      const passage &f = whole[c], &x = parts[c];
      const double split_takes = std::max(x.x_end - x.start, x.compute);
      out.done[c] = x.start + std::min(f.end - f.start, split_takes);
    }
  }
  for (const double d : out.done) out.end = std::max(out.end, d);
  return out;
}
}  // namespace detail

/// What a rank's relaxation knows of its steps: how many micro-batches, the cap, whether
/// backwards may split, and the compute of a forward, a dX, a dW and a fused backward.
struct rank_steps {
  int n = 0;
  int cap = 0;  ///< 0: no cap
  bool split = true;
  double f = 0, i = 0, w = 0, b = 0;
};

/// One rank's steps on its compute stream, the rest of the pipeline relaxed (see the one-rank
/// bound above): n micro-batches' forward, backward-input and dW (or fused backward, or a
/// forward overlapped with a backward) in micro-batch order, at most `cap` units live.
struct one_rank_relaxation : rank_steps {
  double pair = std::numeric_limits<double>::infinity();  ///< F overlapped with B; inf: none
  double d = 0;  ///< from a forward's end to the earliest start of its backward (the path below)
  double q = 0;  ///< from a backward's end to the end of the micro-batch's path (the path above)
  std::vector<double> release_f, release_b;  ///< per micro-batch, from the neighbours
};

struct one_rank_result {
  double makespan = 0;  ///< no schedule of the rank (and the path after it) ends sooner
  std::vector<double> start_f, start_b;  ///< the earliest each step can start
};

/// The exact optimum of the relaxation, by a dynamic programme over (forwards, backwards, dW)
/// done: with the releases fixed and the cap a function of the counts, reaching a state sooner
/// is never worse. dW of any micro-batch being interchangeable once its backward is done, they
/// are counted in order. About (n+1)^3 / 6 states.
inline one_rank_result solve(const one_rank_relaxation& x) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const int n = x.n;
  // States w <= i <= f, packed: the f-th layer starts after f(f+1)(f+2)/6 of them.
  const auto layer = [](std::size_t f) { return f * (f + 1) * (f + 2) / 6; };
  std::vector<double> t(layer(static_cast<std::size_t>(n) + 1), inf);
  const auto at = [&](int f, int i, int w) -> double& {
    const auto fi = static_cast<std::size_t>(f), ii = static_cast<std::size_t>(i);
    return t[layer(fi) + ii * (ii + 1) / 2 + static_cast<std::size_t>(w)];
  };
  one_rank_result out;
  out.makespan = inf;
  out.start_f.assign(static_cast<std::size_t>(n), inf);
  out.start_b.assign(static_cast<std::size_t>(n), inf);
  std::vector<double> ready_b(static_cast<std::size_t>(n), inf);  // release of backward k
  const auto relax = [](double& slot, double v) { slot = std::min(slot, v); };
  const auto finish = [&](double end, int w) {  // every backward done: the dW left, the path above
    out.makespan =
        std::min(out.makespan, std::max(end + x.q, end + static_cast<double>(n - w) * x.w));
  };
  at(0, 0, 0) = 0;
  for (int f = 0; f <= n; ++f) {
    if (f > 0) {  // forward f-1's earliest start is known: its backward's release follows
      const auto k = static_cast<std::size_t>(f - 1);
      ready_b[k] = std::max(x.release_b.empty() ? 0.0 : x.release_b[k], out.start_f[k] + x.f + x.d);
    }
    for (int i = 0; i <= f; ++i)
      for (int w = 0; w <= i; ++w) {
        const double now = at(f, i, w);
        if (now == inf) continue;
        const bool room = x.cap == 0 || f - w < x.cap;
        if (f < n && room) {
          const auto k = static_cast<std::size_t>(f);
          const double s = std::max(now, x.release_f.empty() ? 0.0 : x.release_f[k]);
          relax(out.start_f[k], s);
          relax(at(f + 1, i, w), s + x.f);
          if (i < f && x.pair < inf) {  // forward f with backward i, overlapped
            const double sp = std::max(s, ready_b[static_cast<std::size_t>(i)]);
            relax(out.start_b[static_cast<std::size_t>(i)], sp);
            if (i + 1 == n)
              finish(sp + x.pair, w + 1);
            else
              relax(at(f + 1, i + 1, w + 1), sp + x.pair);
          }
        }
        if (i < f) {
          const double s = std::max(now, ready_b[static_cast<std::size_t>(i)]);
          relax(out.start_b[static_cast<std::size_t>(i)], s);
          if (x.split) {
            if (i + 1 == n)
              finish(s + x.i, w);
            else
              relax(at(f, i + 1, w), s + x.i);
          }
          if (i + 1 == n)
            finish(s + x.b, w + 1);
          else
            relax(at(f, i + 1, w + 1), s + x.b);
        }
        if (w < i) relax(at(f, i, w + 1), now + x.w);
      }
  }
  return out;
}

/// A rank of a V seen the same way: its two chunks, a on the way down and b on the way up; per
/// micro-batch its forward of a, then (the pipeline below and back) its forward of b, then
/// (the chunks after b) b's backward, then (back through the chunks between) a's backward, each
/// a dX and a later dW, or fused. Every step takes its compute — a step of sub-stages waits on
/// its own all-to-alls too, which this leaves out — and the paths between them are as alone,
/// from one step's start to the next one's. dW of either chunk are interchangeable here (a
/// relaxation: each needs some backward done). A forward of either chunk may run overlapped
/// with a fused backward of either (DualPipeV's pairs), both in `pair`.
struct vee_rank_relaxation : rank_steps {  // a step's compute: either chunk's
  double down = 0;                         ///< from a's forward to b's
  double turn = 0;                         ///< from b's forward to b's backward
  double up = 0;                           ///< from b's backward to a's
  double q = 0;                            ///< from a's backward to the micro-batch's end
  std::vector<double> release_f;           ///< a's forward, per micro-batch
  double pair = std::numeric_limits<double>::infinity();  ///< F overlapped with B; inf: none
};

/// The states of the V relaxation that can be reached, packed: fa >= fb >= xb >= xa, at most
/// xa + xb dW done (w), and under a cap fa + fb - w <= cap (a forward starts only with room). A
/// row per (fa, fb, xb), ranked in the combinatorial number system; in it, xa by xa, each its
/// range of w. The cap is what keeps them few: 64 micro-batches under a cap of 32 reach 1.5
/// million of the 105 million a dense table of (fa, fb, xb, xa, w) would hold.
class vee_states {
 public:
  vee_states(int n, int cap) : cap_(cap) {
    rows_.reserve(choose(static_cast<std::size_t>(n) + 3, 3));
    std::size_t total = 0;
    for_each_row(n, [&](int fa, int fb, int xb) {
      rows_.push_back(total);  // in rank order: rank3(fa, fb, xb) is this row's place
      total += row_size(fa, fb, xb, cap);
      return true;
    });
    size_ = total;
  }

  /// How many states `n` micro-batches under `cap` reach, counted no further than past `limit`
  /// — without building the table.
  static std::size_t count(int n, int cap, std::size_t limit) {
    std::size_t total = 0;
    for_each_row(n, [&](int fa, int fb, int xb) {
      total += row_size(fa, fb, xb, cap);
      return total <= limit;
    });
    return total;
  }

  std::size_t size() const noexcept { return size_; }
  /// The fewest dW done after fa + fb forwards: under a cap, all but cap of the units freed.
  int lowest_w(int fa, int fb) const noexcept { return lowest_w(fa, fb, cap_); }
  /// The fewest backwards of a in a state of the row: enough that some w is allowed.
  int lowest_xa(int fa, int fb, int xb) const noexcept { return lowest_xa(fa, fb, xb, cap_); }
  std::size_t index(int fa, int fb, int xb, int xa, int w) const noexcept {
    const int lo = lowest_w(fa, fb);
    return rows_[rank3(fa, fb, xb)] + within(lowest_xa(fa, fb, xb), xb - lo + 1, xa) +
           static_cast<std::size_t>(w - lo);
  }

 private:
  static int lowest_w(int fa, int fb, int cap) noexcept {
    return cap == 0 ? 0 : std::max(0, fa + fb - cap);
  }
  static int lowest_xa(int fa, int fb, int xb, int cap) noexcept {
    return std::max(0, lowest_w(fa, fb, cap) - xb);
  }
  static std::size_t choose(std::size_t v, std::size_t k) noexcept {
    if (v < k) return 0;
    std::size_t r = 1;
    for (std::size_t j = 1; j <= k; ++j) r = r * (v - k + j) / j;
    return r;
  }
  static std::size_t rank3(int fa, int fb, int xb) noexcept {
    return choose(static_cast<std::size_t>(fa) + 2, 3) +
           choose(static_cast<std::size_t>(fb) + 1, 2) + static_cast<std::size_t>(xb);
  }
  /// The rows (fa, fb, xb) in rank order, while `visit` says go on.
  template <class Visit>
  static void for_each_row(int n, Visit&& visit) {
    for (int fa = 0; fa <= n; ++fa)
      for (int fb = 0; fb <= fa; ++fb)
        for (int xb = 0; xb <= fb; ++xb)
          if (!visit(fa, fb, xb)) return;
  }
  /// The states before xa's in a row whose first xa is xa0, each xa holding xa + c of them:
  /// the k = xa - xa0 values before it hold xa0 + c, xa0 + c + 1, ..., k (xa0 + c) + k (k - 1) / 2.
  static std::size_t within(int xa0, int c, int xa) noexcept {
    const auto k = static_cast<std::size_t>(xa - xa0);
    return k * static_cast<std::size_t>(c + xa0) + k * (k - 1) / 2;
  }
  static std::size_t row_size(int fa, int fb, int xb, int cap) noexcept {
    const int xa0 = lowest_xa(fa, fb, xb, cap);
    return xa0 > xb ? 0 : within(xa0, xb - lowest_w(fa, fb, cap) + 1, xb + 1);
  }

  int cap_ = 0;
  std::vector<std::size_t> rows_;
  std::size_t size_ = 0;
};

/// The exact optimum of the V relaxation, by the same kind of programme over (forwards of a,
/// forwards of b, backwards of b, backwards of a, dW) done, over the states it can reach
/// (`vee_states`). The releases of b's steps follow from the earliest start of a's forward of
/// the micro-batch.
inline double solve(const vee_rank_relaxation& x) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const int n = x.n;
  const vee_states states(n, x.cap);
  std::vector<double> t(states.size(), inf);
  const auto at = [&](int fa, int fb, int xb, int xa, int w) -> double& {
    return t[states.index(fa, fb, xb, xa, w)];
  };
  const auto N = static_cast<std::size_t>(n);
  std::vector<double> start_a(N, inf), ready_fb(N, inf), ready_xb(N, inf), ready_xa(N, inf);
  double best = inf;
  const auto relax = [](double& slot, double v) { slot = std::min(slot, v); };
  const auto finish = [&](double s, double end, int w) {  // a's last backward, from s to end
    best = std::min(best, std::max(s + x.q, end + static_cast<double>(2 * n - w) * x.w));
  };
  at(0, 0, 0, 0, 0) = 0;
  for (int fa = 0; fa <= n; ++fa) {
    if (fa > 0) {  // a's forward fa-1: its earliest start is known, and with it b's releases
      const auto k = static_cast<std::size_t>(fa - 1);
      ready_fb[k] = start_a[k] + x.down;
      ready_xb[k] = ready_fb[k] + x.turn;
      ready_xa[k] = ready_xb[k] + x.up;
    }
    for (int fb = 0; fb <= fa; ++fb)
      for (int xb = 0; xb <= fb; ++xb)
        for (int xa = states.lowest_xa(fa, fb, xb); xa <= xb; ++xa)
          for (int w = states.lowest_w(fa, fb); w <= xa + xb; ++w) {
            const double now = at(fa, fb, xb, xa, w);
            if (now == inf) continue;
            const bool room = x.cap == 0 || fa + fb - w < x.cap;
            const double start_fa =
                fa < n
                    ? std::max(now, x.release_f.empty() ? 0.0
                                                        : x.release_f[static_cast<std::size_t>(fa)])
                    : inf;
            const double start_fb =
                fb < fa ? std::max(now, ready_fb[static_cast<std::size_t>(fb)]) : inf;
            if (fa < n && room) {
              relax(start_a[static_cast<std::size_t>(fa)], start_fa);
              relax(at(fa + 1, fb, xb, xa, w), start_fa + x.f);
            }
            if (fb < fa && room) relax(at(fa, fb + 1, xb, xa, w), start_fb + x.f);
            if (room && x.pair < inf) {
              // A forward (of a or of b) overlapped with a fused backward (of b or of a). a's
              // last backward comes after every forward, so no pair ends the rank's work.
              const double ready_b = xb < fb ? ready_xb[static_cast<std::size_t>(xb)] : inf;
              const double ready_a = xa < xb ? ready_xa[static_cast<std::size_t>(xa)] : inf;
              if (start_fa < inf && ready_b < inf)
                relax(at(fa + 1, fb, xb + 1, xa, w + 1), std::max(start_fa, ready_b) + x.pair);
              if (start_fa < inf && ready_a < inf && xa + 1 < n)
                relax(at(fa + 1, fb, xb, xa + 1, w + 1), std::max(start_fa, ready_a) + x.pair);
              if (start_fb < inf && ready_b < inf)
                relax(at(fa, fb + 1, xb + 1, xa, w + 1), std::max(start_fb, ready_b) + x.pair);
              if (start_fb < inf && ready_a < inf && xa + 1 < n)
                relax(at(fa, fb + 1, xb, xa + 1, w + 1), std::max(start_fb, ready_a) + x.pair);
            }
            if (xb < fb) {
              const double s = std::max(now, ready_xb[static_cast<std::size_t>(xb)]);
              if (x.split) relax(at(fa, fb, xb + 1, xa, w), s + x.i);
              relax(at(fa, fb, xb + 1, xa, w + 1), s + x.b);
            }
            if (xa < xb) {
              const double s = std::max(now, ready_xa[static_cast<std::size_t>(xa)]);
              const bool last = xa + 1 == n;
              if (x.split) {
                if (last)
                  finish(s, s + x.i, w);
                else
                  relax(at(fa, fb, xb, xa + 1, w), s + x.i);
              }
              if (last)
                finish(s, s + x.b, w + 1);
              else
                relax(at(fa, fb, xb, xa + 1, w + 1), s + x.b);
            }
            if (w < xa + xb) relax(at(fa, fb, xb, xa, w + 1), now + x.w);
          }
  }
  return best;
}

/// The one-rank bound's size limit: beyond it (a programme of n^3 / 6 states per rank, several
/// times), the bound is left at 0.
inline constexpr int max_one_rank_micro = 128;
/// The same for a V: up to 256 micro-batches (its table of rows holds C(n+3, 3)) and 4 million
/// states reached a rank (`vee_states`; without a cap, 1.2 million at 32 micro-batches and 3.4
/// at 40; under a cap of 32, 1.5 million at 64 and 3.5 at 128).
inline constexpr int max_vee_rank_micro = 256;
inline constexpr std::size_t max_vee_rank_states = 4'000'000;

namespace detail {
/// A rank's steps as the relaxations see them, from problem `q`.
template <time_type T>
rank_steps steps_of(const basic_problem<T>& q, bool split) {
  const model_desc& m = q.model;
  rank_steps x;
  x.n = m.micro;
  x.cap = m.max_live;
  x.split = split;
  const step_costs<T> cost(q);
  x.f = cost.f.work.count();
  x.b = cost.b.work.count();
  x.i = cost.i.work.count();
  x.w = cost.w.work.count();
  return x;
}

/// The one-rank bound of a pipeline of whole blocks, one chunk per rank (0 otherwise): each
/// rank's relaxation, down the pipeline (forwards released by the rank above's earliest) and
/// back up (backwards released by the rank below's), twice.
template <time_type T>
T one_rank_bound(const basic_problem<T>& q, bool split, const basic_timeline<T>& fused,
                 const program& fused_prog, const basic_timeline<T>& halves,
                 const program& split_prog) {
  const model_desc& m = q.model;
  if (m.bidirectional || m.chunks_per_rank != 1 || !m.stages.has(kind::block) ||
      m.stages.size() != 1 || m.micro > max_one_rank_micro)
    return T{0};
  const int R = m.ranks, n = m.micro;
  constexpr double inf = std::numeric_limits<double>::infinity();
  // Alone, per rank: its forward's start and end, its backward's (dX or fused) start and end.
  struct marks {  // (a local constant in these initialisers crashes g++ 12)
    double f_start = std::numeric_limits<double>::infinity(), f_end = f_start, b_start = f_start,
           b_end = f_start;
  };
  const auto marks_of = [&](const basic_timeline<T>& run, const program& p) {
    std::vector<marks> out(static_cast<std::size_t>(R));
    for (std::uint32_t k = 0; k < p.size(); ++k) {
      const op& o = p.at(k);
      if (o.k != kind::block) continue;
      marks& x = out[static_cast<std::size_t>(p.rank[k])];
      const double s = run.start[k].count(), e = run.finish[k].count();
      const bool fwd = o.ph == phase::F;
      if (!fwd && o.ph == phase::dW) continue;
      double& first = fwd ? x.f_start : x.b_start;
      double& last = fwd ? x.f_end : x.b_end;
      first = std::min(first, s);
      last = last == inf ? e : std::max(last, e);
    }
    return out;
  };
  const std::vector<marks> fm = marks_of(fused, fused_prog);
  const std::vector<marks> sm = split ? marks_of(halves, split_prog) : fm;
  const auto least = [&](auto of) {
    std::vector<double> v(static_cast<std::size_t>(R));
    for (std::size_t r = 0; r < v.size(); ++r) v[r] = std::min(of(fm, r), of(sm, r));
    return v;
  };
  using ms = std::vector<marks>;
  const auto d = least([](const ms& x, std::size_t r) { return x[r].b_start - x[r].f_end; });
  const auto q_up = least([](const ms& x, std::size_t r) { return x[0].b_end - x[r].b_end; });
  const auto down = least([](const ms& x, std::size_t r) {  // forward start, rank r-1 to r
    return r == 0 ? x[0].f_start : x[r].f_start - x[r - 1].f_start;
  });
  const auto up = least([&](const ms& x, std::size_t r) {  // backward start, rank r+1 to r
    return r + 1 == static_cast<std::size_t>(R) ? 0.0 : x[r].b_start - x[r + 1].b_start;
  });

  one_rank_relaxation x;
  static_cast<rank_steps&>(x) = steps_of(q, split);
  // A chunk's pair is one pair unit per layer, as plans build it (the search's step cost).
  x.pair = step_costs<T>(q).fb.length.count();
  if (x.pair >= x.f + x.b) x.pair = inf;  // no gain: the two in turn say as much
  std::vector<std::vector<double>> start_f(static_cast<std::size_t>(R)), start_b(start_f);
  double best = 0;
  for (int round = 0; round < 2; ++round) {
    for (int dir = 0; dir < 2; ++dir)
      for (int k = 0; k < R; ++k) {
        const auto r = static_cast<std::size_t>(dir == 0 ? k : R - 1 - k);
        x.d = d[r];
        x.q = q_up[r];
        x.release_f.assign(static_cast<std::size_t>(n), down[r]);
        if (r > 0 && !start_f[r - 1].empty())
          for (std::size_t j = 0; j < x.release_f.size(); ++j)
            x.release_f[j] = std::max(x.release_f[j], start_f[r - 1][j] + down[r]);
        x.release_b.assign(static_cast<std::size_t>(n), 0.0);
        if (r + 1 < static_cast<std::size_t>(R) && !start_b[r + 1].empty())
          for (std::size_t j = 0; j < x.release_b.size(); ++j)
            x.release_b[j] = start_b[r + 1][j] + up[r];
        one_rank_result y = solve(x);
        if (y.makespan == inf) return T{0};  // nothing fits the cap: other bounds say so
        best = std::max(best, y.makespan);
        start_f[r] = std::move(y.start_f);
        start_b[r] = std::move(y.start_b);
      }
  }
  return T(best);
}

/// The one-rank bound of a V (0 for anything else, or beyond max_vee_rank_micro or
/// max_vee_rank_states): each rank's relaxation on its own, its first forward released as the
/// first chunk's rank forwards in order, the paths between its steps from the runs alone (dX
/// chains: the soonest).
template <time_type T>
T vee_rank_bound(const basic_problem<T>& q, bool split, const chunks_alone& alone,
                 const basic_timeline<T>& run, const program& p) {
  const model_desc& m = q.model;
  if (m.bidirectional || m.place != placement::vee || m.chunks_per_rank != 2 ||
      m.micro > max_vee_rank_micro ||
      vee_states::count(m.micro, m.max_live, max_vee_rank_states) > max_vee_rank_states)
    return T{0};
  const int C = m.chunks(), R = m.ranks, n = m.micro;
  constexpr double inf = std::numeric_limits<double>::infinity();
  // Per chunk, in the run alone (split when allowed: its dX chain is the soonest): when its
  // forward's and its backward's first compute ops start.
  std::vector<double> fwd(static_cast<std::size_t>(C), inf), bwd(fwd);
  for (std::uint32_t k = 0; k < p.size(); ++k) {
    const op& o = p.at(k);
    if (stream_of(o.k) != stream_class::compute) continue;
    auto& slot = (o.ph == phase::F ? fwd : bwd)[static_cast<std::size_t>(o.chunk)];
    slot = std::min(slot, run.start[k].count());
  }
  vee_rank_relaxation x;
  static_cast<rank_steps&>(x) = steps_of(q, split);
  if (m.stages.has(kind::block) && m.stages.size() == 1) {  // whole blocks: pairs save compute
    x.pair = step_costs<T>(q).fb.length.count();  // a pair unit per layer, as plans build it
    if (x.pair >= x.f + x.b) x.pair = inf;        // no gain: the two in turn say as much
  }
  double best = 0;
  for (int r = 0; r < R; ++r) {
    const auto a = static_cast<std::size_t>(r), b = static_cast<std::size_t>(C - 1 - r);
    x.down = fwd[b] - fwd[a];
    x.turn = bwd[b] - fwd[b];
    x.up = bwd[a] - bwd[b];
    x.q = alone.end - bwd[a];
    x.release_f.resize(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k)  // chunk 0's rank forwards micro-batches 0..k-1 first
      x.release_f[static_cast<std::size_t>(k)] = fwd[a] - fwd[0] + k * x.f;
    const double y = solve(x);
    if (y == inf) return T{0};  // nothing fits the cap: other bounds say so
    best = std::max(best, y);
  }
  return T(best);
}
/// An overlapped pair shorter than the longer of its halves is outside what the bounds assume
/// (with costs per chunk, `pair_of` is never shorter than either half by construction).
template <time_type T>
void check_pair_costs(const basic_problem<T>& q) {
  if (!q.model.stages.has(kind::block) || !q.cost.chunks.empty()) return;
  const T longer = std::max(q.cost.of(kind::block, phase::F), q.cost.of(kind::block, phase::B));
  if (!(q.cost.pair() < longer)) return;  // (a NaN cost is not refused here)
  const auto show = [](T v) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v.count()).ptr);
  };
  throw config_error("weft: search: an overlapped forward/backward pair (" + show(q.cost.pair()) +
                     ") shorter than the longer of its halves (" + show(longer) +
                     ") is outside what the bounds assume: no overlap ends before both halves "
                     "would alone");
}

inline constexpr double never_at = std::numeric_limits<double>::infinity();

/// Per rank, in the fused run alone: when its first compute op starts, and the least that
/// follows one of its backwards to the end (never_at when it has none).
struct rank_ends {
  std::vector<double> head, after_backward;
};

template <time_type T>
rank_ends ends_alone(int ranks, const program& p, const basic_timeline<T>& t) {
  rank_ends e{std::vector<double>(static_cast<std::size_t>(ranks), never_at), {}};
  e.after_backward = e.head;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    const op& o = p.at(i);
    if (stream_of(o.k) != stream_class::compute) continue;
    const auto r = static_cast<std::size_t>(p.rank[i]);
    e.head[r] = std::min(e.head[r], t.start[i].count());
    // The earliest a backward of rank r can end, alone: what follows it is at least the rest.
    if (o.ph != phase::F)
      e.after_backward[r] = std::min(e.after_backward[r], (t.makespan - t.finish[i]).count());
  }
  return e;
}

/// Units (micro-batch, chunk) rank r computes.
inline int units_of(const model_desc& m, int r) {
  int n = 0;
  for (int c = 0; c < m.chunks(); ++c)
    if (m.rank_of(c) == r)
      for (int mb = 0; mb < m.micro; ++mb) n += m.carries(mb, c) ? 1 : 0;
  return n;
}

/// The work bound: each rank's first start alone, then every unit at its least cost, then (fused
/// only) what must follow its last backward.
template <time_type T>
T work_bound(const model_desc& m, const rank_ends& e, T unit, bool split) {
  T out{0};
  for (int r = 0; r < m.ranks; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    const double after = e.after_backward[ri];
    const T tail = split || after == never_at ? T{0} : T(after);
    const T head = T(e.head[ri] == never_at ? 0.0 : e.head[ri]);
    out = std::max(out, head + unit * static_cast<double>(units_of(m, r)) + tail);
  }
  return out;
}

/// The memory bound under `m.max_live`: per chunk, alone, when its forward starts and the
/// earliest its unit is freed (its last backward op ends); on each rank the k-th claim comes
/// after the one before it and its forward's compute, and a lifetime after the claim max_live
/// before it; then the rank still computes the units from k on, and the last unit has its own
/// path to go.
template <time_type T>
T memory_bound(const model_desc& m, const chunks_alone& alone, const rank_ends& e,
               T forward_compute, T unit) {
  const int C = m.chunks();
  T out{0};
  for (int r = 0; r < m.ranks; ++r) {
    double life = never_at, after = never_at;
    for (int c = 0; c < C; ++c)
      if (m.rank_of(c) == r) {
        const auto ci = static_cast<std::size_t>(c);
        life = std::min(life, alone.done[ci] - alone.first[ci]);
        after = std::min(after, alone.end - alone.first[ci]);
      }
    const int n = units_of(m, r);
    if (n == 0) continue;
    const double head = e.head[static_cast<std::size_t>(r)];
    std::vector<double> claim(static_cast<std::size_t>(n));
    double lb = 0;
    for (int k = 0; k < n; ++k) {
      const auto ki = static_cast<std::size_t>(k);
      double c = k == 0 ? (head == never_at ? 0.0 : head) : claim[ki - 1] + forward_compute.count();
      if (k >= m.max_live) c = std::max(c, claim[ki - static_cast<std::size_t>(m.max_live)] + life);
      claim[ki] = c;
      lb = std::max(lb, c + static_cast<double>(n - k) * unit.count());
    }
    out = std::max(out, T(std::max(lb, claim.back() + after)));
  }
  return out;
}

}  // namespace detail

/// The bounds of problem `q`. `split`: plans may split backwards into dX and dW (then dW may be
/// a rank's last step, and nothing need follow it). Bidirectional models (DualPipe) get the
/// critical path and work bounds of their longer direction. Contention only slows a run, so
/// bounds computed without it (each op at its own cost) bound a contended run too; they are.
template <time_type T>
lower_bounds<T> bounds_of(const basic_problem<T>& contended, bool split = true) {
  basic_problem<T> q = contended;
  q.cost.contention = {};
  const model_desc& m = q.model;
  detail::check_pair_costs(q);
  lower_bounds<T> out;
  program fused_prog, split_prog;
  const basic_timeline<T> fused = detail::alone(q, false, fused_prog);
  // The split run with every dX no dearer than its fused backward: its chain of dX is then no
  // slower than any mix of fused and split backwards, even under a table where a dX costs more
  // than the whole backward.
  basic_problem<T> clipped = q;
  for (int k = 0; k < kind_count; ++k) {
    const auto kk = static_cast<kind>(k);
    clipped.cost.set(kk, phase::dX, std::min(q.cost.of(kk, phase::dX), q.cost.of(kk, phase::B)));
  }
  const basic_timeline<T> halves = split ? detail::alone(clipped, true, split_prog) : fused;
  const detail::chunks_alone alone = detail::chunks_of(
      m, fused, fused_prog, split ? &halves : nullptr, split ? &split_prog : nullptr);
  out.critical_path = T(alone.end);
  // A bidirectional model's micro-batches pass half the chunks: the simulation above passes all,
  // which is longer than either direction — use the work bound alone there.
  if (m.bidirectional) out.critical_path = T{0};

  const step_costs<T> cost(q);
  const T f = cost.f.work, b_fused = cost.b.work, b_split = cost.i.work + cost.w.work;
  const T b = split ? std::min(b_fused, b_split) : b_fused;
  T unit = f + b;
  // Pairs: a pair unit per layer of the chunk, as plans build them (the search's step cost).
  const T pair_step = cost.fb.length;
  if (m.stages.has(kind::block)) unit = std::min(unit, pair_step);

  const detail::rank_ends ends = detail::ends_alone(m.ranks, fused_prog, fused);
  out.work = detail::work_bound(m, ends, unit, split);
  // A forward takes at least its compute (inside a whole-block pair, at least what the pair adds
  // to its backward).
  T forward_compute = f;
  if (m.stages.has(kind::block)) forward_compute = std::min(f, std::max(T{0}, pair_step - b_fused));
  if (m.max_live > 0) out.memory = detail::memory_bound(m, alone, ends, forward_compute, unit);
  out.one_rank =
      detail::one_rank_bound(q, split, fused, fused_prog, halves, split ? split_prog : fused_prog);
  out.one_rank = std::max(out.one_rank, detail::vee_rank_bound(q, split, alone, halves,
                                                               split ? split_prog : fused_prog));
  // The first chunk's rank forwards every micro-batch there, in order.
  if (!m.bidirectional)
    out.in_order = forward_compute * static_cast<double>(m.micro - 1) + out.critical_path;
  return out;
}

}  // namespace weft::search
