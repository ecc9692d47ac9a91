// The legality checker: rules 1-5 of docs/legality.md as constexpr code over flat arrays, usable
// in `static_assert` (see diagnose.hpp for readable compile errors) and at run time (a report).
#pragma once

#include <array>
#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/memory.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/violation.hpp>

namespace weft {

/// "Everything matching this already ran": what a schedule fragment may take for granted.
/// Unset fields (-1) match anything; a `B` pattern covers the split phases dX and dW too.
struct done_pattern {
  int k = -1;
  phase ph = phase::F;
  int mb = -1, chunk = -1, layer = -1, split = -1;

  constexpr bool covers(const op& o) const noexcept {
    const bool phase_ok = ph == o.ph || (ph == phase::B && o.ph != phase::F);
    return phase_ok && (k < 0 || k == static_cast<int>(o.k)) && (mb < 0 || mb == o.mb) &&
           (chunk < 0 || chunk == o.chunk) && (layer < 0 || layer == o.layer) &&
           (split < 0 || split == o.split);
  }
};

namespace detail {
constexpr void set_pattern(done_pattern& p, mb v) { p.mb = v.value; }
constexpr void set_pattern(done_pattern& p, chunk v) { p.chunk = v.value; }
constexpr void set_pattern(done_pattern& p, layer v) { p.layer = v.value; }
constexpr void set_pattern(done_pattern& p, split v) { p.split = v.value; }
}  // namespace detail

/// `done(F, mb{0})`: every forward op of micro-batch 0 ran. `done(attn, B, mb{2})` narrows the
/// kind.
template <phase_tag Phase, class... Fields>
requires(detail::is_field<Fields>&&...) constexpr done_pattern
    done(Phase, Fields... fields) noexcept {
  done_pattern p{.ph = Phase::value};
  (detail::set_pattern(p, fields), ...);
  return p;
}
template <kind_tag Kind, phase_tag Phase, class... Fields>
requires(detail::is_field<Fields>&&...) constexpr done_pattern
    done(stage_fn<Kind>, Phase ph, Fields... fields) noexcept {
  done_pattern p = done(ph, fields...);
  p.k = static_cast<int>(Kind::value);
  return p;
}

inline constexpr int max_assumptions = 16;

/// What a fragment assumes ran before it. Passing assumptions makes the check a fragment check:
/// ops the fragment does not contain are not required (rule 1 checks uniqueness only).
struct assumptions {
  std::array<done_pattern, max_assumptions> items{};
  int count = 0;

  constexpr bool cover(const op& o) const noexcept {
    for (int i = 0; i < count; ++i)
      if (items[static_cast<std::size_t>(i)].covers(o)) return true;
    return false;
  }
};

template <class... Patterns>
requires(std::is_same_v<Patterns, done_pattern>&&...) constexpr assumptions
    assuming(Patterns... ps) noexcept {
  static_assert(sizeof...(ps) <= max_assumptions, "weft: at most 16 assumptions per fragment");
  return {{ps...}, static_cast<int>(sizeof...(ps))};
}

struct check_options {
  bool fragment = false;
  assumptions assumed{};
  std::size_t max_violations = 256;  ///< stop collecting after this many
};

/// Everything the checker found. `blocked` lists, on a deadlock, the op every stuck rank waits at.
struct report {
  buffer<violation> violations;
  buffer<violation> blocked;
  constexpr bool ok() const noexcept { return violations.empty(); }
};

namespace detail {

/// Per-op facts the rules share, computed once.
struct placed {
  const schedule& s;
  op_index ix;
  bool explicit_p2p = false;
  dependency_rules rules;
  buffer<std::uint32_t> rank_of, slot_of;  // slot: counted from 0 on its rank
  buffer<std::uint32_t> pos;               // dense id -> op position
  buffer<std::uint32_t> id;                // op position -> dense id (npos if outside)

  constexpr placed(const schedule& sched, bool collectives, bool p2p)
      : s(sched),
        ix(sched.model, collectives),
        explicit_p2p(p2p),
        rules(ix, p2p),
        rank_of(sched.ops.size()),
        slot_of(sched.ops.size()),
        pos(ix.size, op_index::npos),
        id(sched.ops.size(), op_index::npos) {
    std::uint32_t g = 0, i = 0;
    for (int r = 0; r < s.ranks(); ++r)
      for (std::uint32_t local = 0; g < s.end_slot(r); ++g, ++local)
        for (; i < s.slot_end[g]; ++i) {
          rank_of[i] = static_cast<std::uint32_t>(r);
          slot_of[i] = local;
        }
  }
  constexpr std::uint32_t find(const op& o) const noexcept { return pos[ix.raw_id(o)]; }
  constexpr bool has(const op& o) const noexcept { return find(o) != op_index::npos; }
  /// Calls `fn(producer)` with each producer of op `i`, as an op value.
  template <class Fn>
  constexpr void producers(std::uint32_t i, Fn&& fn) const {
    rules.producers(
        s.ops[i], id[i], [this](std::uint32_t pid) { return pos[pid] != op_index::npos; },
        [&](std::uint32_t pid, int) { fn(ix.op_of(pid)); });
  }
};

class checker {
 public:
  constexpr checker(const schedule& s, const check_options& opt) : s_(s), opt_(opt) {}

  constexpr report run() {
    if (const model_error e = validate(s_.model); e != model_error::none) {
      add({.code = rule::config, .what = fault::bad_model, .value = static_cast<int>(e)});
      return static_cast<report&&>(out_);
    }
    bool p2p = false, collectives = false;
    for (const op& o : s_.ops) {
      p2p = p2p || is_p2p(o.k);
      collectives = collectives || is_collective(o.k);
    }
    placed p(s_, collectives, p2p);
    if (!place_ops(p) || !(opt_.fragment || require_all(p)) || !same_stream(p) || !dependencies(p))
      return static_cast<report&&>(out_);
    if (out_.ok() && !deadlock_free(p)) return static_cast<report&&>(out_);
    if (out_.ok() && s_.model.max_live > 0) memory_bound(p);
    return static_cast<report&&>(out_);
  }

 private:
  const schedule& s_;
  const check_options& opt_;
  report out_;

  /// Records a violation; false once enough were collected, which stops the walk.
  constexpr bool add(const violation& v) {
    out_.violations.push_back(v);
    return out_.violations.size() < opt_.max_violations;
  }
  constexpr violation at(const placed& p, std::uint32_t i, rule r, fault f) const {
    return {.code = r,
            .what = f,
            .rank = static_cast<int>(p.rank_of[i]),
            .slot = static_cast<int>(p.slot_of[i]),
            .subject = s_.ops[i]};
  }
  constexpr violation with_other(const placed& p, violation v, std::uint32_t j) const {
    v.other = s_.ops[j];
    v.other_rank = static_cast<int>(p.rank_of[j]);
    v.other_slot = static_cast<int>(p.slot_of[j]);
    return v;
  }

  // Rule 1, per op: inside the model, on its chunk's rank, once; a unit's backward in one form.
  constexpr bool place_ops(placed& p) {
    const model_desc& m = s_.model;
    for (std::uint32_t i = 0; i < s_.ops.size(); ++i) {
      const op& o = s_.ops[i];
      outside why = p.ix.why_outside(o);
      if (why == outside::none && o.lane >= lanes_per_class) why = outside::lane;
      if (why != outside::none) {
        violation v = at(p, i, rule::complete, fault::outside_model);
        v.value = static_cast<int>(why);
        if (!add(v)) return false;
        continue;
      }
      if (const int home = m.rank_of(o.chunk); home != static_cast<int>(p.rank_of[i])) {
        violation v = at(p, i, rule::complete, fault::wrong_rank);
        v.other_rank = home;
        if (!add(v)) return false;
        continue;
      }
      const std::uint32_t id = p.ix.raw_id(o);
      if (p.pos[id] != op_index::npos) {
        if (!add(with_other(p, at(p, i, rule::complete, fault::duplicate), p.pos[id])))
          return false;
        continue;
      }
      p.pos[id] = i;
      p.id[i] = id;
    }
    for (std::uint32_t i = 0; i < s_.ops.size(); ++i) {
      const op& o = s_.ops[i];
      if (p.id[i] == op_index::npos || o.ph != phase::B || !has_weights(o.k)) continue;
      for (phase half : {phase::dX, phase::dW}) {
        op h = o;
        h.ph = half;
        if (const std::uint32_t j = p.find(h); j != op_index::npos)
          if (!add(with_other(p, at(p, i, rule::complete, fault::mixed_backward), j))) return false;
      }
    }
    return out_.ok() || out_.violations.size() < opt_.max_violations;
  }

  constexpr bool missing(const placed& p, const op& o) {
    if (p.has(o)) return true;
    return add({.code = rule::complete,
                .what = fault::missing,
                .rank = s_.model.rank_of(o.chunk),
                .subject = o});
  }

  // Rule 1, per model unit: everything needed is there.
  constexpr bool require_all(const placed& p) {
    const model_desc& m = s_.model;
    for (int mbi = 0; mbi < m.micro; ++mbi)
      for (int c = m.first_chunk(mbi); c < m.end_chunk(mbi); ++c) {
        for (int l = 0; l < m.layers; ++l)
          for (int sp = 0; sp < m.splits; ++sp)
            for (int k = 0; k < kind_count; ++k) {
              if (!p.ix.has_kind(static_cast<kind>(k))) continue;
              op o = make_op(static_cast<kind>(k), phase::F, mbi, c, l, sp);
              if (!missing(p, o)) return false;
              if (!m.backward) continue;
              o.ph = phase::B;
              if (p.has(o) || !has_weights(o.k)) {
                if (!missing(p, o)) return false;
                continue;
              }
              op dx = o, dw = o;
              dx.ph = phase::dX;
              dw.ph = phase::dW;
              if (!p.has(dx) && !p.has(dw)) {
                if (!missing(p, o)) return false;  // no backward at all: name the fused form
                continue;
              }
              if (!missing(p, dx) || !missing(p, dw)) return false;
            }
        if (!p.explicit_p2p) continue;
        for (kind k : {kind::send, kind::recv})
          for (phase ph : {phase::F, phase::B}) {
            if (ph == phase::B && !m.backward) continue;
            const op t = make_op(k, ph, mbi, c);
            if (p.ix.transfer_peer(t) >= 0 && !missing(p, t)) return false;
          }
      }
    return true;
  }

  // Rule 3, streams: one op per stream per slot.
  constexpr bool same_stream(const placed& p) {
    for (std::uint32_t g = 0; g < s_.slot_end.size(); ++g)
      for (std::uint32_t i = s_.first_op(g); i < s_.slot_end[g]; ++i)
        for (std::uint32_t j = s_.first_op(g); j < i; ++j)
          if (stream_of(s_.ops[i]) == stream_of(s_.ops[j])) {
            if (!add(with_other(p, at(p, i, rule::slot, fault::same_stream), j))) return false;
            break;
          }
    return true;
  }

  // Rules 2 and 3, dependencies: a same-rank producer sits in an earlier slot.
  constexpr bool dependencies(const placed& p) {
    bool more = true;
    for (std::uint32_t i = 0; i < s_.ops.size() && more; ++i) {
      if (p.id[i] == op_index::npos) continue;
      // An op may need one producer for two reasons (a last chunk's backward needs its own
      // forward, which is also the loss); report the pair once.
      std::uint32_t last_reported = op_index::npos;
      p.producers(i, [&](const op& need) {
        if (!more) return;
        const std::uint32_t j = p.find(need);
        if (j == op_index::npos) {
          if (opt_.fragment && !opt_.assumed.cover(need)) {
            violation v = at(p, i, rule::order, fault::producer_missing);
            v.other = need;
            v.other_rank = s_.model.rank_of(need.chunk);
            more = add(v);
          }
          return;
        }
        if (p.rank_of[j] != p.rank_of[i] || p.slot_of[j] < p.slot_of[i] || j == last_reported)
          return;
        last_reported = j;
        const bool same = p.slot_of[j] == p.slot_of[i];
        more = add(with_other(p,
                              at(p, i, same ? rule::slot : rule::order,
                                 same ? fault::dependent_in_slot : fault::runs_before_producer),
                              j));
      });
    }
    return more;
  }

  // Rule 4: FIFO-match transfers per channel, then run every stream in virtual lock-step; if
  // some op can never start, the happens-before graph has a cycle.
  constexpr bool deadlock_free(const placed& p) {
    const auto n = static_cast<std::uint32_t>(s_.ops.size());
    const auto R = static_cast<std::uint32_t>(s_.ranks());
    constexpr std::uint32_t none = op_index::npos;
    buffer<std::uint32_t> partner(n, none);
    if (p.explicit_p2p && !match_transfers(p, partner)) return false;

    // Per (rank, stream) queue of op positions in issue order (counting sort).
    const std::uint32_t Q = R * streams_per_rank;
    buffer<std::uint32_t> qbegin(Q + 1, 0), queue(n), qpos(n), head(Q);
    const auto qof = [&](std::uint32_t i) {
      return p.rank_of[i] * streams_per_rank +
             static_cast<std::uint32_t>(stream_index(stream_of(s_.ops[i])));
    };
    for (std::uint32_t i = 0; i < n; ++i) ++qbegin[qof(i) + 1];
    for (std::uint32_t q = 0; q < Q; ++q) qbegin[q + 1] += qbegin[q];
    for (std::uint32_t q = 0; q < Q; ++q) head[q] = qbegin[q];
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t q = qof(i);
      qpos[i] = head[q];
      queue[head[q]++] = i;
    }
    for (std::uint32_t q = 0; q < Q; ++q) head[q] = qbegin[q];

    buffer<std::uint8_t> done(n, 0);
    const auto ready = [&](std::uint32_t i) {
      bool ok = true;
      p.producers(i, [&](const op& need) {
        const std::uint32_t j = p.find(need);
        ok = ok && (j == none || done[j]);
      });
      return ok;
    };
    const auto at_head = [&](std::uint32_t i) { return head[qof(i)] == qpos[i]; };
    std::uint32_t remaining = n;
    for (bool progress = true; remaining > 0 && progress;) {
      progress = false;
      for (std::uint32_t q = 0; q < Q; ++q)
        for (; head[q] < qbegin[q + 1]; ++head[q], --remaining, progress = true) {
          const std::uint32_t i = queue[head[q]];
          if (!ready(i)) break;
          if (partner[i] != none) {  // a transfer completes together with its peer
            const std::uint32_t j = partner[i];
            if (!at_head(j) || !ready(j)) break;
            done[j] = 1;
            ++head[qof(j)];
            --remaining;
          }
          done[i] = 1;
        }
    }
    if (remaining == 0) return true;

    // Name the op every stuck rank waits at, and what it waits for.
    for (std::uint32_t r = 0; r < R; ++r) {
      std::uint32_t first = none;
      for (std::uint32_t q = r * streams_per_rank; q < (r + 1) * streams_per_rank; ++q)
        if (head[q] < qbegin[q + 1] && queue[head[q]] < first) first = queue[head[q]];
      if (first == none) continue;
      violation v = at(p, first, rule::deadlock, fault::cycle);
      std::uint32_t waits = none;
      p.producers(first, [&](const op& need) {
        const std::uint32_t j = p.find(need);
        if (waits == none && j != none && !done[j]) waits = j;
      });
      if (waits == none) waits = partner[first];
      if (waits != none) v = with_other(p, v, waits);
      out_.blocked.push_back(v);
    }
    add(out_.blocked.front());
    return false;
  }

  // FIFO matching: the k-th send on channel (a -> b) pairs with the k-th receive on it.
  constexpr bool match_transfers(const placed& p, buffer<std::uint32_t>& partner) {
    const auto n = static_cast<std::uint32_t>(s_.ops.size());
    const auto R = static_cast<std::uint32_t>(s_.ranks());
    const std::uint32_t C = R * R;
    // Lists of sends and of receives per channel, in issue order (counting sort).
    buffer<std::uint32_t> begin_s(C + 1, 0), begin_r(C + 1, 0), list_s, list_r;
    const auto channel = [&](std::uint32_t i) {
      const op& o = s_.ops[i];
      const auto peer = static_cast<std::uint32_t>(s_.model.rank_of(p.ix.transfer_peer(o)));
      return o.k == kind::send ? p.rank_of[i] * R + peer : peer * R + p.rank_of[i];
    };
    for (std::uint32_t i = 0; i < n; ++i)
      if (is_p2p(s_.ops[i].k)) ++(s_.ops[i].k == kind::send ? begin_s : begin_r)[channel(i) + 1];
    for (std::uint32_t c = 0; c < C; ++c) {
      begin_s[c + 1] += begin_s[c];
      begin_r[c + 1] += begin_r[c];
    }
    list_s.resize(begin_s[C]);
    list_r.resize(begin_r[C]);
    {
      buffer<std::uint32_t> fill_s = begin_s, fill_r = begin_r;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (!is_p2p(s_.ops[i].k)) continue;
        if (s_.ops[i].k == kind::send)
          list_s[fill_s[channel(i)]++] = i;
        else
          list_r[fill_r[channel(i)]++] = i;
      }
    }
    for (std::uint32_t c = 0; c < C; ++c) {
      const std::uint32_t ns = begin_s[c + 1] - begin_s[c], nr = begin_r[c + 1] - begin_r[c];
      for (std::uint32_t k = 0; k < ns || k < nr; ++k) {
        if (k >= nr) {
          add(at(p, list_s[begin_s[c] + k], rule::deadlock, fault::unmatched_send));
          return false;
        }
        if (k >= ns) {
          add(at(p, list_r[begin_r[c] + k], rule::deadlock, fault::unmatched_recv));
          return false;
        }
        const std::uint32_t i = list_s[begin_s[c] + k], j = list_r[begin_r[c] + k];
        const op& snd = s_.ops[i];
        const op& rcv = s_.ops[j];
        if (rcv.ph != snd.ph || rcv.mb != snd.mb ||
            rcv.chunk != static_cast<std::uint8_t>(p.ix.transfer_peer(snd))) {
          add(with_other(p, at(p, i, rule::deadlock, fault::mismatched_transfer), j));
          return false;
        }
        partner[i] = j;
        partner[j] = i;
      }
    }
    return true;
  }

  // Rule 5: live activations stay under the bound.
  constexpr void memory_bound(const placed& p) {
    bool reported = false;
    walk_live(s_, [&](int, std::uint32_t i, int live) {
      if (reported || live <= s_.model.max_live) return;
      violation v = at(p, i, rule::memory, fault::over_bound);
      v.value = live;
      v.bound = s_.model.max_live;
      add(v);
      reported = true;
    });
  }
};

/// A sufficient condition for legality, cheap enough for `static_assert` on 100k-op schedules:
/// one pass over the ops (rules 1-3 plus counting for completeness), then a sweep over the few
/// ops that wait on another rank, under the stricter semantics that a rank finishes its slots in
/// order. A deadlock-free run under that semantics is deadlock-free with independent streams
/// (which only drops ordering edges), so `true` is a proof; `false` sends the caller to the
/// precise checker, which either finds the violation or proves legality with stream semantics.
constexpr bool quick_proof(const schedule& s) {
  const model_desc& m = s.model;
  if (validate(m) != model_error::none) return false;
  bool explicit_p2p = false;
  for (const op& o : s.ops) {
    if (is_collective(o.k)) return false;
    if (is_p2p(o.k)) {
      explicit_p2p = true;
      break;
    }
  }
  const op_index ix(m, false);
  const dependency_rules rules(ix, explicit_p2p);
  constexpr std::uint32_t unset = op_index::npos;
  buffer<std::uint32_t> gslot_buf(ix.size, unset);
  std::uint32_t* gslot = gslot_buf.data();
  const op* ops = s.ops.data();
  const std::uint32_t* slot_end = s.slot_end.data();
  const int S = ix.S;

  // Ops that wait on another rank: the op's slot and rank, and the producer's id and rank.
  struct wait_point {
    std::uint32_t slot, self, pid;
    std::int32_t rank, prank;
  };
  buffer<wait_point> waits;
  std::uint32_t n_forward = 0, n_fused = 0, n_dx = 0, n_dw = 0, n_p2p = 0;

  // Per-kind facts and the chunk -> rank map, looked up once instead of recomputed per op.
  std::int8_t layer_pos[kind_count] = {};
  unsigned stream_bit[kind_count] = {}, weighted_kind[kind_count] = {};
  for (int k = 0; k < kind_count; ++k) {
    layer_pos[k] = ix.kpos[k];
    stream_bit[k] = 1u << stream_index({stream_of(static_cast<kind>(k)), 0});
    weighted_kind[k] = has_weights(static_cast<kind>(k)) ? 1u : 0u;
  }
  std::int16_t home[256] = {};
  for (int c = 0; c < S; ++c) home[c] = static_cast<std::int16_t>(m.rank_of(c));
  const auto M = static_cast<std::uint32_t>(m.micro), L = static_cast<std::uint32_t>(m.layers),
             Sp = static_cast<std::uint32_t>(m.splits), K = static_cast<std::uint32_t>(ix.K);
  std::uint32_t count[phase_count] = {};
  int fwd_dist[kind_count] = {}, bwd_dist[kind_count] = {};
  for (int k = 0; k < kind_count; ++k) {
    fwd_dist[k] = rules.forward_input_distance(static_cast<kind>(k));
    bwd_dist[k] = rules.backward_source_distance(static_cast<kind>(k));
  }

  std::uint32_t g = 0, i = 0;
  for (int r = 0; r < s.ranks(); ++r) {
    for (const std::uint32_t g_end = s.end_slot(r); g < g_end; ++g) {
      unsigned streams_used = 0;
      for (; i < slot_end[g]; ++i) {
        const op o = ops[i];
        const int k = static_cast<int>(o.k);
        const int kp = layer_pos[k];
        const unsigned bit = stream_bit[k] << o.lane;
        if (kp >= 0 && o.mb < M && o.chunk < S && o.layer < L && o.split < Sp &&
            o.lane < lanes_per_class && home[o.chunk] == r && !(streams_used & bit)) {
          const auto ph = static_cast<std::uint32_t>(o.ph);
          if (ph != 0 && (!m.backward || (ph >= 2 && !weighted_kind[k]))) return false;
          if (m.bidirectional && !m.carries(o.mb, o.chunk)) return false;
          streams_used |= bit;
          const std::uint32_t id = ((((o.mb * S + o.chunk) * L + o.layer) * Sp + o.split) * K +
                                    static_cast<std::uint32_t>(kp)) *
                                       phase_count +
                                   ph;
          if (gslot[id] != unset) return false;
          // A unit's backward is fused (B = 1) or split (dX = 2, dW = 3), never both.
          if (ph == 1 && (gslot[id + 1] != unset || gslot[id + 2] != unset)) return false;
          if (ph >= 2 && gslot[id - ph + 1] != unset) return false;
          ++count[ph];
          gslot[id] = g;
          // The common chain cases inline (same tables as dependency_rules::producers).
          if (ph == 0 && fwd_dist[k] >= 0) {
            const std::uint32_t v = gslot[id - static_cast<std::uint32_t>(fwd_dist[k])];
            if (v == unset || v == g) return false;
            continue;
          }
          if (ph != 3 && ph != 0 && bwd_dist[k] >= 0) {
            const std::uint32_t f = id - ph, v = gslot[f];
            if (v == unset || v == g) return false;
            const std::uint32_t succ = f + static_cast<std::uint32_t>(bwd_dist[k]) + 1;
            std::uint32_t w = gslot[succ];
            if (w == unset) w = gslot[succ + 1];
            if (w == unset || w == g) return false;
            continue;
          }
          bool ok = true;
          rules.producers(
              o, id, [&](std::uint32_t pid) { return gslot[pid] != unset; },
              [&](std::uint32_t pid, int pchunk) {
                if (pchunk != o.chunk && home[pchunk] != r)
                  waits.push_back({g, id, pid, r, home[pchunk]});
                else if (gslot[pid] == unset || gslot[pid] == g)
                  ok = false;
              });
          if (!ok) return false;
          continue;
        }
        // Transfers take this slower path; anything else unusual goes to the precise checker.
        if (!is_p2p(o.k) || ix.why_outside(o) != outside::none || o.lane >= lanes_per_class ||
            home[o.chunk] != r || (streams_used & bit))
          return false;
        streams_used |= bit;
        const std::uint32_t id = ix.raw_id(o);
        if (gslot[id] != unset) return false;
        gslot[id] = g;
        ++n_p2p;
        bool ok = true;
        rules.producers(
            o, id, [&](std::uint32_t pid) { return gslot[pid] != unset; },
            [&](std::uint32_t pid, int) { ok = ok && gslot[pid] != unset && gslot[pid] != g; });
        if (!ok) return false;
        // A transfer waits for its peer, found by payload.
        const int peer_chunk = ix.transfer_peer(o);
        const op peer =
            make_op(o.k == kind::send ? kind::recv : kind::send, o.ph, o.mb, peer_chunk);
        waits.push_back({g, id, ix.raw_id(peer), r, home[peer_chunk]});
      }
    }
  }
  n_forward = count[0];
  n_fused = count[1];
  n_dx = count[2];
  n_dw = count[3];

  // Completeness by counting: no op was outside the model or repeated, and no unit mixes a fused
  // and a split backward, so matching counts mean every unit is there in exactly one form.
  std::uint32_t units = 0, transfers = 0;
  for (int mbi = 0; mbi < m.micro; ++mbi)
    for (int c = m.first_chunk(mbi); c < m.end_chunk(mbi); ++c) {
      ++units;
      transfers += ix.crosses_ranks(c, ix.next_chunk(mbi, c)) ? 1u : 0u;
    }
  units *= static_cast<std::uint32_t>(m.layers * m.splits * ix.K);
  std::uint32_t weighted = 0;
  for (int k = 0; k < kind_count; ++k)
    weighted += ix.has_kind(static_cast<kind>(k)) && has_weights(static_cast<kind>(k));
  weighted *= units / static_cast<std::uint32_t>(ix.K);
  if (n_forward != units) return false;
  if (m.backward && (n_fused + n_dx != units || n_dw != n_dx || n_dx > weighted)) return false;
  if (!m.backward && n_fused + n_dx + n_dw != 0) return false;
  if (explicit_p2p && n_p2p != transfers * (m.backward ? 4u : 2u)) return false;

  // Transfers: FIFO order per channel must pair each send with the receive of its payload.
  if (explicit_p2p) {
    const auto R = static_cast<std::uint32_t>(s.ranks());
    buffer<std::uint32_t> sent(R * R, 0), received(R * R, 0), seq(ix.size - ix.p2p_base, 0);
    for (std::uint32_t j = 0; j < s.ops.size(); ++j) {
      const op& o = ops[j];
      if (!is_p2p(o.k)) continue;
      const auto here = static_cast<std::uint32_t>(m.rank_of(o.chunk));
      const auto there = static_cast<std::uint32_t>(m.rank_of(ix.transfer_peer(o)));
      seq[ix.raw_id(o) - ix.p2p_base] =
          o.k == kind::send ? sent[here * R + there]++ : received[there * R + here]++;
    }
    for (const wait_point& w : waits)
      if (w.pid >= ix.p2p_base && seq[w.pid - ix.p2p_base] != seq[w.self - ix.p2p_base])
        return false;
  }

  // Sweep: progress[r] is the first slot rank r has not finished; a wait point is cleared once
  // its producer's slot is finished, or (a transfer) once the peer's rank has reached the peer.
  const auto R = static_cast<std::size_t>(s.ranks());
  buffer<std::uint32_t> begin(R + 1, 0), progress(R, 0), cursor(R, 0);
  for (const wait_point& w : waits) ++begin[static_cast<std::size_t>(w.rank) + 1];
  for (std::size_t r = 0; r < R; ++r) begin[r + 1] += begin[r];
  // Wait points were recorded in rank order, so they are already grouped.
  buffer<std::uint8_t> cleared(waits.size(), 0);
  const auto refresh = [&](std::size_t r) {
    std::uint32_t c = cursor[r];
    while (c < begin[r + 1] && cleared[c]) ++c;
    cursor[r] = c;
    progress[r] = c < begin[r + 1] ? waits[c].slot : s.end_slot(static_cast<int>(r));
  };
  for (std::size_t r = 0; r < R; ++r) {
    cursor[r] = begin[r];
    refresh(r);
  }
  const auto slot_of = [&](std::uint32_t pid) {
    std::uint32_t v = gslot[pid];
    // A cross-rank input gradient is named in fused form; the schedule may split it.
    if (v == unset && pid < ix.p2p_base && pid % phase_count == 1) v = gslot[pid + 1];
    if (v == unset && pid < ix.p2p_base && pid % phase_count == 2) v = gslot[pid - 1];
    return v;
  };
  std::uint32_t left = static_cast<std::uint32_t>(waits.size());
  for (bool moved = true; left > 0 && moved;) {
    moved = false;
    for (std::size_t step = 0; step < R; ++step) {
      const std::size_t r = step;
      const std::uint32_t at = progress[r];
      for (std::uint32_t c = cursor[r]; c < begin[r + 1] && waits[c].slot == at; ++c) {
        if (cleared[c]) continue;
        const wait_point& w = waits[c];
        const std::uint32_t ps = slot_of(w.pid);
        if (ps == unset) return false;
        const auto pr = static_cast<std::size_t>(w.prank);
        if (w.pid >= ix.p2p_base) {
          if (progress[pr] < ps) continue;  // the peer has not reached its transfer yet
          // Clear the peer's matching wait point too: both sides of a rendezvous finish together.
          for (std::uint32_t d = cursor[pr]; d < begin[pr + 1] && waits[d].slot == ps; ++d)
            if (!cleared[d] && waits[d].pid == w.self) {
              cleared[d] = 1;
              --left;
            }
          refresh(pr);
        } else if (progress[pr] <= ps) {
          continue;  // the producer's slot is not finished
        }
        cleared[c] = 1;
        --left;
        moved = true;
      }
      refresh(r);
    }
  }
  if (left > 0) return false;
  if (m.max_live > 0) {
    bool within = true;
    walk_live(s, [&](int, std::uint32_t, int live) { within = within && live <= m.max_live; });
    return within;
  }
  return true;
}

}  // namespace detail

/// Every violation of rules 1-5 (up to `max_violations`), for schedules built from data.
constexpr report check(const schedule& s, const check_options& opt = {}) {
  return detail::checker(s, opt).run();
}

/// The first violation, as a structural value (empty when the schedule is legal). Takes the
/// schedule by value: clang does not run the destructor of a temporary bound to a reference
/// inside a template argument, which would report its buffers as leaked.
constexpr violation diagnose(schedule s) {
  if (detail::quick_proof(s)) return {};
  report r = check(s, {.max_violations = 1});
  return r.ok() ? violation{} : r.violations.front();
}
/// The first violation of a fragment that takes `a` for granted (rule 1 checks uniqueness only).
constexpr violation diagnose(schedule s, const assumptions& a) {
  report r = check(s, {.fragment = true, .assumed = a, .max_violations = 1});
  return r.ok() ? violation{} : r.violations.front();
}

/// True when the schedule is legal: `static_assert(verify(s))`. For a readable compile error
/// use `static_assert(proven<diagnose(s)>)` (diagnose.hpp).
constexpr bool verify(schedule s) { return !diagnose(static_cast<schedule&&>(s)); }
constexpr bool verify(schedule s, const assumptions& a) {
  return !diagnose(static_cast<schedule&&>(s), a);
}

}  // namespace weft
