// Round scheduling for adaptive context parallelism (MindSpeed's adaptive-cp note). Rank p holds
// slice p of the (re-mapped) sequence: its queries Q_p, keys and values KV_p, and owns the output
// O_p. Every non-empty cell (i, j) of the cp x cp grid is a task: attention of Q_i over KV_j. A
// task runs on rank i (KV_j comes over: 2 units on each side, that round) or on rank j (Q_i comes
// over: 1 unit each side; the partial output goes back to i in the next round: 1 unit each side);
// never on a rank that holds neither (the traffic would be too large). Each rank runs at most one
// task per round and moves at most `cap` units per round. `assign_rounds` looks for the fewest
// rounds; `validate` checks any assignment against the grid.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/time.hpp>
#include <weft/cp/mask.hpp>

namespace weft::cp {

/// Communication units, the note's accounting: a KV block counts 2 (keys and values), a Q
/// block or a partial output 1.
inline constexpr int kv_units = 2, q_units = 1, o_units = 1;

struct round_options {
  int cap = 6;  ///< units a rank may send plus receive in one round
  /// Randomised greedy attempts per round count before trying more rounds.
  int attempts = 256;
  std::uint64_t seed = 7;
  /// Wall-clock time the search may take; then the best valid plan found so far is returned
  /// (`round_assignment::budget_exhausted`). A plan always exists: one task every other round.
  seconds budget{2};
};

struct cp_task {
  int q = 0, kv = 0;  ///< query slice, key/value slice
  friend bool operator==(const cp_task&, const cp_task&) = default;
};

/// One rank's transfers in one round; each entry names the peer.
struct transfers {
  std::vector<int> recv_q_src, recv_kv_src, recv_o_src, send_q_dst, send_kv_dst, send_o_dst;

  int units() const noexcept {
    return kv_units * static_cast<int>(recv_kv_src.size() + send_kv_dst.size()) +
           q_units * static_cast<int>(recv_q_src.size() + send_q_dst.size()) +
           o_units * static_cast<int>(recv_o_src.size() + send_o_dst.size());
  }
};

struct round_assignment {
  int cp = 0, cap = 0;
  std::vector<cp_task> tasks;  ///< every non-empty grid cell, row by row
  int rounds = 0;
  int lower_bound = 0;  ///< ceil(tasks / cp)
  /// The search ran out of `round_options::budget`: the plan is valid, maybe not the fewest rounds
  /// the planner could find with more time.
  bool budget_exhausted = false;
  /// [round][rank]: the task it runs, or -1.
  std::vector<std::vector<int>> run;
  /// [round][rank]: its transfers. One more round than `rounds`: the last returns outputs.
  std::vector<std::vector<transfers>> moves;

  int max_comm_units() const noexcept {
    int m = 0;
    for (const auto& round : moves)
      for (const transfers& t : round) m = std::max(m, t.units());
    return m;
  }
};

namespace detail {

/// Adds the transfers task `t` needs when rank `p` runs it in round `r`.
inline void add_moves(round_assignment& pl, const cp_task& t, int p, int r) {
  auto& now = pl.moves[static_cast<std::size_t>(r)];
  if (p != t.kv) {
    now[static_cast<std::size_t>(p)].recv_kv_src.push_back(t.kv);
    now[static_cast<std::size_t>(t.kv)].send_kv_dst.push_back(p);
  }
  if (p != t.q) {
    now[static_cast<std::size_t>(p)].recv_q_src.push_back(t.q);
    now[static_cast<std::size_t>(t.q)].send_q_dst.push_back(p);
    auto& next = pl.moves[static_cast<std::size_t>(r + 1)];
    next[static_cast<std::size_t>(p)].send_o_dst.push_back(t.q);
    next[static_cast<std::size_t>(t.q)].recv_o_src.push_back(p);
  }
}

/// Units per (round, rank) that running task `t` on rank `p` in round `r` adds: (rank, round
/// offset, units) for each side.
struct cost_item {
  int rank, dround, units;
};
inline int cost_of(const cp_task& t, int p, cost_item out[4]) {
  int n = 0;
  if (p != t.kv) {
    out[n++] = {p, 0, kv_units};
    out[n++] = {t.kv, 0, kv_units};
  } else if (p != t.q) {
    out[n++] = {p, 0, q_units};
    out[n++] = {t.q, 0, q_units};
  }
  if (p != t.q && p == t.kv) {
    out[n++] = {p, 1, o_units};
    out[n++] = {t.q, 1, o_units};
  }
  return n;
}

/// One randomised greedy pass with `rounds` rounds; true if every task found a place.
inline bool greedy(const std::vector<cp_task>& tasks, const std::vector<std::vector<int>>& tasks_of,
                   int cp, int rounds, int cap, std::mt19937_64& rng,
                   std::vector<std::vector<int>>& run, std::vector<int>& runner) {
  const auto T = static_cast<int>(tasks.size());
  std::vector<int> used(static_cast<std::size_t>((rounds + 1) * cp), 0);
  const auto units = [&](int r, int p) -> int& {
    return used[static_cast<std::size_t>(r * cp + p)];
  };
  run.assign(static_cast<std::size_t>(rounds), std::vector<int>(static_cast<std::size_t>(cp), -1));
  runner.assign(static_cast<std::size_t>(T), -1);
  // Tasks each rank could run, and how many of them are still open.
  std::vector<int> open_of(static_cast<std::size_t>(cp), 0);
  for (const cp_task& t : tasks) {
    ++open_of[static_cast<std::size_t>(t.q)];
    if (t.kv != t.q) ++open_of[static_cast<std::size_t>(t.kv)];
  }
  std::uniform_real_distribution<double> noise(0.0, 1.0);
  int left = T;
  std::vector<int> ranks(static_cast<std::size_t>(cp));
  for (int r = 0; r < rounds && left > 0; ++r) {
    if (left > cp * (rounds - r)) return false;
    for (int p = 0; p < cp; ++p) ranks[static_cast<std::size_t>(p)] = p;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    // Ranks with the most open work choose first.
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
      return open_of[static_cast<std::size_t>(a)] > open_of[static_cast<std::size_t>(b)];
    });
    for (const int p : ranks) {
      int best = -1;
      double best_key = -1;
      for (const int x : tasks_of[static_cast<std::size_t>(p)]) {  // the tasks p may run
        if (runner[static_cast<std::size_t>(x)] >= 0) continue;
        const cp_task& t = tasks[static_cast<std::size_t>(x)];
        cost_item c[4];
        const int n = cost_of(t, p, c);
        bool fits = true;
        for (int i = 0; i < n && fits; ++i)
          fits = units(r + c[i].dround, c[i].rank) + c[i].units <= cap;
        if (!fits) continue;
        // Prefer what relieves the busiest other rank, then cheap traffic, with a little noise.
        const int other = t.q == p ? t.kv : t.q;
        int traffic = 0;
        for (int i = 0; i < n; ++i) traffic += c[i].units;
        const double key = (other == p ? 0.5 : open_of[static_cast<std::size_t>(other)]) * 16.0 -
                           traffic + noise(rng);
        if (key > best_key) {
          best_key = key;
          best = x;
        }
      }
      if (best < 0) continue;
      const cp_task& t = tasks[static_cast<std::size_t>(best)];
      cost_item c[4];
      const int n = cost_of(t, p, c);
      for (int i = 0; i < n; ++i) units(r + c[i].dround, c[i].rank) += c[i].units;
      runner[static_cast<std::size_t>(best)] = p;
      run[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)] = best;
      --open_of[static_cast<std::size_t>(t.q)];
      if (t.kv != t.q) --open_of[static_cast<std::size_t>(t.kv)];
      --left;
    }
  }
  return left == 0;
}

}  // namespace detail

/// The fewest-rounds plan the planner finds for `g` (a cp x cp grid) under `o.cap`. Throws
/// `config_error` when no plan can exist: a cap below one unit with work that crosses ranks.
inline round_assignment assign_rounds(const dense_mask& g, round_options o = {}) {
  round_assignment pl;
  pl.cp = g.size();
  pl.cap = o.cap;
  bool crosses = false;
  for (int i = 0; i < pl.cp; ++i)
    for (int j = 0; j < pl.cp; ++j)
      if (g(i, j)) {
        pl.tasks.push_back({i, j});
        crosses = crosses || i != j;
      }
  const auto T = static_cast<int>(pl.tasks.size());
  pl.lower_bound = (T + pl.cp - 1) / pl.cp;
  if (crosses && o.cap < std::min(q_units, kv_units))
    throw config_error("weft: cp rounds: a cap of " + std::to_string(o.cap) +
                       " units per rank and round leaves no way to move a block; work crosses "
                       "ranks, so the cap must be >= " +
                       std::to_string(q_units));
  std::vector<std::vector<int>> tasks_of(static_cast<std::size_t>(pl.cp));
  for (int x = 0; x < T; ++x) {
    const cp_task& t = pl.tasks[static_cast<std::size_t>(x)];
    tasks_of[static_cast<std::size_t>(t.q)].push_back(x);
    if (t.kv != t.q) tasks_of[static_cast<std::size_t>(t.kv)].push_back(x);
  }
  // The fewest rounds the randomised greedy fills: from the lower bound up in growing steps
  // (a few attempts each, so a plan is in hand early), then bisect down to the failure below
  // it with every attempt; all within the budget.
  const int attempts = std::max(1, o.attempts), probe = std::min(attempts, 4);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(o.budget);
  std::mt19937_64 rng(o.seed);
  std::vector<std::vector<int>> run, best_run;
  std::vector<int> runner;
  const auto fits_in = [&](int rounds, int attempts) {
    for (int a = 0; a < attempts; ++a) {
      if (detail::greedy(pl.tasks, tasks_of, pl.cp, rounds, o.cap, rng, run, runner)) return true;
      if (std::chrono::steady_clock::now() >= deadline) {
        pl.budget_exhausted = true;
        return false;
      }
    }
    return false;
  };
  const int always = std::max(2 * T, pl.lower_bound);  // one task every other round
  int best = -1, failed = pl.lower_bound - 1;
  for (int step = 1, r = pl.lower_bound; r < always && !pl.budget_exhausted; step *= 2) {
    if (fits_in(r, probe)) {
      best = r;
      best_run = run;
      break;
    }
    failed = r;
    r = std::min(always, pl.lower_bound + step);
  }
  failed = pl.lower_bound - 1;  // what failed a few attempts may take more
  while (best >= 0 && best - failed > 1 && !pl.budget_exhausted) {
    const int mid = failed + (best - failed) / 2;
    if (fits_in(mid, attempts)) {
      best = mid;
      best_run = run;
    } else {
      failed = mid;
    }
  }
  int rounds = best;
  run = best_run;
  if (best < 0) {
    rounds = always;
    run.assign(static_cast<std::size_t>(rounds),
               std::vector<int>(static_cast<std::size_t>(pl.cp), -1));
    for (int x = 0; x < T; ++x)
      run[static_cast<std::size_t>(2 * x)]
         [static_cast<std::size_t>(pl.tasks[static_cast<std::size_t>(x)].kv)] = x;
  }
  pl.rounds = rounds;
  pl.run = run;
  pl.moves.assign(static_cast<std::size_t>(rounds + 1),
                  std::vector<transfers>(static_cast<std::size_t>(pl.cp)));
  for (int r = 0; r < rounds; ++r)
    for (int p = 0; p < pl.cp; ++p)
      if (const int x = pl.run[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)]; x >= 0)
        detail::add_moves(pl, pl.tasks[static_cast<std::size_t>(x)], p, r);
  return pl;
}

namespace detail {

/// Where a validation error is: "round r, rank p".
inline std::string where(int r, int p) {
  return "round " + std::to_string(r) + ", rank " + std::to_string(p);
}

/// "(i, j)", a cell of the grid. Built by appending: g++ 12 warns falsely (-Wrestrict) on a
/// literal + std::string chain here at -O3.
inline std::string cell(int i, int j) {
  std::string s = "(";
  s += std::to_string(i);
  s += ", ";
  s += std::to_string(j);
  s += ')';
  return s;
}

template <class V>
const auto& at(const V& v, int i) {
  return v[static_cast<std::size_t>(i)];
}

/// The first way `pl`'s tables do not have the shape a plan for grid `g` has (its rounds, a row
/// of `cp` ranks each, tasks and peers inside the grid), or nothing: after it, nothing indexes
/// outside what the plan holds.
inline std::optional<std::string> shape_error(const round_assignment& pl, const dense_mask& g) {
  const int cp = pl.cp;
  if (cp < 1 || g.size() != cp)
    return "the grid is " + std::to_string(g.size()) + " x " + std::to_string(g.size()) +
           ", the plan is for " + std::to_string(cp) + " ranks";
  if (pl.rounds < 0 || static_cast<int>(pl.run.size()) != pl.rounds ||
      static_cast<int>(pl.moves.size()) != pl.rounds + 1)
    return "the plan's tables do not have its " + std::to_string(pl.rounds) + " rounds";
  for (int r = 0; r <= pl.rounds; ++r)
    if ((r < pl.rounds && static_cast<int>(at(pl.run, r).size()) != cp) ||
        static_cast<int>(at(pl.moves, r).size()) != cp)
      return "round " + std::to_string(r) + " does not have a row of " + std::to_string(cp) +
             " ranks";
  for (std::size_t x = 0; x < pl.tasks.size(); ++x) {
    const cp_task& t = pl.tasks[x];
    if (t.q < 0 || t.q >= cp || t.kv < 0 || t.kv >= cp)
      return "task " + std::to_string(x) + " (" + std::to_string(t.q) + ", " +
             std::to_string(t.kv) + ") is outside the " + std::to_string(cp) + " x " +
             std::to_string(cp) + " grid";
  }
  for (int r = 0; r <= pl.rounds; ++r)
    for (int p = 0; p < cp; ++p) {
      const transfers& t = at(at(pl.moves, r), p);
      for (const auto* list : {&t.recv_q_src, &t.recv_kv_src, &t.recv_o_src, &t.send_q_dst,
                               &t.send_kv_dst, &t.send_o_dst})
        for (const int peer : *list)
          if (peer < 0 || peer >= cp || peer == p)
            return where(r, p) + ": a transfer with rank " + std::to_string(peer) +
                   (peer == p ? ", itself" : ", outside the plan's ranks");
      if (r < pl.rounds)
        if (const int x = at(at(pl.run, r), p); x < -1 || x >= static_cast<int>(pl.tasks.size()))
          return where(r, p) + ": no task " + std::to_string(x);
    }
  return std::nullopt;
}

/// Each task of `g` run exactly once, nothing else run, each where an operand lives (to `say`);
/// returns the transfers the tasks run imply.
template <class Say>
round_assignment implied_moves(const round_assignment& pl, const dense_mask& g, const Say& say) {
  const int cp = pl.cp;
  round_assignment implied;
  implied.moves.assign(static_cast<std::size_t>(pl.rounds + 1),
                       std::vector<transfers>(static_cast<std::size_t>(cp)));
  std::vector<int> seen(static_cast<std::size_t>(cp) * static_cast<std::size_t>(cp), 0);
  for (int r = 0; r < pl.rounds; ++r)
    for (int p = 0; p < cp; ++p) {
      const int x = at(at(pl.run, r), p);
      if (x < 0) continue;
      const cp_task t = at(pl.tasks, x);
      ++seen[static_cast<std::size_t>(t.q * cp + t.kv)];
      if (p != t.q && p != t.kv) {
        say("task (" + std::to_string(t.q) + ", " + std::to_string(t.kv) + ") in " + where(r, p) +
            ": a rank that holds neither operand");
        continue;
      }
      add_moves(implied, t, p, r);
    }
  for (int i = 0; i < cp; ++i)
    for (int j = 0; j < cp; ++j) {
      const int n = seen[static_cast<std::size_t>(i * cp + j)];
      if (g(i, j) && n != 1) say("task " + cell(i, j) + " runs " + std::to_string(n) + " times");
      if (!g(i, j) && n != 0) say(cell(i, j) + " is not a task but runs");
    }
  return implied;
}

/// Each list of a rank's transfers, and what to say when a peer is missing from it or extra.
struct transfer_list {
  std::vector<int> transfers::*peers;
  const char *missing, *extra;
};
inline constexpr transfer_list transfer_lists[] = {
    {&transfers::recv_kv_src, "its task needs KV from rank ",
     "receives KV no task of its uses, from rank "},
    {&transfers::recv_q_src, "its task needs Q from rank ",
     "receives Q no task of its uses, from rank "},
    {&transfers::recv_o_src, "does not receive its output back from rank ",
     "receives an output nobody computed for it, from rank "},
    {&transfers::send_kv_dst, "does not send its KV to rank ", "sends KV no task uses, to rank "},
    {&transfers::send_q_dst, "does not send its Q to rank ", "sends Q no task uses, to rank "},
    {&transfers::send_o_dst, "does not return an output to rank ",
     "returns an output it did not compute, to rank "},
};

/// Per round, rank and kind, the plan's peers against the implied ones as multisets (to `say`):
/// each missing and each extra; one Q and one KV receive per rank and round; the cap kept.
template <class Say>
void compare_moves(const round_assignment& pl, const round_assignment& implied, const Say& say) {
  const auto compare = [&](int r, int p, std::vector<int> planned, std::vector<int> needed,
                           const transfer_list& l) {
    std::sort(planned.begin(), planned.end());
    std::sort(needed.begin(), needed.end());
    std::vector<int> lack, surplus;
    std::set_difference(needed.begin(), needed.end(), planned.begin(), planned.end(),
                        std::back_inserter(lack));
    std::set_difference(planned.begin(), planned.end(), needed.begin(), needed.end(),
                        std::back_inserter(surplus));
    for (const int peer : lack) say(where(r, p) + ": " + l.missing + std::to_string(peer));
    for (const int peer : surplus) say(where(r, p) + ": " + l.extra + std::to_string(peer));
  };
  for (int r = 0; r <= pl.rounds; ++r)
    for (int p = 0; p < pl.cp; ++p) {
      const transfers& t = at(at(pl.moves, r), p);
      const transfers& need = at(at(implied.moves, r), p);
      if (t.recv_q_src.size() > 1 || t.recv_kv_src.size() > 1)
        say(where(r, p) + ": " + (t.recv_q_src.size() > 1 ? "Q" : "KV") +
            " is received more than once; a rank has one buffer per operand and round");
      for (const transfer_list& l : transfer_lists) compare(r, p, t.*l.peers, need.*l.peers, l);
      if (t.units() > pl.cap)
        say(where(r, p) + ": " + std::to_string(t.units()) + " units exceed the cap of " +
            std::to_string(pl.cap));
    }
}

}  // namespace detail

/// Everything wrong with `pl` as a plan for grid `g` (empty when it is valid), for any plan —
/// built by hand, read from a file, corrupted: first its shape (tables of `rounds` rows of `cp`
/// ranks, tasks and peers inside the grid), then its contents: each task exactly once, at most
/// one task per rank and round, tasks only where an operand lives; the transfers exactly those
/// the tasks imply — each receive matched by its send and each send by its receive, one Q and one
/// KV receive per rank and round (a second would land in the same buffer), every operand where
/// it is used, every partial output returned to its owner the round after; the cap kept.
/// `cp_attention` runs only a plan that passes, so a valid plan cannot hang it.
inline std::vector<std::string> validate(const round_assignment& pl, const dense_mask& g) {
  std::vector<std::string> bad;
  const auto say = [&](const std::string& s) { bad.push_back("weft: cp rounds: " + s); };
  if (const std::optional<std::string> shape = detail::shape_error(pl, g)) {
    say(*shape);
    return bad;
  }
  const round_assignment implied = detail::implied_moves(pl, g, say);
  detail::compare_moves(pl, implied, say);
  return bad;
}

/// Names of one release ago ("plan" is the job planner's word).
using cp_plan [[deprecated("cp::cp_plan is cp::round_assignment")]] = round_assignment;
using plan_options [[deprecated("cp::plan_options is cp::round_options")]] = round_options;
[[deprecated("cp::plan_rounds is cp::assign_rounds")]] inline round_assignment plan_rounds(
    const dense_mask& g, round_options o = {}) {
  return assign_rounds(g, o);
}

}  // namespace weft::cp
