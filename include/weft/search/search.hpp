// The schedule search: the fastest legal plan found for a problem (costs, a memory cap, the
// pipeline's shape) within a budget, beside every generator's plan and the lower bounds.
//
// Method (docs/search.md has the why): seed with every generator that applies to the model, and
// for a generator whose plan breaks the memory cap, that plan with its forwards over the cap held
// back; add the list scheduler's plans over a grid of policies (live limit, fused or split
// backward, pairs, chunk preference, dW placement), and for a generator whose plan breaks the
// cap, its steps up to the cap finished by each policy that pairs as it does; then improve the
// best few by local search — moves that keep each chunk's micro-batches in order (swap adjacent
// steps, move a dW later or earlier, split a backward into dX and dW or merge them back, pair a
// forward with an adjacent backward or part them; and, one move in 8 (16 where moves are
// estimated), ruin and recreate: keep every rank's steps up to a random point and let a random
// list-scheduler policy decide the rest), accepted by late-acceptance hill climbing. Every plan
// kept, reported or compared is judged by `evaluate`: built, proven legal by the checker (memory
// cap included) and simulated. Where every rank has a device of its own and nothing contends, the
// list scheduler's plans and the local search's moves are first estimated step by step
// (`step_timing`: linear in the steps, and from a move's first changed step on only) and only the
// promising ones judged. The sequence of evaluations depends only on the problem and the seed, so
// the result is the same for a seed whenever the evaluation (or estimate) cap, not the time budget,
// ends the search.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <weft/config.hpp>
#include <weft/generators/registry.hpp>
#include <weft/search/bounds.hpp>
#include <weft/search/evaluate.hpp>
#include <weft/search/list_scheduler.hpp>
#include <weft/search/step_timing.hpp>

namespace weft::search {

struct search_options {
  /// Wall-clock budget; the search stops at it or at `max_evaluations`, whichever comes first.
  double budget_s = 10;
  /// 0: no cap. With a cap reached before the budget, the result depends only on the seed.
  std::uint64_t max_evaluations = 0;
  /// 0: no cap on the search's step-by-step estimates (`step_timing`) but the budget's — or,
  /// with `max_evaluations`, `estimates_per_evaluation` of them for each plan it allows, so that
  /// a capped search ends on its counts alone.
  std::uint64_t max_estimates = 0;
  static constexpr std::uint64_t estimates_per_evaluation = 64;
  std::uint64_t seed = 1;
  /// May backwards be split into dX and dW?
  bool split = true;
  /// May a forward and a backward be overlapped as a pair? Default: when the problem's model
  /// gains from it (a whole-block pair cheaper than F + B, or MoE fb-overlap pairs).
  std::optional<bool> pair = std::nullopt;
  /// The largest plan searched, in steps (each micro-batch's forward and backward on each
  /// chunk); a larger problem is refused (`config_error`) rather than judged a few plans a
  /// minute far past the budget. Raise it to search one anyway.
  std::uint64_t max_steps = std::uint64_t{1} << 20;
};

/// A generator's plan for the problem, or why it has none (it does not apply, or it breaks the
/// memory cap).
template <time_type T>
struct generator_row {
  std::string name;
  std::optional<scored<T>> result;
  std::string why;
};

template <time_type T>
struct search_result {
  /// The best legal plan found; none when no generator applies or fits the memory cap and no
  /// list-scheduler policy finishes under it.
  std::optional<scored<T>> best;
  /// The generator, "NAME, forwards deferred under the cap", "list scheduler", "NAME, finished
  /// by the list scheduler" or "local search".
  std::string found_by;
  std::vector<generator_row<T>> generators;
  lower_bounds<T> bound;
  /// Plans judged in full (built, checked, lowered, simulated), and plans whose makespan the
  /// search estimated step by step (`step_timing`) to choose which to judge and walk on.
  std::uint64_t evaluations = 0, estimated = 0;
  double seconds = 0;
  /// The best generator's makespan (none applies: the list scheduler's best plan's).
  std::optional<scored<T>> best_generator() const {
    std::optional<scored<T>> b;
    for (const auto& g : generators)
      if (g.result && (!b || g.result->makespan < b->makespan)) b = g.result;
    return b;
  }
};

/// A generator's plan for a model, or why it has none (it does not apply to the model).
struct generator_order {
  std::string name;
  std::optional<step_order> p;
  std::string why;
};

/// Every generator of the registry (`generators`) that makes `m`'s placement and chunks (loop
/// with one chunk: GPipe, 1F1B, ZB-H1; loop with more: interleaved, with and without the extra
/// warm-up micro-batch and with NanoPipe, PyTorch's looped BFS and interleaved zero bubble; vee:
/// ZB-V, V-Half, V-Min and DualPipeV; bidirectional: DualPipe), as plans of `m`. A generator that
/// rejects the model (too few micro-batches for a V, say) has its error in `why`.
inline std::vector<generator_order> generator_orders(const model_desc& m,
                                                     overlap_options overlap = {}) {
  std::vector<generator_order> out;
  const auto add = [&](const std::string& name, auto&& make) {
    try {
      const schedule s = make();  // pipeline level: whole blocks, one layer
      if (s.model.ranks != m.ranks || s.model.chunks_per_rank != m.chunks_per_rank ||
          s.model.place != m.place || s.model.bidirectional != m.bidirectional) {
        out.push_back({name, std::nullopt, "a different model (placement or chunks)"});
        return;
      }
      step_order x = step_order_of(s, overlap);
      x.model = m;
      out.push_back({name, std::move(x), {}});
    } catch (const config_error& e) {
      out.push_back({name, std::nullopt, e.what()});
    }
  };
  // The registry's generators that make this shape of pipeline.
  for (const generator_info& g : generators) {
    if (g.place != m.place || g.bidirectional != m.bidirectional) continue;
    if (g.chunks_per_rank == 0 ? m.chunks_per_rank < 2 : g.chunks_per_rank != m.chunks_per_rank)
      continue;
    generator_args a;
    a.ranks = m.ranks;
    a.micro = m.micro;
    a.overlap = overlap;
    a.chunks = m.chunks_per_rank;
    for (const bool extra : {false, true}) {
      if (extra && !g.has_extra_warmup) break;
      a.extra_warmup = extra;
      add(std::string(g.name) + (extra ? "+1" : ""), [&] { return g.make(a); });
    }
    a.extra_warmup = false;
    if (g.has_nanopipe) {  // MindSpeed's NanoPipe: its deferred dW in the bubbles
      a.nanopipe = true;
      add(std::string(g.name) + "+nanopipe", [&] { return g.make(a); });
      a.nanopipe = false;
    }
  }
  return out;
}

namespace detail {

/// True when a rank's steps keep every chunk's forwards and backwards in micro-batch order and
/// each unit's forward before its backward before its dW, and no overlapped pair's backward
/// needs the pair's forward — what every move must keep, checked before a plan is worth the
/// checker's time. (A chunk's steps are all on its rank: each rank is checked alone.)
inline bool in_order(const model_desc& m, const std::vector<step>& steps) {
  const std::size_t C = static_cast<std::size_t>(m.chunks());
  // Per chunk: the last forward's, backward's and dW's micro-batch (they must grow); per
  // (micro-batch, chunk): 0 nothing yet, 1 its forward seen, 2 its dX, 3 its backward or dW.
  std::vector<int> next_f(C, -1), next_b(C, -1), next_w(C, -1);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(m.micro) * C, 0);
  const auto state = [&](int mb, int c) -> std::uint8_t& {
    return seen[static_cast<std::size_t>(mb) * C + static_cast<std::size_t>(c)];
  };
  const auto fwd = [&](int mb, int c) {
    if (mb <= next_f[static_cast<std::size_t>(c)]) return false;
    next_f[static_cast<std::size_t>(c)] = mb;
    state(mb, c) = 1;
    return true;
  };
  const auto bwd = [&](int mb, int c, std::uint8_t to) {
    if (mb <= next_b[static_cast<std::size_t>(c)] || state(mb, c) != 1) return false;
    next_b[static_cast<std::size_t>(c)] = mb;
    state(mb, c) = to;
    return true;
  };
  const auto known = [&](int mb, int c) { return mb < m.micro && static_cast<std::size_t>(c) < C; };
  for (const step& s : steps) {
    if (!known(s.mb, s.chunk) || (s.a == action::FB && !known(s.bmb, s.bchunk))) return false;
    bool ok = true;
    switch (s.a) {
      case action::F:
        ok = fwd(s.mb, s.chunk);
        break;
      case action::B:
        ok = bwd(s.mb, s.chunk, 3);
        break;
      case action::I:
        ok = bwd(s.mb, s.chunk, 2);
        break;
      case action::W:
        ok = state(s.mb, s.chunk) == 2 && s.mb > next_w[s.chunk];
        if (ok) {
          next_w[s.chunk] = s.mb;
          state(s.mb, s.chunk) = 3;
        }
        break;
      case action::FB:  // a pair's backward cannot need its own forward (rule 3)
        ok = !(s.mb == s.bmb && s.chunk >= s.bchunk) && fwd(s.mb, s.chunk) &&
             bwd(s.bmb, s.bchunk, 3);
        break;
    }
    if (!ok) return false;
  }
  return true;
}
/// The same for every rank of `p`.
inline bool in_order(const step_order& p) {
  for (const std::vector<step>& steps : p.ranks)
    if (!in_order(p.model, steps)) return false;
  return true;
}

/// What a move changed: rank `rank`'s steps from `from` on (the units they hold stay its own).
struct changed {
  std::size_t rank = 0, from = 0;
};

/// One random move on `p`: what it changed, nothing when it left `p` as it was (it may leave
/// it out of order: the caller checks).
inline std::optional<changed> move(step_order& p, std::mt19937_64& rng, bool split, bool pair) {
  auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
  };
  const std::size_t r = pick(p.ranks.size());
  auto& steps = p.ranks[r];
  if (steps.size() < 2) return std::nullopt;
  const std::size_t i = pick(steps.size());
  const auto at = [&](std::size_t from) { return std::optional<changed>(changed{r, from}); };
  switch (pick(6)) {
    case 0:  // swap with the next step
      if (i + 1 >= steps.size() || steps[i] == steps[i + 1]) return std::nullopt;
      std::swap(steps[i], steps[i + 1]);
      return at(i);
    case 1: {  // move a step a few places
      const std::size_t j = std::min(steps.size() - 1, i + 1 + pick(4));
      if (j == i) return std::nullopt;
      const step s = steps[i];
      steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(i));
      steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(j), s);
      return at(i);
    }
    case 2: {  // move a dW anywhere later or earlier (into a bubble)
      std::vector<std::size_t> ws;
      for (std::size_t k = 0; k < steps.size(); ++k)
        if (steps[k].a == action::W) ws.push_back(k);
      if (ws.empty()) return std::nullopt;
      const std::size_t k = ws[pick(ws.size())];
      const step s = steps[k];
      steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(k));
      const std::size_t to = pick(steps.size() + 1);
      steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(to), s);
      if (to == k) return std::nullopt;
      return at(std::min(k, to));
    }
    case 3: {  // split a backward: dX here, dW right after or later
      if (!split || steps[i].a != action::B) return std::nullopt;
      steps[i].a = action::I;
      const std::size_t j = i + 1 + pick(steps.size() - i);
      steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(j),
                   step{action::W, steps[i].mb, steps[i].chunk, 0, 0});
      return at(i);
    }
    case 4:  // merge a dX with its dW
      if (steps[i].a == action::I) {
        for (std::size_t k = i + 1; k < steps.size(); ++k)
          if (steps[k].a == action::W && steps[k].mb == steps[i].mb &&
              steps[k].chunk == steps[i].chunk) {
            steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(k));
            steps[i].a = action::B;
            return at(i);
          }
      }
      return std::nullopt;
    default:  // pair a forward with the next step's backward, or part a pair
      if (!pair) return std::nullopt;
      if (steps[i].a == action::FB) {
        const step f{action::F, steps[i].mb, steps[i].chunk, 0, 0};
        const step b{action::B, steps[i].bmb, steps[i].bchunk, 0, 0};
        steps[i] = pick(2) ? f : b;
        steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(i + 1), steps[i] == f ? b : f);
        return at(i);
      } else if (i + 1 < steps.size()) {
        const step& a = steps[i];
        const step& b = steps[i + 1];
        const step* f = a.a == action::F ? &a : b.a == action::F ? &b : nullptr;
        const step* k = a.a == action::B ? &a : b.a == action::B ? &b : nullptr;
        if (!f || !k) return std::nullopt;
        const step fb{action::FB, f->mb, f->chunk, k->mb, k->chunk};
        steps[i] = fb;
        steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(i + 1));
        return at(i);
      }
      return std::nullopt;
  }
}

/// How far above the best estimate so far a plan's estimate may be and the plan still be
/// judged: `step_timing` came within 6 % of the simulator on the suite's MoE V and exactly on
/// its cross-DC loop (bench/search_rate, docs/benchmarks.md) — the slack leaves room for plans
/// unlike those measured — so a plan estimated further off is not worth the simulator.
inline constexpr double estimate_slack = 0.10;

/// The live limits and warm-up depths the list scheduler's grid tries, from `cap` down: every one
/// up to 128, above that a ladder about 6 % apart — a cap is a user's number, and a grid as large
/// as the cap would be built before the budget starts (2^30: gigabytes).
inline std::vector<int> policy_levels(int cap) {
  constexpr int every = 128;
  std::vector<int> out;
  for (double x = cap; x > every; x /= 1.0625) {
    const int v = static_cast<int>(x);
    if (out.empty() || v < out.back()) out.push_back(v);
  }
  for (int v = std::min(cap, every); v >= 1; --v)
    if (out.empty() || v < out.back()) out.push_back(v);
  return out;
}

/// Refuses a problem the search cannot take: an invalid model, a run's work instead of costs,
/// more steps than `opt.max_steps`.
template <time_type T>
void check_searchable(const basic_problem<T>& q, const search_options& opt) {
  const model_desc& m = q.model;
  if (const model_error e = validate(m); e != model_error::none)
    throw config_error("weft: search: " + std::string(describe(e)));
  if (!q.sim.work.empty())
    throw config_error(
        "weft: search: sim_options::work is one run's work per op copy, not a plan's; give the "
        "cost model instead (calibrated from the run)");
  const std::uint64_t steps = 2 * static_cast<std::uint64_t>(m.micro) *
                              static_cast<std::uint64_t>(m.chunks()) / (m.bidirectional ? 2u : 1u);
  if (steps > opt.max_steps)
    throw config_error("weft: search: " + std::to_string(steps) +
                       " steps (a forward and a backward per micro-batch and chunk) is over the "
                       "search's limit of " +
                       std::to_string(opt.max_steps) +
                       ": each of the thousands of plans a search judges would take seconds "
                       "(search_options::max_steps; to compare the generators, simulate them)");
}

/// Pairs bring a gain when one is shorter than its halves one after the other (with costs per
/// chunk: when some chunk's communication can hide behind compute).
template <time_type T>
bool pairs_gain(const basic_problem<T>& q) {
  if (q.cost.chunks.empty())
    return q.cost.pair() < q.cost.of(kind::block, phase::F) + q.cost.of(kind::block, phase::B);
  for (const chunk_cost<T>& x : q.cost.chunks)
    if (x.comm_F > T{0} || x.comm_B > T{0}) return true;
  return false;
}

/// Does plan `p` split backwards into dX and dW?
inline bool splits_backwards(const step_order& p) {
  for (const auto& rank : p.ranks)
    for (const step& x : rank)
      if (x.a == action::I || x.a == action::W) return true;
  return false;
}

/// The list scheduler's policies the search tries, in this order: at the cap, every warm-up
/// depth (forwards ahead of their backwards) staggered as 1F1B (one fewer per rank down the
/// pipeline) or as the interleaved and V schedules (two fewer); then every live limit up to the
/// cap; each with split or fused backwards, paired or not, either chunk order and dW filling
/// waits or not.
inline std::vector<list_policy> policy_grid(const model_desc& m, int cap, bool split_allowed,
                                            bool pair) {
  std::vector<list_policy> policies;
  const auto variants = [&](list_policy base) {
    for (const bool split : {true, false}) {
      if (split && !split_allowed) continue;
      for (const bool pairs : {false, true}) {
        if (pairs && !pair) continue;
        for (const bool later : {true, false}) {
          if (!later && m.chunks_per_rank == 1) continue;
          for (const bool fit : {false, true}) {
            if (fit && !split) continue;
            list_policy p = base;
            p.split = split;
            p.pair = pairs;
            p.later_chunk_first = later;
            p.fit_weights = fit;
            policies.push_back(p);
          }
        }
      }
    }
  };
  const std::vector<int> levels = policy_levels(cap);
  for (const int depth : levels)
    for (const int stagger : {1, 2})
      for (const bool forward_first : {true, false})
        variants({.live_limit = cap,
                  .inflight = depth,
                  .stagger = stagger,
                  .forward_first = forward_first});
  for (const int limit : levels) variants({.live_limit = limit});
  return policies;
}

/// How many steps of each rank of `p` hold at most `cap` live units (`live_change_of`). Where a
/// generator's plan breaks the cap, its steps up to there are what it does within it.
inline std::vector<std::size_t> steps_within(const step_order& p, int cap) {
  std::vector<std::size_t> keep(p.ranks.size());
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    int live = 0;
    std::size_t k = 0;
    for (; k < p.ranks[r].size(); ++k) {
      const live_change c = live_change_of(p.ranks[r][k].a);
      if (live + c.claims > cap) break;
      live += c.claims - c.frees;
    }
    keep[r] = k;
  }
  return keep;
}

/// Whether `steps_within`'s `keep` leaves a step of `p` out: then the cap refuses it (perhaps
/// not alone).
inline bool cut_by_cap(const step_order& p, const std::vector<std::size_t>& keep) {
  for (std::size_t r = 0; r < keep.size(); ++r)
    if (keep[r] < p.ranks[r].size()) return true;
  return false;
}

/// `p` with every forward that would take its rank over `cap` live units held back, in order,
/// for the next backward — a pair's forward past its own pair's backward, which then runs alone.
/// The oldest held forward goes with that backward, overlapped with it where the pair fits (so
/// from there each forward pairs with the next pair's backward: DualPipeV's pairs shifted by one,
/// a unit fewer in flight), else right after it. A dX or backward of a held forward's
/// micro-batch at the forward's chunk or an earlier one needs it: it goes first, with every
/// forward held before it. After a dW held forwards go while they fit, and at the rank's end
/// whatever is left. Whether the result is legal is the checker's to say: a forward that cannot
/// wait may still break the cap. A cap of 0 (none) leaves `p` as it is.
inline step_order forwards_deferred(const step_order& p, int cap) {
  if (cap <= 0) return p;
  step_order out{p.model, p.overlap, {}};
  for (const std::vector<step>& steps : p.ranks) {
    std::vector<step>& v = out.ranks.emplace_back();
    std::vector<step> held;  // forwards held back, oldest first
    int live = 0;
    const auto forward = [&](const step& f) {
      v.push_back({action::F, f.mb, f.chunk});
      ++live;
    };
    const auto release_through = [&](std::vector<step>::iterator last) {
      for (auto i = held.begin(); i != last; ++i) forward(*i);
      held.erase(held.begin(), last);
    };
    const auto release_fitting = [&] {
      auto i = held.begin();
      for (; i != held.end() && live + 1 <= cap; ++i) forward(*i);
      held.erase(held.begin(), i);
    };
    // A backward of (mb, chunk) needs mb's forward of its chunk and of every later chunk on
    // mb's path (through the next chunks' backwards): held ones go first.
    const auto own_forward_first = [&](std::uint16_t mb, std::uint16_t chunk) {
      const auto needed = [&](const step& f) { return f.mb == mb && f.chunk >= chunk; };
      const auto last = std::find_if(held.rbegin(), held.rend(), needed);
      if (last != held.rend()) release_through(last.base());
    };
    const auto backward = [&](std::uint16_t mb, std::uint16_t chunk) {
      own_forward_first(mb, chunk);
      if (!held.empty() && live + 1 <= cap) {
        v.push_back({action::FB, held.front().mb, held.front().chunk, mb, chunk});
        held.erase(held.begin());
      } else {
        v.push_back({action::B, mb, chunk});
        --live;
        release_fitting();
      }
    };
    for (const step& s : steps) {
      switch (s.a) {
        case action::FB:
          if (held.empty() && live + 1 <= cap) {
            v.push_back(s);
          } else {
            backward(s.bmb, s.bchunk);
            held.push_back({action::F, s.mb, s.chunk});
          }
          break;
        case action::B:
          backward(s.mb, s.chunk);
          break;
        case action::F:
          if (held.empty() && live + 1 <= cap)
            forward(s);
          else
            held.push_back(s);
          break;
        case action::I:
          own_forward_first(s.mb, s.chunk);
          v.push_back(s);
          break;
        case action::W:
          v.push_back(s);
          --live;
          release_fitting();
          break;
      }
    }
    release_through(held.end());
  }
  return out;
}

/// Local search from the best few distinct `starts`, in turn, until `out_of_budget()`: each
/// move either a small change of the plan (`detail::move`) or, one time in 8 (16 with `timing`),
/// ruin and recreate (keep every rank's steps up to a random point, let a random policy decide the
/// rest); late acceptance over the last 50 accepted. `judge` scores a plan and keeps the best.
/// With `timing` (`estimable` problems), the walks go by its estimates (each
/// counted in `estimated`) and the simulator judges a plan only when its estimate beats its
/// walk's best so far, or ties it (one such plan in `tie_every`: among plans the estimate
/// cannot tell apart, the simulator's is the word that counts). Else every plan is judged.
template <time_type T, class Judge, class OutOfBudget>
void local_search(const basic_problem<T>& q, const search_options& opt,
                  const std::vector<list_policy>& policies, std::vector<scored<T>> starts,
                  bool pair, const Judge& judge, const OutOfBudget& out_of_budget,
                  step_timing<T>* timing, std::uint64_t& estimated) {
  std::sort(starts.begin(), starts.end(),
            [](const scored<T>& a, const scored<T>& b) { return a.makespan < b.makespan; });
  starts.erase(std::unique(starts.begin(), starts.end(),
                           [](const scored<T>& a, const scored<T>& b) { return a.p == b.p; }),
               starts.end());
  if (starts.size() > 3) starts.resize(3);
  struct walk {
    step_order now;
    double cost = 0;              // the simulated makespan; with `timing`, the estimate
    double best = 0;              // with `timing`, the least estimate the walk has met
    std::vector<double> history;  // late acceptance: the costs of the last L accepted
    std::size_t tick = 0, ties = 0;
    std::optional<step_timing<T>> estimates;  // with `timing`, its own: it keeps `now`'s times
  };
  constexpr std::size_t L = 50, tie_every = 8;
  constexpr double tie = 1e-12;  // relative: estimates are sums of the same lengths in any order
  std::vector<walk> walks;
  for (const scored<T>& s : starts) {
    walk& k = walks.emplace_back();
    k.now = s.p;
    k.cost = s.makespan.count();
    if (timing) {
      k.estimates.emplace(*timing);
      ++estimated;
      if (const std::optional<double> c = (*k.estimates)(s.p); c && k.estimates->keep())
        k.cost = *c;
    }
    k.best = k.cost;
    k.history.assign(L, k.cost);
  }
  std::mt19937_64 rng(opt.seed);
  std::vector<std::size_t> same;  // per rank, how many of its first steps the move kept
  // Ruin and recreate runs the list scheduler, as dear as a dozen estimates: one move in 16 by
  // the estimate, one in 8 by the simulator.
  const int ruin_every = timing ? 16 : 8;
  for (std::size_t w = 0; !out_of_budget(); w = (w + 1) % walks.size()) {
    walk& k = walks[w];
    step_order p = k.now;
    same.resize(p.ranks.size());
    if (std::uniform_int_distribution<int>(0, ruin_every - 1)(rng) == 0 && !policies.empty()) {
      const double cut = std::uniform_real_distribution<double>(0, 1)(rng);
      for (std::size_t r = 0; r < same.size(); ++r)
        same[r] = static_cast<std::size_t>(cut * static_cast<double>(p.ranks[r].size()));
      const list_policy& pol =
          policies[std::uniform_int_distribution<std::size_t>(0, policies.size() - 1)(rng)];
      std::optional<step_order> again = list_schedule(q, pol, &k.now, same);
      if (!again || *again == k.now || !in_order(*again)) continue;
      p = std::move(*again);
    } else {
      const std::optional<changed> ch = detail::move(p, rng, opt.split, pair);
      if (!ch || !in_order(p.model, p.ranks[ch->rank])) continue;
      for (std::size_t r = 0; r < same.size(); ++r) same[r] = p.ranks[r].size();
      same[ch->rank] = ch->from;
    }
    std::optional<double> c;
    if (k.estimates) {
      ++estimated;
      c = (*k.estimates)(p, same);
      if (c) {
        const bool better = *c < k.best * (1 - tie);
        // A plan the checker refuses is not walked on, whatever its estimate.
        if ((better || (*c <= k.best * (1 + tie) && k.ties++ % tie_every == 0)) &&
            !judge(p, "local search"))
          c.reset();
        else
          k.best = std::min(k.best, *c);
      }
    } else if (const std::optional<scored<T>> s = judge(p, "local search")) {
      c = s->makespan.count();
    }
    if (c && (*c <= k.cost || *c <= k.history[k.tick % L])) {
      if (k.estimates) k.estimates->keep();
      k.now = std::move(p);
      k.cost = *c;
    }
    k.history[k.tick++ % L] = k.cost;
  }
}

/// The search's first candidates (its stages 1 and 1b, docs/search.md): every generator's plan
/// judged, each a row of `out.generators`, and where a generator's plan breaks the cap, that
/// plan with its forwards held back; every legal one appended to `starts`. Returns the
/// generators refused (under a cap, by it mostly), for stage 2b.
template <time_type T, class Judge, class OutOfBudget>
std::vector<generator_order> judge_generators(const basic_problem<T>& q, const search_options& opt,
                                              const Judge& judge, const OutOfBudget& out_of_budget,
                                              search_result<T>& out,
                                              std::vector<scored<T>>& starts) {
  // 1. Every generator that applies. Without split backwards, a generator that splits them
  //    (ZB-H1, ZB-V) is outside the problem asked — and outside what its bounds (fused
  //    backwards only) hold for.
  std::vector<generator_order> over_cap;  // judged and refused (under a cap: by it, mostly)
  for (generator_order& g : generator_orders(q.model, q.overlap)) {
    generator_row<T> row{g.name, std::nullopt, g.why};
    if (g.p && !opt.split && detail::splits_backwards(*g.p))
      row.why =
          "splits backwards into dX and dW, which this search does not "
          "(search_options::split)";
    else if (g.p) {
      row.result = judge(*g.p, g.name, &row.why);
      if (!row.result && q.model.max_live > 0) over_cap.push_back(std::move(g));
    }
    out.generators.push_back(std::move(row));
  }
  for (const auto& g : out.generators)
    if (g.result) starts.push_back(*g.result);
  // 1b. A generator's plan that breaks the cap, with its forwards over the cap held back to the
  //     next backward (`detail::forwards_deferred`): one plan each. DualPipeV's pairs hold a unit
  //     more than its warm-up claims, so a cap of 2·ranks halves (ZB-V's) refuses it by one;
  //     held back, its first over-cap pair's backward runs alone and from there each forward
  //     pairs with the next pair's backward.
  for (const generator_order& g : over_cap) {
    if (out_of_budget()) break;
    if (!detail::cut_by_cap(*g.p, detail::steps_within(*g.p, q.model.max_live))) continue;
    if (auto s = judge(detail::forwards_deferred(*g.p, q.model.max_live),
                       g.name + ", forwards deferred under the cap"))
      starts.push_back(std::move(*s));
  }
  return over_cap;
}

}  // namespace detail

/// Searches `q` for the plan of least simulated makespan (see the file's comment).
template <time_type T>
search_result<T> find_schedule(const basic_problem<T>& q, const search_options& opt = {}) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, opt.budget_s)));
  const model_desc& m = q.model;
  detail::check_searchable(q, opt);
  const bool pair = opt.pair.value_or(m.stages.has(kind::block) ? detail::pairs_gain(q)
                                                                : q.overlap.pair_forward_backward);
  search_result<T> out;
  std::optional<scored<T>> best;
  // A plan at the lower bound is optimal: nothing is left to find (the bounds hold for a device
  // per rank only).
  out.bound = bounds_of(q, opt.split);
  const double floor = out.bound.best().count() * (1 + 1e-12);
  const auto out_of_budget = [&] {
    const std::uint64_t max_estimates =
        opt.max_estimates > 0 ? opt.max_estimates
                              : opt.max_evaluations * search_options::estimates_per_evaluation;
    return (opt.max_evaluations > 0 && out.evaluations >= opt.max_evaluations) ||
           (max_estimates > 0 && out.estimated >= max_estimates) || clock::now() >= deadline ||
           (q.workers == 0 && best && best->makespan.count() <= floor);
  };
  const auto judge = [&](const step_order& p, const std::string& by, std::string* why = nullptr) {
    ++out.evaluations;
    std::optional<scored<T>> s = evaluate(q, p, why);
    if (s && (!best || s->makespan < best->makespan)) {
      best = s;
      out.found_by = by;
    }
    return s;
  };

  std::vector<scored<T>> starts;
  const std::vector<generator_order> over_cap =
      detail::judge_generators(q, opt, judge, out_of_budget, out, starts);
  // 2. The list scheduler over its policies. A rank holds at most a unit per micro-batch and
  //    chunk of its own: a cap above that is none.
  const int units = m.micro * m.chunks_per_rank;
  const int cap = m.max_live > 0 ? std::min(m.max_live, units) : units;
  const std::vector<list_policy> policies = detail::policy_grid(m, cap, opt.split, pair);
  //    Where plans can be estimated, only those whose estimate is within `estimate_slack` of
  //    the best estimate of a plan judged so far are judged: a grid of hundreds of plans at
  //    pp 16 would take the budget's whole 10 s in the simulator.
  std::optional<step_timing<T>> timing;
  if (estimable(q)) timing.emplace(q);
  double best_estimate = std::numeric_limits<double>::infinity();
  for (const scored<T>& s : starts)
    if (timing) {
      ++out.estimated;
      best_estimate = std::min(best_estimate, (*timing)(s.p).value_or(best_estimate));
    }
  const auto worth_judging = [&](const step_order& p) {
    if (!timing) return true;
    ++out.estimated;
    const std::optional<double> e = (*timing)(p);
    if (!e || *e > best_estimate * (1 + detail::estimate_slack)) return false;
    best_estimate = std::min(best_estimate, *e);
    return true;
  };
  for (const list_policy& pol : policies) {
    if (out_of_budget()) break;
    const std::optional<step_order> p = list_schedule(q, pol);
    if (!p || !worth_judging(*p)) continue;
    if (auto s = judge(*p, "list scheduler")) starts.push_back(std::move(*s));
  }
  // 2b. A generator's plan of overlapped pairs that breaks the cap, kept up to where it would
  //     break it and finished by each pairing policy: most of DualPipeV's order, the rest the list
  //     scheduler's. Only pairs: every unpaired warm-up is already one of the grid's policies.
  for (const generator_order& g : over_cap) {
    const std::vector<std::size_t> keep = detail::steps_within(*g.p, m.max_live);
    bool pairs = false;
    for (const std::vector<step>& steps : g.p->ranks)
      for (const step& x : steps) pairs = pairs || x.a == action::FB;
    if (!pairs || !detail::cut_by_cap(*g.p, keep)) continue;
    for (const list_policy& pol : policies) {
      if (out_of_budget()) break;
      if (!pol.pair) continue;
      const std::optional<step_order> p = list_schedule(q, pol, &*g.p, keep);
      if (!p || !worth_judging(*p)) continue;
      if (auto s = judge(*p, g.name + ", finished by the list scheduler"))
        starts.push_back(std::move(*s));
    }
  }
  // 3. Local search from the best starts; nothing legal (no generator applies and no policy
  //    fits the cap) leaves nothing to start from.
  if (best)
    detail::local_search(q, opt, policies, std::move(starts), pair, judge, out_of_budget,
                         timing ? &*timing : nullptr, out.estimated);
  out.best = best;
  out.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return out;
}

#ifdef WEFT_SEPARATE_COMPILATION
// Compiled once into weft::compiled (src/search.cpp): a trainer's file that searches compiles
// the search and instantiates none of it (extern template).
extern template search_result<units> find_schedule(const basic_problem<units>&,
                                                   const search_options&);
extern template search_result<seconds> find_schedule(const basic_problem<seconds>&,
                                                     const search_options&);
#endif

/// Names of one release ago ("plan" is the job planner's word).
using generator_plan [[deprecated("search::generator_plan is search::generator_order")]] =
    generator_order;
[[deprecated(
    "search::generator_plans is search::generator_orders")]] inline std::vector<generator_order>
generator_plans(const model_desc& m, overlap_options overlap = overlap_options::none()) {
  return generator_orders(m, overlap);
}

}  // namespace weft::search
