// V-Half and V-Min, the memory-controllable V schedules of Qi et al., "Pipeline Parallelism with
// Controllable Memory" (arXiv 2405.15362), as sail-sg/zero-bubble-pipeline-parallelism builds
// them (`zbv_greedy.py`, `--zero-bubble-v-schedule-mem-setup half|min`): two chunks per rank in
// V placement, every backward split into dX and dW. A repeating pattern fixes when each rank
// starts each micro-batch's four passes (a forward and a dX on each arm of the V) so that about
// half (V-Half) or a third (V-Min) of 1F1B's activations are alive (counted until its dW:
// V-Half P + 2 chunk units for even P, V-Min 2 floor((P + 1) / 3) + 2, docs/schedules.md); a greedy
// pass then pulls each pass as early as its dependencies and that memory allow, and the dW passes
// fill the slots left empty.
#pragma once

#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/generators/builder.hpp>
#include <weft/generators/generator.hpp>
#include <weft/generators/params.hpp>

namespace weft {

namespace gen::controllable {

/// A pass in a rank's order: its type times `pass_stride`, plus its micro-batch (which `op`
/// holds in 16 bits).
inline constexpr int pass_stride = 1 << 16;
static_assert(limits::micro < pass_stride);

/// A rank's passes by type, each type's list indexed by micro-batch and holding a time slot.
/// Types: 0 the first arm's forward (chunk r), 1 the second arm's forward (chunk 2P-1-r), 2 the
/// second arm's dX, 3 the first arm's dX, then the dW: one list for both arms (type 4, in the
/// order their dX ran) or one per arm (4: the second arm's, 5: the first arm's).
struct passes {
  buffer<int> at[6];
  int types = 4;

  /// The latest slot of any type's last pass (the pattern's horizon).
  constexpr int horizon() const {
    int h = 0;
    for (int t = 0; t < types; ++t)
      if (at[t].back() > h) h = at[t].back();
    return h;
  }
  constexpr int latest() const {
    int h = 0;
    for (int t = 0; t < types; ++t)
      for (int x : at[t]) h = x > h ? x : h;
    return h;
  }
};

/// The type whose list head comes first: (slot, type) least, lists walked from `next`. -1 when
/// every list is done.
constexpr int earliest(const passes& s, int types, const buffer<int>& next, int base, int& slot) {
  int best = -1;
  for (int t = 0; t < types; ++t) {
    const auto i = static_cast<std::size_t>(next[static_cast<std::size_t>(base + t)]);
    if (i < s.at[t].size() && (best < 0 || s.at[t][i] < slot)) {
      best = t;
      slot = s.at[t][i];
    }
  }
  return best;
}

/// The pass every rank's lists reach first, ranks in order on a tie: its rank, type and slot
/// (rank -1 when every list is done). `next` walks each (rank, type) list.
constexpr void next_pass(const buffer<passes>& s, int types, const buffer<int>& next, int& stage,
                         int& t, int& slot) {
  stage = -1;
  for (int r = 0; r < static_cast<int>(s.size()); ++r) {
    int at = slot;
    const int u = earliest(s[static_cast<std::size_t>(r)], types, next, r * types, at);
    if (u >= 0 && (stage < 0 || at < slot)) {
      stage = r;
      t = u;
      slot = at;
    }
  }
}

/// All ranks' passes: every rank runs as many of each type as the first.
constexpr std::size_t pass_count(const buffer<passes>& s) {
  std::size_t total = 0;
  for (int t = 0; t < s[0].types; ++t) total += s[0].at[t].size();
  return total * s.size();
}

/// Puts the dW passes into the slots the other four types leave empty, each after a dX: one
/// list for both arms, or (`per_arm`) one per arm, the second arm's first. Those left over go
/// after the horizon.
constexpr void put_weights(passes& s, bool per_arm) {
  s.types = 4;  // any dW placed before are placed again
  const int bound = s.horizon();
  s.types = per_arm ? 6 : 5;
  s.at[4].clear();
  s.at[5].clear();
  int pending[2] = {0, 0};
  buffer<int> next(4, 0);
  int i = 0;
  for (; i <= bound; ++i) {
    int slot = 0;
    const int t = earliest(s, 4, next, 0, slot);
    if (t < 0) reject("v-schedule", "internal: a pass outside the pattern");
    if (slot == i) {
      ++next[static_cast<std::size_t>(t)];
      if (t >= 2) ++pending[per_arm ? t - 2 : 0];
      continue;
    }
    for (int w = 0; w < 2; ++w)
      if (pending[w] > 0) {
        s.at[4 + w].push_back(i);
        --pending[w];
        break;
      }
  }
  --i;
  for (int w = 0; w < 2; ++w)
    while (pending[w] > 0) {
      s.at[4 + w].push_back(++i);
      --pending[w];
    }
}

/// The most activations a rank holds, in (micro-batch, chunk) units: a forward adds one, a dW
/// frees one; without dW slots, an empty slot frees one whose dX has run. Slots are walked in
/// order up to the horizon; a list's head is taken only in its own slot.
constexpr int memory(const passes& s) {
  const int bound = s.horizon();
  const bool weights = s.types > 4;
  int pending = 0, live = 0, peak = 0;
  buffer<int> next(static_cast<std::size_t>(s.types), 0);
  for (int i = 0; i <= bound; ++i) {
    int slot = 0;
    const int t = earliest(s, s.types, next, 0, slot);
    if (t < 0) reject("v-schedule", "internal: a pass outside the pattern");
    if (slot == i) {
      ++next[static_cast<std::size_t>(t)];
      live += t < 2 ? 1 : t >= 4 ? -1 : 0;
      if (t == 2 || t == 3) ++pending;
    } else if (!weights && pending > 0) {
      --live;
      --pending;
    }
    peak = live > peak ? live : peak;
  }
  return peak;
}

/// The ranks' passes, started as early as their order on each rank and their inputs allow (a
/// forward after the previous rank's on its arm, a dX after the next one's, each pass after its
/// predecessor in the V and after the previous micro-batch's of its type), each pass `cost[t]`
/// long and a transfer `comm`. Writes each pass's start into `start` (same shape as `s`) and,
/// when given, each rank's order as type * `pass_stride` + micro-batch into `order`.
constexpr void squeeze(const buffer<passes>& s, const int* cost, int comm, buffer<passes>& start,
                       buffer<buffer<int>>* order = nullptr) {
  const int S = static_cast<int>(s.size()), T = s[0].types;
  int width = 0;
  for (const passes& x : s)
    for (int t = 0; t < T; ++t)
      width = static_cast<int>(x.at[t].size()) > width ? static_cast<int>(x.at[t].size()) : width;
  const auto key = [&](int stage, int t, int mb) {
    return static_cast<std::size_t>((stage * T + t) * width + mb);
  };
  buffer<long long> end(static_cast<std::size_t>(S * T * width), -1);
  buffer<int> next(static_cast<std::size_t>(S * T), 0), last(static_cast<std::size_t>(S), -1);
  start = s;
  if (order) order->assign(static_cast<std::size_t>(S), buffer<int>{});
  const std::size_t total = pass_count(s);
  const auto done = [&](std::size_t k) {
    if (end[k] < 0) reject("v-schedule", "internal: a pass before its input");
    return end[k];
  };
  for (std::size_t n = 0; n < total; ++n) {
    int stage = -1, t = -1, slot = 0;
    next_pass(s, T, next, stage, t, slot);
    if (stage < 0) reject("v-schedule", "internal: passes left unscheduled");
    const int mb = next[static_cast<std::size_t>(stage * T + t)]++;
    long long ready = 0;
    const auto after = [&](long long x) { ready = x > ready ? x : ready; };
    if ((t == 0 || t == 2) && stage > 0) after(done(key(stage - 1, t, mb)) + comm);
    if ((t == 1 || t == 3) && stage + 1 < S) after(done(key(stage + 1, t, mb)) + comm);
    if (t > 0 && t < 4) after(done(key(stage, t - 1, mb)));
    if (mb > 0) after(done(key(stage, t, mb - 1)));
    if (last[static_cast<std::size_t>(stage)] >= 0)
      after(done(static_cast<std::size_t>(last[static_cast<std::size_t>(stage)])));
    end[key(stage, t, mb)] = ready + cost[t];
    last[static_cast<std::size_t>(stage)] = static_cast<int>(key(stage, t, mb));
    start[static_cast<std::size_t>(stage)].at[t][static_cast<std::size_t>(mb)] =
        static_cast<int>(ready);
    if (order) (*order)[static_cast<std::size_t>(stage)].push_back(t * pass_stride + mb);
  }
}

/// The greedy pass (`reorder`): walking all ranks' passes in slot order, each is moved to the
/// earliest free slot after its inputs' slots where the rank's memory stays within the
/// pattern's; with `weights`, the dW are placed first and moved too. Passes from the first
/// rank's first dX of the first arm to the last micro-batch's first forward stay where they are
/// (the steady state), and so do the earlier ones when the dW are not placed. Returns the
/// passes squeezed with unit costs.
constexpr buffer<passes> reorder(buffer<passes> s, bool weights) {
  if (weights)
    for (passes& x : s) put_weights(x, false);
  const int S = static_cast<int>(s.size()), T = s[0].types, M = static_cast<int>(s[0].at[0].size());
  int budget = 0, latest = 0;
  for (const passes& x : s) {
    budget = memory(x) > budget ? memory(x) : budget;
    latest = x.latest() > latest ? x.latest() : latest;
  }
  buffer<bool> taken(static_cast<std::size_t>(S * (latest + 1)), false);
  buffer<int> next(static_cast<std::size_t>(S * T), 0);
  const std::size_t total = pass_count(s);
  int phase = 0;
  for (std::size_t n = 0; n < total; ++n) {
    int stage = -1, t = -1, slot = 0;
    next_pass(s, T, next, stage, t, slot);
    if (stage < 0) reject("v-schedule", "internal: passes left unplaced");
    const int mb = next[static_cast<std::size_t>(stage * T + t)]++;
    passes& here = s[static_cast<std::size_t>(stage)];
    const auto take = [&](int at) {
      taken[static_cast<std::size_t>(stage * (latest + 1) + at)] = true;
    };
    if (t == 3 && stage == 0 && phase == 0) phase = 1;
    if (phase == 1) {
      if (t == 0 && mb == M - 1) phase = 2;
      take(slot);
      continue;
    }
    if (phase == 0 && !weights) {
      take(slot);
      continue;
    }
    int ready = -1;
    const auto after = [&](int x) { ready = x > ready ? x : ready; };
    const auto at = [&](int r, int u, int i) {
      return s[static_cast<std::size_t>(r)].at[u][static_cast<std::size_t>(i)];
    };
    if ((t == 0 || t == 2) && stage > 0) after(at(stage - 1, t, mb));
    if ((t == 1 || t == 3) && stage + 1 < S) after(at(stage + 1, t, mb));
    if (t > 0 && t < 4) after(at(stage, t - 1, mb));
    if (t == 4) {  // after the mb-th dX of either arm, in slot order: merge the two lists
      const buffer<int>&a = here.at[2], &b = here.at[3];
      std::size_t i = 0, j = 0;
      int x = 0;
      for (int n = 0; n <= mb; ++n)
        x = j == b.size() || (i < a.size() && a[i] <= b[j]) ? a[i++] : b[j++];
      after(x);
    }
    if (mb > 0) after(at(stage, t, mb - 1));
    ++ready;
    if (ready > slot) reject("v-schedule", "internal: a pass before its inputs");
    int& mine = here.at[t][static_cast<std::size_t>(mb)];
    bool moved = false;
    for (int x = ready; x < slot && !moved; ++x) {
      if (taken[static_cast<std::size_t>(stage * (latest + 1) + x)]) continue;
      mine = x;
      moved = memory(here) <= budget;
    }
    if (!moved) mine = slot;
    take(mine);
  }
  if (!weights)
    for (passes& x : s) put_weights(x, false);
  const int unit[6] = {1, 1, 1, 1, 1, 1};
  buffer<passes> start;
  squeeze(s, unit, 0, start);
  return start;
}

/// Each rank's order of passes (type * pass_stride + micro-batch), from the pattern's first slot
/// of each type on each rank, repeated every 6 slots per micro-batch.
constexpr buffer<buffer<int>> orders(const buffer<int>& first, int ranks, int micro) {
  if (micro < 1 || micro > limits::micro) reject("v-schedule", describe(model_error::bad_micro));
  buffer<passes> s(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    for (int t = 0; t < 4; ++t)
      for (int mb = 0; mb < micro; ++mb)
        s[static_cast<std::size_t>(r)].at[t].push_back(first[static_cast<std::size_t>(4 * r + t)] +
                                                       6 * mb);
  buffer<passes> placed = reorder(static_cast<buffer<passes>&&>(s), true);
  for (passes& x : placed) x.types = 4;  // the second pass places the dW again
  placed = reorder(static_cast<buffer<passes>&&>(placed), false);
  for (passes& x : placed) put_weights(x, true);
  // Equal costs, as the schedules are built for; the order is the slots'.
  const int cost[6] = {1000, 1000, 1000, 1000, 1000, 1000};
  buffer<passes> start;
  buffer<buffer<int>> out;
  squeeze(placed, cost, 1, start, &out);
  return out;
}

/// The pattern's first slots, rank by rank: forward on each arm, dX on each arm (types 0-3).
/// V-Half: 2r, 3P-r-2, 3P+g+2r-1, 6P+g-r-2 with a gap g of 3 for even P; V-Min: r, 2P-r-1,
/// 2P+g+r, 4P+g-r-1 with g 2 when 3 divides P.
constexpr buffer<int> pattern(bool half, int P) {
  buffer<int> first;
  for (int r = 0; r < P; ++r) {
    if (half) {
      const int g = P % 2 == 0 ? 3 : 0;
      for (int x : {2 * r, 3 * P - r - 2, 3 * P + g + 2 * r - 1, 6 * P + g - r - 2})
        first.push_back(x);
    } else {
      const int g = P % 3 == 0 ? 2 : 0;
      for (int x : {r, 2 * P - r - 1, 2 * P + g + r, 4 * P + g - r - 1}) first.push_back(x);
    }
  }
  return first;
}

constexpr schedule v_schedule(const char* name, bool half, const pipeline_params& p) {
  const model_desc m = pipeline_model(p, 2, placement::vee);
  check_common(name, p, m);
  const int P = p.ranks;
  const buffer<buffer<int>> order = orders(pattern(half, P), P, p.micro);
  pipeline_builder b(m, p.overlap);
  for (int r = 0; r < P; ++r) {
    b.add_rank();
    const int first = r, second = 2 * P - 1 - r;
    for (int x : order[static_cast<std::size_t>(r)]) {
      const int t = x / pass_stride, mb = x % pass_stride;
      switch (t) {
        case 0:
          b.forward(mb, first);
          break;
        case 1:
          b.forward(mb, second);
          break;
        case 2:
          b.backward_input(mb, second);
          break;
        case 3:
          b.backward_input(mb, first);
          break;
        case 4:
          b.backward_weight(mb, second);
          break;
        default:
          b.backward_weight(mb, first);
      }
    }
  }
  return finish(b, p);
}

}  // namespace gen::controllable

namespace gen {
/// `v_half`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule v_half(const pipeline_params& p) {
  return gen::controllable::v_schedule("v-half", true, p);
}
}  // namespace gen

/// V-Half: the V schedule whose ranks hold about half of 1F1B's activations (sail-sg's
/// `--zero-bubble-v-schedule-mem-setup half`); bubble about half of 1F1B's with F, dX, dW equal.
inline constexpr generator<gen::v_half> v_half{};
WEFT_EXTERN_STEPS(gen::v_half)

namespace gen {
/// `v_min`'s steps: what it returns, built in constant evaluation and in the
/// compiled copy.
constexpr schedule v_min(const pipeline_params& p) {
  return gen::controllable::v_schedule("v-min", false, p);
}
}  // namespace gen

/// V-Min: the V schedule with the least activation memory (sail-sg's `... min`); its bubble
/// grows when F, dX and dW take different times.
inline constexpr generator<gen::v_min> v_min{};
WEFT_EXTERN_STEPS(gen::v_min)

namespace gen {
/// Names of one release ago: a generator's steps are `gen::NAME`.
[[deprecated("gen::build_v_half is gen::v_half")]] constexpr schedule build_v_half(
    const pipeline_params& p) {
  return v_half(p);
}
[[deprecated("gen::build_v_min is gen::v_min")]] constexpr schedule build_v_min(
    const pipeline_params& p) {
  return v_min(p);
}
}  // namespace gen

}  // namespace weft
