// The exact optimum of a small problem, by exhaustion: every combination of every rank's step
// orders (each chunk's micro-batches in order, as everywhere in the search; backwards fused or
// split, forwards and backwards paired where allowed), each judged by `evaluate` like any
// plan. Only for small instances — the count grows factorially — and refused beyond a cap, to
// judge the search where the bounds are loose.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <weft/search/evaluate.hpp>

namespace weft::search {

namespace detail {

/// Every step order of rank `r` of `m` (see the file's comment), appended to `out`; stops once
/// `out` holds more than `cap`.
inline void rank_orders(const model_desc& m, int r, bool split, bool pair, std::size_t cap,
                        std::vector<std::vector<step>>& out) {
  std::vector<int> chunks;
  for (int c = 0; c < m.chunks(); ++c)
    if (m.rank_of(c) == r) chunks.push_back(c);
  struct chunk_state {
    std::vector<int> mbs;  // in order
    std::size_t f = 0, b = 0, w = 0;
    std::vector<int> pending_w;  // split backwards waiting for their dW, in order
  };
  std::vector<chunk_state> st(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i)
    for (int mb = 0; mb < m.micro; ++mb)
      if (m.carries(mb, chunks[i])) st[i].mbs.push_back(mb);
  std::size_t total = 0;
  for (const auto& s : st) total += 2 * s.mbs.size();
  std::vector<step> now;
  const auto u16 = [](int v) { return static_cast<std::uint16_t>(v); };
  // `left`: forwards and backwards (not dW) still to place; dW pending are in the states.
  const auto recurse = [&](auto&& self, std::size_t left) -> void {
    if (out.size() > cap) return;
    bool any_w = false;
    for (const auto& s : st) any_w = any_w || s.w < s.pending_w.size();
    if (left == 0 && !any_w) {
      out.push_back(now);
      return;
    }
    for (std::size_t i = 0; i < st.size(); ++i) {
      chunk_state& s = st[i];
      const std::uint16_t c = u16(chunks[i]);
      if (s.f < s.mbs.size()) {  // the next forward
        now.push_back({action::F, u16(s.mbs[s.f]), c, 0, 0});
        ++s.f;
        self(self, left - 1);
        --s.f;
        now.pop_back();
      }
      if (s.b < s.f) {  // the next backward, fused or split
        now.push_back({action::B, u16(s.mbs[s.b]), c, 0, 0});
        ++s.b;
        self(self, left - 1);
        if (split) {
          now.back().a = action::I;
          s.pending_w.push_back(s.mbs[s.b - 1]);
          self(self, left - 1);
          s.pending_w.pop_back();
        }
        --s.b;
        now.pop_back();
      }
      if (s.w < s.pending_w.size()) {  // the next dW
        now.push_back({action::W, u16(s.pending_w[s.w]), c, 0, 0});
        ++s.w;
        self(self, left);
        --s.w;
        now.pop_back();
      }
      if (!pair) continue;
      for (std::size_t j = 0; j < st.size(); ++j) {  // a forward here with a backward there
        chunk_state& t = st[j];
        if (s.f >= s.mbs.size() || t.b >= t.f) continue;  // its backward's forward came first
        now.push_back({action::FB, u16(s.mbs[s.f]), c, u16(t.mbs[t.b]), u16(chunks[j])});
        ++s.f;
        ++t.b;
        self(self, left - 2);
        --t.b;
        --s.f;
        now.pop_back();
      }
    }
  };
  recurse(recurse, total);
}

}  // namespace detail

template <time_type T>
struct exact_result {
  std::optional<scored<T>> best;  ///< none: no legal plan
  std::uint64_t plans = 0;        ///< combinations judged
};

/// The best plan of `q` over every combination of rank orders; nothing when there are more than
/// `max_plans` combinations (the problem is too big to exhaust).
template <time_type T>
std::optional<exact_result<T>> exact_schedule(const basic_problem<T>& q, bool split, bool pair,
                                              std::uint64_t max_plans = 200'000) {
  const model_desc& m = q.model;
  std::vector<std::vector<std::vector<step>>> orders(static_cast<std::size_t>(m.ranks));
  std::uint64_t combos = 1;
  for (int r = 0; r < m.ranks; ++r) {
    auto& o = orders[static_cast<std::size_t>(r)];
    detail::rank_orders(m, r, split, pair, static_cast<std::size_t>(max_plans), o);
    if (o.empty()) return exact_result<T>{};
    if (o.size() > max_plans || combos > max_plans / o.size()) return std::nullopt;
    combos *= o.size();
  }
  exact_result<T> out;
  std::vector<std::size_t> pick(static_cast<std::size_t>(m.ranks), 0);
  step_order p{m, q.overlap, std::vector<std::vector<step>>(static_cast<std::size_t>(m.ranks))};
  for (;;) {
    for (std::size_t r = 0; r < pick.size(); ++r) p.ranks[r] = orders[r][pick[r]];
    ++out.plans;
    if (auto s = evaluate(q, p); s && (!out.best || s->makespan < out.best->makespan))
      out.best = std::move(s);
    std::size_t r = 0;
    for (; r < pick.size(); ++r) {
      if (++pick[r] < orders[r].size()) break;
      pick[r] = 0;
    }
    if (r == pick.size()) break;
  }
  return out;
}

}  // namespace weft::search
