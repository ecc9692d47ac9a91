// The best plan for a job: every schedule that applies, its chunk counts, and where the layers
// sit — split evenly, or balanced so that no stage carries the embedding's or the LM head's
// extra work on top of an even share — each estimated with the one model (plan/estimate.hpp);
// the fastest that fits in the devices' memory wins. docs/planning.md shows it at work.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/generators/registry.hpp>
#include <weft/plan/estimate.hpp>
#include <weft/plan/flags.hpp>
#include <weft/plan/memory.hpp>

namespace weft::plan {

struct plan_search_options {
  /// The most chunks per rank tried for a generator that takes a count (the interleaved one).
  int max_chunks = 4;
  /// Only plans this runtime runs (`--runtime`; plan/flags.hpp).
  runs_on runtime = runs_on::any;
  /// Called after each plan judged with how many are and how many there are (the tool shows
  /// progress with it); none: nothing.
  std::function<void(std::size_t, std::size_t)> progress = {};
};

/// One plan judged: the job as tried (schedule, chunks, layout), and its figures — or why the
/// job cannot run that way.
struct plan_choice {
  job tried;
  bool ran = false;
  seconds step{0};
  double mfu = 0;
  double peak_memory_bytes = 0;  ///< the heaviest pipeline rank's
  bool fits = false;             ///< within what the device leaves a job (`allocatable_bytes`)
  std::string why;               ///< when it did not run
};

struct plan_search_result {
  std::vector<plan_choice> judged;  ///< in the order tried: schedule, chunks, layout
  /// The fastest plan that fits; when none fits, the one needing the least memory. Empty when
  /// no plan ran at all.
  std::optional<std::size_t> best;
  std::optional<estimate> best_estimate;
};

namespace detail {

/// The stage of model `m`'s decoder layer `l` (first = l) on its own, or its edges: the
/// embedding (`edge` 0), the LM head and loss (1), an MTP layer (2).
inline seconds piece_cost(const transformer& m, const job& j, const cluster& c, int l, int edge) {
  layout_stage st;
  if (l >= 0) {
    st.first_layer = l;
    st.layers = 1;
  } else {
    st.embedding = edge == 0;
    st.loss = edge == 1;
    st.mtp = edge == 2 ? 1 : 0;
  }
  const chunk_cost<seconds> k = stage_costs(m, j, c, st).cost;
  return k.F + k.B;
}

/// Splits pieces of costs `cost`, in order, into `stages` contiguous non-empty stages (at most
/// one per piece) so that the costliest stage is as cheap as it can be. Returns where each
/// stage begins, and the end: `stages` + 1 indices. The least feasible cap by bisection, each
/// cap tried greedily (fill a stage while it stays under the cap: the fewest stages any
/// partition under that cap needs); stages left over split the stages of the most pieces, which
/// never raises the costliest. Pieces x 64 steps, plus a split's pieces each.
inline std::vector<std::size_t> min_max_partition(const std::vector<double>& cost, int stages) {
  const std::size_t n = cost.size();
  if (stages < 1 || static_cast<std::size_t>(stages) > n)
    throw config_error("min_max_partition: " + std::to_string(n) + " pieces do not fill " +
                       std::to_string(stages) + " stage(s)");
  double total = 0, largest = 0;
  for (const double c : cost) {
    if (!(c >= 0) || c > 1e300)
      throw config_error("min_max_partition: a piece's cost is not finite");
    total += c;
    largest = std::max(largest, c);
  }
  const auto greedy = [&](double cap) {
    std::vector<std::size_t> begin{0};
    double load = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i > begin.back() && load + cost[i] > cap) {
        begin.push_back(i);
        load = 0;
      }
      load += cost[i];
    }
    return begin;
  };
  const auto S = static_cast<std::size_t>(stages);
  double lo = std::max(largest, total / static_cast<double>(S)), hi = std::max(lo, total);
  for (int step = 0; step < 64 && hi - lo > 1e-12 * hi; ++step) {
    const double mid = (lo + hi) / 2;
    (greedy(mid).size() <= S ? hi : lo) = mid;
  }
  // The stages as (pieces, first, end), the most pieces on top.
  std::priority_queue<std::tuple<std::size_t, std::size_t, std::size_t>> parts;
  {
    std::vector<std::size_t> b = greedy(hi);
    b.push_back(n);
    for (std::size_t s = 0; s + 1 < b.size(); ++s) parts.push({b[s + 1] - b[s], b[s], b[s + 1]});
  }
  while (parts.size() < S) {  // split the stage of the most pieces where it halves best
    const std::size_t a = std::get<1>(parts.top()), b = std::get<2>(parts.top());
    parts.pop();
    std::size_t at = a + 1;
    double left = cost[a], right = 0, best = std::numeric_limits<double>::infinity();
    for (std::size_t i = a + 1; i < b; ++i) right += cost[i];
    for (std::size_t k = a + 1; k < b; ++k) {  // the second part begins at k
      if (std::max(left, right) < best) {
        best = std::max(left, right);
        at = k;
      }
      left += cost[k];
      right -= cost[k];
    }
    parts.push({at - a, a, at});
    parts.push({b - at, at, b});
  }
  std::vector<std::size_t> begin{n};
  for (; !parts.empty(); parts.pop()) begin.push_back(std::get<1>(parts.top()));
  std::sort(begin.begin(), begin.end());
  return begin;
}

/// Stages' contents in Megatron's grammar, joined by `|`; a run of equal stages (but the last)
/// written once, `(t*4|)*14,`.
inline std::string layout_text(const std::vector<std::string>& stage) {
  std::string out;
  const std::size_t S = stage.size();
  for (std::size_t s = 0; s + 1 < S;) {  // every stage but the last ends with '|'
    std::size_t same = 1;
    while (s + same + 1 < S && stage[s + same] == stage[s]) ++same;
    out += same > 1 ? "(" + stage[s] + "|)*" + std::to_string(same) + "," : stage[s] + "|";
    s += same;
  }
  return S > 0 ? out + stage[S - 1] : out;
}

/// Model `m`'s pieces in order, as a balanced layout cuts them, each at its own forward and
/// backward on job `j`'s devices: the embedding riding with the first layer (which it opens),
/// every decoder layer, and the loss with the MTP layers before it — Megatron keeps every MTP
/// layer in the last virtual stage, so they and the head stay one piece.
struct model_pieces {
  std::vector<double> cost;
  int layers = 0, mtp = 0;
  /// Symbols a layout of `stages` stages expands to: every piece's, the E, the separators.
  std::size_t symbols(int stages) const noexcept {
    return static_cast<std::size_t>(layers) + static_cast<std::size_t>(mtp) + 2 +
           static_cast<std::size_t>(stages);
  }
};
inline model_pieces pieces_of(const transformer& m, const job& j, const cluster& c) {
  model_pieces out;
  out.layers = m.layers;
  out.mtp = m.mtp_layers;
  const double embedding = piece_cost(m, j, c, -1, 0).count();
  // A decoder layer's costs depend on its index only through its kind (transformer.hpp's
  // `is_moe_layer`): each kind is priced once.
  std::optional<double> kind_cost[2];
  for (int l = 0; l < m.layers; ++l) {
    std::optional<double>& k = kind_cost[m.is_moe_layer(l) ? 1 : 0];
    if (!k) k = piece_cost(m, j, c, l, -1).count();
    out.cost.push_back(*k + (l == 0 ? embedding : 0.0));
  }
  double tail = piece_cost(m, j, c, -1, 1).count();
  for (int k = 0; k < m.mtp_layers; ++k) tail += piece_cost(m, j, c, -1, 2).count();
  out.cost.push_back(tail);
  return out;
}

/// A layout in Megatron's grammar that puts model pieces `p` into `stages` stages with the
/// costliest stage as cheap as it can be (`min_max_partition`).
inline std::string balanced_layout(const model_pieces& p, int stages) {
  const std::vector<std::size_t> begin = min_max_partition(p.cost, stages);
  const auto layers = static_cast<std::size_t>(p.layers);
  std::vector<std::string> text;
  for (std::size_t s = 0; s + 1 < begin.size(); ++s) {
    const std::size_t n = std::min(begin[s + 1], layers) - std::min(begin[s], layers);
    std::string t = s == 0 ? "E" : "";
    if (n > 0) t += n == 1 ? "t" : "t*" + std::to_string(n);
    if (begin[s + 1] > layers) {  // the last piece: the MTP layers and the loss
      if (p.mtp > 0) t += p.mtp == 1 ? "m" : "m*" + std::to_string(p.mtp);
      t += "L";
    }
    text.push_back(std::move(t));
  }
  return layout_text(text);
}
/// The same for model `m` on job `j`'s devices.
inline std::string balanced_layout(const transformer& m, const job& j, const cluster& c,
                                   int stages) {
  check_cluster(c);
  check_sizes(m, j);
  return balanced_layout(pieces_of(m, j, c), stages);
}

/// Pipeline stages a generator makes for `pp` ranks and `chunks` (where it takes a count).
inline int stages_for(const generator_info& g, int pp, int chunks) {
  const int per_rank = g.chunks_per_rank > 0 ? g.chunks_per_rank : chunks;
  return pp * (g.bidirectional ? per_rank / 2 : per_rank);
}

}  // namespace detail

namespace detail {

/// The plans `best_plan` judges for job `base` (Megatron's forms resolved, its sizes checked)
/// of model `m`, whose pieces cost `pieces`, that `runtime` runs: the job as given first, then
/// every schedule the
/// registry has, each with the chunk counts it can take (up to `max_chunks`), each with the
/// layers as `base` places them (where its layout has the stages), split evenly (where they
/// divide) and balanced (`balanced_layout`). Duplicates are left out.
inline std::vector<job> plan_variants(const transformer& m, const job& base,
                                      const model_pieces& pieces, int max_chunks,
                                      runs_on runtime = runs_on::any) {
  std::vector<job> tries;
  if (runs(base, runtime)) tries.push_back(base);
  // The stages the job's own layout gives (none when it has none or it does not parse).
  long long given = 0;
  if (!base.layout.empty()) try {
      given = static_cast<long long>(
          parse_pipeline_layout(base.layout, base.pp, m.layers, m.mtp_layers).stages.size());
    } catch (const config_error&) {
    }
  const auto add = [&](const job& j) {
    const auto same = [&](const job& x) {
      return x.schedule == j.schedule && x.chunks == j.chunks && x.layout == j.layout;
    };
    if (runs(j, runtime) && std::none_of(tries.begin(), tries.end(), same)) tries.push_back(j);
  };
  for (const generator_info& g : generators) {
    std::vector<int> counts;
    if (g.chunks_per_rank > 0)
      counts.push_back(1);  // the generator's own count (`--chunks 1` leaves it)
    else
      for (int v = 2; v <= max_chunks; ++v) counts.push_back(v);
    for (const int v : counts) {
      job j = base;
      j.schedule = std::string(g.name);
      j.chunks = v;
      const int S = stages_for(g, j.pp, v);
      if (given == S) add(j);  // the user's layout, where its stages fit
      j.layout.clear();
      if (m.layers % S == 0) add(j);
      // Balanced: only with a piece for every stage (an empty stage idles its devices), and
      // short enough to read back (layout.hpp's limit on symbols).
      if (static_cast<std::size_t>(S) <= pieces.cost.size() &&
          pieces.symbols(S) <= (std::size_t{1} << 20)) {
        j.layout = balanced_layout(pieces, S);
        add(j);
      }
    }
  }
  return tries;
}

/// Plan `tried` (a job of model `m` on cluster `c`) estimated: its figures and whether it fits
/// what the device leaves a job (`allocatable_bytes`), or why it does not run.
inline std::pair<plan_choice, std::optional<estimate>> judge_plan(const transformer& m,
                                                                  const job& tried,
                                                                  const cluster& c,
                                                                  const estimate_options& o = {}) {
  plan_choice ch;
  ch.tried = tried;
  std::optional<estimate> e;
  try {
    e = estimate_job(m, tried, c, o);
  } catch (const config_error& why) {
    ch.why = why.what();
  }
  if (e) {
    ch.ran = true;
    ch.step = e->step;
    ch.mfu = e->mfu;
    ch.peak_memory_bytes = *std::max_element(e->memory_per_rank.begin(), e->memory_per_rank.end());
    ch.fits = ch.peak_memory_bytes <= allocatable_bytes(c.hbm_bytes);
  }
  return {std::move(ch), std::move(e)};
}

/// Adds a judged plan to `out`, its best when it is the fastest that fits — or, none fitting,
/// the one needing the least memory.
inline void add_judged(plan_search_result& out, plan_choice ch, std::optional<estimate> e) {
  if (ch.ran) {
    const plan_choice* b = out.best ? &out.judged[*out.best] : nullptr;
    const bool better = !b                   ? true
                        : ch.fits != b->fits ? ch.fits
                        : ch.fits            ? ch.step < b->step
                                             : ch.peak_memory_bytes < b->peak_memory_bytes;
    if (better) {
      out.best = out.judged.size();
      out.best_estimate = std::move(e);
    }
  }
  out.judged.push_back(std::move(ch));
}

/// Estimates each of `tries` (jobs of model `m` on cluster `c`, as `o` says) and picks the
/// fastest that fits what the device leaves a job — or, none fitting, the one needing the least
/// memory.
inline plan_search_result judge_plans(
    const transformer& m, const std::vector<job>& tries, const cluster& c,
    const std::function<void(std::size_t, std::size_t)>& progress = {},
    const estimate_options& o = {}) {
  plan_search_result out;
  for (const job& tried : tries) {
    auto [ch, e] = judge_plan(m, tried, c, o);
    add_judged(out, std::move(ch), std::move(e));
    if (progress) progress(out.judged.size(), tries.size());
  }
  return out;
}

}  // namespace detail

/// Judges every schedule the registry has for job `base` of model `m` on cluster `c` — each
/// with the chunk counts it can take (up to `o.max_chunks`), each with the layers as `base`
/// places them (where its layout has the stages), split evenly (where they divide) and balanced
/// (`detail::balanced_layout`); the job as given is judged first — and picks the fastest that fits
/// what the device leaves a job; with `o.runtime`, only what that runtime runs (the job as given
/// must be). The parallel sizes, batch, recomputation and the rest stay as `base` has them. When no
/// plan runs at all (sizes no schedule can change: heads over tp, experts over ep, the batch),
/// throws the job's own `config_error`.
inline plan_search_result best_plan(const transformer& m, const job& asked, const cluster& c,
                                    plan_search_options o = {}) {
  job base = with_megatron_forms(m, asked);  // Megatron's forms as weft's, once
  // Megatron's code runs every plan: its transfers priced as it issues them.
  if (o.runtime == runs_on::megatron) base.runtime = pipeline_runtime::megatron;
  if (o.max_chunks < 1 || o.max_chunks > 64)
    throw config_error("best_plan: max_chunks must be in [1, 64], got " +
                       std::to_string(o.max_chunks));
  // The sizes every plan keeps, before any is costed: a zero size would divide by zero below.
  check_cluster(c);
  check_sizes(m, base);
  check_combined_1f1b(m, base);  // its own rules before whose code runs it
  check_recompute_ops(m, base);
  check_scaling_all_reduce(base);
  check_deepspeed_bf16(base);
  if (base.own_trainer() && (o.runtime == runs_on::megatron || megatron_code_only(base)))
    throw config_error(base.own_trainer_reason() + ": no Megatron-LM run, nor " +
                       std::string(o.runtime == runs_on::megatron ? "--runtime megatron"
                                                                  : megatron_code_only_features));
  if (const std::string why = not_run_because(base, o.runtime); !why.empty())
    throw config_error("--runtime " +
                       std::string(runs_on_names[static_cast<std::size_t>(o.runtime)]) + ": " +
                       why);
  plan_search_result out = detail::judge_plans(
      m, detail::plan_variants(m, base, detail::pieces_of(m, base, c), o.max_chunks, o.runtime), c,
      o.progress);
  if (!out.best) throw config_error(out.judged.front().why);
  return out;
}

}  // namespace weft::plan
