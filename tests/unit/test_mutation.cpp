// Randomised mutations of generated and hand-written schedules, judged against a reference
// checker written the obvious way from the docs alone (its own dependency rules, an explicit
// graph, depth-first cycle search). The library's checker must agree on legality and report a
// rule the reference finds broken.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include <weft/generators/dualpipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/format.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/verify.hpp>

using namespace weft;

namespace {

using layout = std::vector<std::vector<std::vector<op>>>;  // rank -> slot -> ops

layout unpack(const schedule& s) {
  layout l(static_cast<std::size_t>(s.ranks()));
  for (int r = 0; r < s.ranks(); ++r)
    for (int k = 0; k < s.slots(r); ++k) {
      const auto sl = s.slot(r, k);
      l[static_cast<std::size_t>(r)].emplace_back(sl.begin(), sl.end());
    }
  return l;
}

schedule pack(const layout& l, const model_desc& m) {
  schedule s(m);
  for (const auto& rank : l) {
    s.add_rank();
    for (const auto& sl : rank) {
      if (sl.empty()) continue;
      for (const op& o : sl) s.push(o);
      s.close_slot();
    }
  }
  return s;
}

// The reference model, written from docs/concepts.md and docs/legality.md alone: it shares no
// code with the library's dependency tables (op_index, dependency_rules), so a bug there shows.

using key = std::tuple<int, int, int, int, int, int>;  // kind, phase, mb, chunk, layer, split
key key_of(const op& o) {
  return {static_cast<int>(o.k), static_cast<int>(o.ph), o.mb, o.chunk, o.layer, o.split};
}
bool weighted(kind k) {
  return k == kind::block || k == kind::attn || k == kind::mlp || k == kind::shared;
}
kind entry_of(const model_desc& m) { return m.stages.has(kind::block) ? kind::block : kind::attn; }
std::vector<kind> exits_of(const model_desc& m) {  // the routed path's tail, and the shared expert
  std::vector<kind> e{m.stages.has(kind::block)     ? kind::block
                      : m.stages.has(kind::combine) ? kind::combine
                      : m.stages.has(kind::mlp)     ? kind::mlp
                                                    : kind::attn};
  if (m.stages.has(kind::shared)) e.push_back(kind::shared);
  return e;
}
int next_on_path(const model_desc& m, int mbv, int c) {
  return c + 1 < m.end_chunk(mbv) ? c + 1 : -1;
}
int prev_on_path(const model_desc& m, int mbv, int c) {
  return c > m.first_chunk(mbv) ? c - 1 : -1;
}
bool other_rank(const model_desc& m, int c, int other) {
  return other >= 0 && m.rank_of(c) != m.rank_of(other);
}
// A forward send goes down the path, a backward send up; a receive is the other end.
int peer_chunk(const model_desc& m, const op& o) {
  const bool down = (o.k == kind::send) == (o.ph == phase::F);
  const int peer = down ? next_on_path(m, o.mb, o.chunk) : prev_on_path(m, o.mb, o.chunk);
  return other_rank(m, o.chunk, peer) ? peer : -1;
}
bool in_model(const model_desc& m, const op& o) {
  if (o.mb >= m.micro || o.chunk >= m.chunks() || o.layer >= m.layers || o.split >= m.splits ||
      o.lane >= lanes_per_class)
    return false;
  if (is_collective(o.k)) return true;
  if (!m.carries(o.mb, o.chunk) || (o.ph != phase::F && !m.backward)) return false;
  if (is_p2p(o.k))
    return (o.ph == phase::F || o.ph == phase::B) && o.layer == 0 && o.split == 0 &&
           peer_chunk(m, o) >= 0;
  return m.stages.has(o.k) && (weighted(o.k) || o.ph == phase::F || o.ph == phase::B);
}

/// Every producer of `o`, from the rules of docs/concepts.md ("Derived dependencies").
template <class Present>
std::vector<op> producers_of(const model_desc& m, bool p2p, const op& o, Present present) {
  std::vector<op> out;
  const int mbv = o.mb, c = o.chunk, l = o.layer, sp = o.split;
  const auto unit = [&](kind k, phase ph, int chunk_, int layer_, int split_) {
    return make_op(k, ph, mbv, chunk_, layer_, split_);
  };
  // The op that carries a unit's input gradient: dX when the schedule splits it, else B.
  const auto grad = [&](kind k, int chunk_, int layer_, int split_) {
    const op x = unit(k, phase::dX, chunk_, layer_, split_);
    return present(x) ? x : unit(k, phase::B, chunk_, layer_, split_);
  };
  const auto layer_outputs = [&](int chunk_, int layer_) {
    for (int s2 = 0; s2 < m.splits; ++s2)
      for (kind k : exits_of(m)) out.push_back(unit(k, phase::F, chunk_, layer_, s2));
  };
  const auto input_grads = [&](int chunk_, int layer_) {
    for (int s2 = 0; s2 < m.splits; ++s2) out.push_back(grad(entry_of(m), chunk_, layer_, s2));
  };
  const auto output_grad = [&] {
    if (l + 1 < m.layers) return input_grads(c, l + 1);
    const int nc = next_on_path(m, mbv, c);
    if (nc < 0) return layer_outputs(c, l);  // the loss
    if (p2p && other_rank(m, c, nc)) return out.push_back(make_op(kind::recv, phase::B, mbv, c));
    input_grads(nc, 0);
  };
  if (is_p2p(o.k)) {
    if (o.k == kind::recv) return out;
    if (o.ph == phase::F)
      layer_outputs(c, m.layers - 1);
    else
      input_grads(c, 0);
    return out;
  }
  if (is_collective(o.k)) {
    if (o.k != kind::all_reduce || o.ph != phase::dW) return out;
    for (int b = 0; b < m.micro; ++b) {
      if (!m.carries(b, c)) continue;
      for (int l2 = 0; l2 < m.layers; ++l2)
        for (int s2 = 0; s2 < m.splits; ++s2)
          for (int k = 0; k < kind_count; ++k) {
            const kind kk = static_cast<kind>(k);
            if (!m.stages.has(kk) || !weighted(kk)) continue;
            const op fused = make_op(kk, phase::B, b, c, l2, s2);
            out.push_back(present(fused) ? fused : make_op(kk, phase::dW, b, c, l2, s2));
          }
    }
    return out;
  }
  const bool has_dispatch = m.stages.has(kind::dispatch), has_mlp = m.stages.has(kind::mlp);
  if (o.ph == phase::F) {
    switch (o.k) {
      case kind::dispatch:
      case kind::shared:
        out.push_back(unit(kind::attn, phase::F, c, l, sp));
        return out;
      case kind::mlp:
        out.push_back(unit(has_dispatch ? kind::dispatch : kind::attn, phase::F, c, l, sp));
        return out;
      case kind::combine:
        out.push_back(unit(kind::mlp, phase::F, c, l, sp));
        return out;
      default:  // the layer's entry
        if (l > 0) {
          layer_outputs(c, l - 1);
        } else if (const int pc = prev_on_path(m, mbv, c); pc >= 0) {
          if (p2p && other_rank(m, c, pc))
            out.push_back(make_op(kind::recv, phase::F, mbv, c));
          else
            layer_outputs(pc, m.layers - 1);
        }
        return out;
    }
  }
  if (o.ph == phase::dW) {
    out.push_back(unit(o.k, phase::dX, c, l, sp));
    return out;
  }
  out.push_back(unit(o.k, phase::F, c, l, sp));  // its own saved activations
  switch (o.k) {
    case kind::mlp:
      if (m.stages.has(kind::combine))
        out.push_back(grad(kind::combine, c, l, sp));
      else
        output_grad();
      return out;
    case kind::dispatch:
      out.push_back(grad(kind::mlp, c, l, sp));
      return out;
    case kind::attn:
      if (o.k != entry_of(m)) return out;
      if (has_dispatch)
        out.push_back(grad(kind::dispatch, c, l, sp));
      else if (has_mlp)
        out.push_back(grad(kind::mlp, c, l, sp));
      if (m.stages.has(kind::shared)) out.push_back(grad(kind::shared, c, l, sp));
      if (!has_mlp) output_grad();
      return out;
    default:  // block, combine, shared: the gradient of the layer's output
      output_grad();
      return out;
  }
}

// The reference: the set of rules a schedule breaks.
std::set<rule> reference(const schedule& s, bool fragment, const assumptions& a) {
  std::set<rule> broken;
  const model_desc& m = s.model;
  if (validate(m) != model_error::none) return {rule::config};
  bool p2p = false;
  for (const op& o : s.ops) p2p = p2p || is_p2p(o.k);

  struct placed_op {
    op o;
    int rank, slot;
    std::size_t index;
  };
  std::vector<placed_op> all;
  for (int r = 0; r < s.ranks(); ++r)
    for (int k = 0; k < s.slots(r); ++k)
      for (const op& o : s.slot(r, k)) all.push_back({o, r, k, all.size()});
  std::map<key, std::vector<std::size_t>> by_key;
  for (const placed_op& p : all) {
    if (!in_model(m, p.o) || m.rank_of(p.o.chunk) != p.rank) {
      broken.insert(rule::complete);
      continue;
    }
    by_key[key_of(p.o)].push_back(p.index);
  }
  const auto present = [&](const op& o) { return by_key.count(key_of(o)) > 0; };
  for (const auto& [k, v] : by_key)
    if (v.size() > 1) broken.insert(rule::complete);
  for (const placed_op& p : all)
    if (p.o.ph == phase::B && weighted(p.o.k)) {
      op x = p.o, w = p.o;
      x.ph = phase::dX;
      w.ph = phase::dW;
      if (present(x) || present(w)) broken.insert(rule::complete);
    }
  if (!fragment) {
    for (int mbv = 0; mbv < m.micro; ++mbv)
      for (int c = m.first_chunk(mbv); c < m.end_chunk(mbv); ++c) {
        for (int l = 0; l < m.layers; ++l)
          for (int sp = 0; sp < m.splits; ++sp)
            for (int k = 0; k < kind_count; ++k) {
              const kind kk = static_cast<kind>(k);
              if (!m.stages.has(kk) || !is_layer_stage(kk)) continue;
              const op f = make_op(kk, phase::F, mbv, c, l, sp);
              if (!present(f)) broken.insert(rule::complete);
              if (!m.backward) continue;
              op b = f, x = f, w = f;
              b.ph = phase::B;
              x.ph = phase::dX;
              w.ph = phase::dW;
              const bool ok = present(b) || (weighted(f.k) && present(x) && present(w));
              if (!ok) broken.insert(rule::complete);
            }
        if (p2p)
          for (kind k : {kind::send, kind::recv})
            for (phase ph : {phase::F, phase::B}) {
              if (ph == phase::B && !m.backward) continue;
              const op t = make_op(k, ph, mbv, c);
              if (peer_chunk(m, t) >= 0 && !present(t)) broken.insert(rule::complete);
            }
      }
  }
  // Rule 3, streams.
  for (const placed_op& p : all)
    for (const placed_op& q : all)
      if (p.index < q.index && p.rank == q.rank && p.slot == q.slot &&
          stream_of(p.o) == stream_of(q.o))
        broken.insert(rule::slot);
  // Rules 2 and 3, dependencies.
  if (broken.count(rule::complete) == 0)
    for (const placed_op& p : all)
      for (const op& need : producers_of(m, p2p, p.o, present)) {
        const auto it = by_key.find(key_of(need));
        if (it == by_key.end()) {
          if (fragment && !a.cover(need)) broken.insert(rule::order);
          continue;
        }
        const placed_op& q = all[it->second.front()];
        if (q.rank != p.rank) continue;
        if (q.slot == p.slot) broken.insert(rule::slot);
        if (q.slot > p.slot) broken.insert(rule::order);
      }
  if (!broken.empty()) return broken;

  // Rule 4: an explicit happens-before graph. Ops that start together are one node: a matched
  // transfer (FIFO per channel), an overlapped whole-block forward/backward pair (one slot).
  const std::size_t n = all.size();
  std::vector<std::size_t> node(n);
  std::iota(node.begin(), node.end(), 0);
  std::map<std::pair<int, int>, std::vector<std::size_t>> sends, recvs;
  for (const placed_op& p : all) {
    if (!is_p2p(p.o.k)) continue;
    const int peer = m.rank_of(peer_chunk(m, p.o));
    if (p.o.k == kind::send)
      sends[{p.rank, peer}].push_back(p.index);
    else
      recvs[{peer, p.rank}].push_back(p.index);
  }
  std::set<std::pair<int, int>> channels;
  for (auto& [c, v] : sends) channels.insert(c);
  for (auto& [c, v] : recvs) channels.insert(c);
  for (const auto& c : channels) {
    const auto& sv = sends[c];
    const auto& rv = recvs[c];
    if (sv.size() != rv.size()) return {rule::deadlock};
    for (std::size_t k = 0; k < sv.size(); ++k) {
      const op& so = all[sv[k]].o;
      const op& ro = all[rv[k]].o;
      if (ro.ph != so.ph || ro.mb != so.mb || ro.chunk != peer_chunk(m, so))
        return {rule::deadlock};
      node[rv[k]] = sv[k];
    }
  }
  for (const placed_op& p : all)
    for (const placed_op& q : all)
      if (p.index < q.index && p.rank == q.rank && p.slot == q.slot && p.o.k == kind::block &&
          q.o.k == kind::block && (p.o.ph == phase::F) != (q.o.ph == phase::F))
        node[q.index] = p.index;
  std::vector<std::vector<std::size_t>> next(n);
  std::map<std::pair<int, int>, std::size_t> last_on_stream;
  for (const placed_op& p : all) {
    const std::pair<int, int> stream{p.rank, stream_index(stream_of(p.o))};
    if (auto it = last_on_stream.find(stream); it != last_on_stream.end())
      next[node[it->second]].push_back(node[p.index]);
    last_on_stream[stream] = p.index;
    for (const op& need : producers_of(m, p2p, p.o, present))
      if (const auto it = by_key.find(key_of(need)); it != by_key.end())
        next[node[it->second.front()]].push_back(node[p.index]);
  }
  std::vector<int> state(n, 0);  // 0 new, 1 on stack, 2 done
  bool cycle = false;
  for (std::size_t start = 0; start < n && !cycle; ++start) {
    if (node[start] != start || state[start]) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack{{start, 0}};
    state[start] = 1;
    while (!stack.empty() && !cycle) {
      auto& [v, i] = stack.back();
      if (i < next[v].size()) {
        const std::size_t w = next[v][i++];
        if (state[w] == 1)
          cycle = true;
        else if (state[w] == 0) {
          state[w] = 1;
          stack.emplace_back(w, 0);
        }
      } else {
        state[v] = 2;
        stack.pop_back();
      }
    }
  }
  if (cycle) return {rule::deadlock};
  if (m.max_live > 0)
    for (int peak : peak_live_activations(s))
      if (peak > m.max_live) return {rule::memory};
  return {};
}

struct base_case {
  const char* name;
  schedule s;
  bool fragment;
  assumptions a;
};

std::vector<base_case> bases() {
  std::vector<base_case> b;
  b.push_back({"1f1b 3x5", one_f_one_b({.ranks = 3, .micro = 5}), false, {}});
  b.push_back({"1f1b moe+shared 2x3",
               one_f_one_b({.ranks = 2, .micro = 3, .stages = stage_set::moe_with_shared()}),
               false,
               {}});
  b.push_back(
      {"1f1b transfers 3x3", one_f_one_b({.ranks = 3, .micro = 3, .transfers = true}), false, {}});
  b.push_back({"deepseek pairing",
               slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
                     mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1})),
               true, assuming(done(F, mb{0}))});
  // Zero-bubble-like split backward on 2 ranks: each B becomes dX then dW.
  schedule zb(model_desc{.ranks = 2, .micro = 3});
  const schedule base = one_f_one_b({.ranks = 2, .micro = 3});
  for (int r = 0; r < 2; ++r) {
    zb.add_rank();
    for (const op& o : base.rank_ops(r)) {
      if (o.ph != phase::B) {
        zb.add_slot(o);
        continue;
      }
      op x = o, w = o;
      x.ph = phase::dX;
      w.ph = phase::dW;
      zb.add_slot(x).add_slot(w);
    }
  }
  b.push_back({"split backward 2x3", zb, false, {}});
  // V placement (two chunks per rank) and bidirectional DualPipe, with overlapped pairs.
  b.push_back({"zb-v 2x4", zb_v({.ranks = 2, .micro = 4}), false, {}});
  b.push_back(
      {"dualpipev moe fb-overlap 2x4",
       dualpipev(
           {.ranks = 2, .micro = 4, .stages = stage_set::moe(), .overlap = overlap_options::all()}),
       false,
       {}});
  b.push_back({"dualpipe 2x4", dualpipe({.ranks = 2, .micro = 4}), false, {}});
  b.push_back(
      {"dualpipe transfers 2x4", dualpipe({.ranks = 2, .micro = 4, .transfers = true}), false, {}});
  return b;
}

void agree(const schedule& s, bool fragment, const assumptions& a, const std::string& what) {
  const std::set<rule> expect = reference(s, fragment, a);
  const report r = fragment ? check(s, {.fragment = true, .assumed = a}) : check(s);
  CAPTURE(what);
  REQUIRE(r.ok() == expect.empty());
  if (!r.ok()) {
    CAPTURE(to_string(r.violations.front()));
    CHECK(expect.count(r.violations.front().code) == 1);
  }
  const bool v = fragment ? verify(s, a) : verify(s);
  CHECK(v == expect.empty());
}

}  // namespace

TEST_CASE("the base schedules are legal") {
  for (const base_case& b : bases()) {
    CAPTURE(b.name);
    CHECK(reference(b.s, b.fragment, b.a).empty());
    agree(b.s, b.fragment, b.a, b.name);
  }
}

TEST_CASE("random mutations: the checker agrees with the reference") {
  std::mt19937 rng(20261123);
  const auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  std::map<std::string, int> seen_rules;
  int legal = 0, illegal = 0;
  for (const base_case& b : bases()) {
    const layout base = unpack(b.s);
    for (int trial = 0; trial < 400; ++trial) {
      layout l = base;
      std::string what = b.name;
      auto& rank = l[pick(l.size())];
      const std::size_t i = pick(rank.size()), j = pick(rank.size());
      switch (pick(7)) {
        case 0:  // swap two slots
          std::swap(rank[i], rank[j]);
          what += ": swap slots";
          break;
        case 1: {  // swap two ops (possibly across slots)
          std::swap(rank[i][pick(rank[i].size())], rank[j][pick(rank[j].size())]);
          what += ": swap ops";
          break;
        }
        case 2:  // drop one op
          rank[i].erase(rank[i].begin() + static_cast<std::ptrdiff_t>(pick(rank[i].size())));
          what += ": drop";
          break;
        case 3: {  // duplicate one op into a new slot
          const op o = rank[i][pick(rank[i].size())];
          rank.insert(rank.begin() + static_cast<std::ptrdiff_t>(j), std::vector<op>{o});
          what += ": duplicate";
          break;
        }
        case 4:  // merge a slot into its neighbour
          if (i + 1 < rank.size()) {
            rank[i].insert(rank[i].end(), rank[i + 1].begin(), rank[i + 1].end());
            rank.erase(rank.begin() + static_cast<std::ptrdiff_t>(i) + 1);
          }
          what += ": merge slots";
          break;
        case 5: {  // move an op to another rank
          auto& other = l[pick(l.size())];
          const std::size_t k = pick(rank[i].size());
          other.push_back({rank[i][k]});
          rank[i].erase(rank[i].begin() + static_cast<std::ptrdiff_t>(k));
          what += ": move to a rank";
          break;
        }
        default: {  // put an op on another lane
          op& o = rank[i][pick(rank[i].size())];
          o.lane = static_cast<std::uint8_t>(pick(2));
          what += ": change lane";
          break;
        }
      }
      const schedule s = pack(l, b.s.model);
      agree(s, b.fragment, b.a, what);
      const report r = b.fragment ? check(s, {.fragment = true, .assumed = b.a}) : check(s);
      if (r.ok())
        ++legal;
      else {
        ++illegal;
        ++seen_rules[std::string(name_of(r.violations.front().code))];
      }
    }
  }
  MESSAGE("legal mutations: " << legal << ", illegal: " << illegal);
  CHECK(legal > 50);  // swapping independent ops must be accepted
  for (rule r : {rule::complete, rule::order, rule::slot, rule::deadlock}) {
    const std::string name(name_of(r));
    CAPTURE(name);
    CHECK(seen_rules[name] > 0);
  }
}

TEST_CASE("targeted mutations name the right rule and op") {
  const schedule base = one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe()});
  layout l = unpack(base);
  {  // swap two dependent ops: dispatch/F after mlp/F
    layout m = l;
    std::swap(m[0][1], m[0][2]);
    const violation v = check(pack(m, base.model)).violations.front();
    CHECK(v.code == rule::order);
    CHECK(v.subject == op(mlp(F, mb{0})));
    CHECK(v.other == op(dispatch(F, mb{0})));
  }
  {  // drop one op
    layout m = l;
    m[1].erase(m[1].begin() + 3);
    const violation v = check(pack(m, base.model)).violations.front();
    CHECK(v.code == rule::complete);
    CHECK(v.what == fault::missing);
    CHECK(v.subject == l[1][3][0]);
  }
  {  // duplicate one op
    layout m = l;
    m[0].push_back(m[0][0]);
    const violation v = check(pack(m, base.model)).violations.front();
    CHECK(v.what == fault::duplicate);
  }
  {  // two compute ops in one slot: attn/F mb1 joins mlp/F mb0 ... use two independent ones
    layout m = l;
    m[0][0].push_back(m[0][4][0]);  // attn/F mb0 and attn/F mb1 in one slot
    m[0].erase(m[0].begin() + 4);
    const violation v = check(pack(m, base.model)).violations.front();
    CHECK(v.code == rule::slot);
    CHECK(v.what == fault::same_stream);
  }
  {  // swap independent ops: the forward of micro-batch 1 before the last forward op of 0
    const schedule one = one_f_one_b({.ranks = 1, .micro = 2});
    layout m = unpack(one);
    std::swap(m[0][1], m[0][2]);  // F0 B0 F1 B1 -> F0 F1 B0 B1
    CHECK(check(pack(m, one.model)).ok());
  }
  {  // reorder matched sends: FIFO pairs the wrong payloads
    const schedule t = one_f_one_b({.ranks = 2, .micro = 3, .transfers = true});
    layout m = unpack(t);
    std::vector<std::size_t> at;
    for (std::size_t k = 0; k < m[0].size(); ++k)
      if (m[0][k][0].k == kind::send) at.push_back(k);
    REQUIRE(at.size() >= 2);
    // Send micro-batch 0's activations after micro-batch 1's.
    const std::vector<op> first_send = m[0][at[0]];
    m[0].insert(m[0].begin() + static_cast<std::ptrdiff_t>(at[1]) + 1, first_send);
    m[0].erase(m[0].begin() + static_cast<std::ptrdiff_t>(at[0]));
    const violation v = check(pack(m, t.model)).violations.front();
    CHECK(v.code == rule::deadlock);
    CHECK(v.what == fault::mismatched_transfer);
  }
}
