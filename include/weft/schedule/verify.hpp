// The legality checker: rules 1-5 of docs/legality.md as constexpr code over flat arrays, usable
// in `static_assert` (see diagnose.hpp for readable compile errors) and at run time (a report).
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include <weft/config.hpp>
#include <weft/core/buffer.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/placement.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/program_builder.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/transfers.hpp>
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

class checker {
 public:
  constexpr checker(const schedule& s, const check_options& opt) : s_(s), opt_(opt) {}

  constexpr report run() {
    if (const model_error e = s_.well_formed() ? validate(s_.model) : model_error::slots_malformed;
        e != model_error::none) {
      add({.code = rule::config, .what = fault::bad_model, .value = static_cast<int>(e)});
      return static_cast<report&&>(out_);
    }
    bool p2p = false, collectives = false;
    const op* ops = s_.ops.data();
    for (std::uint32_t i = 0, n = static_cast<std::uint32_t>(s_.ops.size()); i < n; ++i) {
      const kind_role role = kind_table[static_cast<int>(ops[i].k)].role;  // no call per op
      p2p = p2p || role == kind_role::transfer;
      collectives = collectives || role == kind_role::collective;
    }
    placed p(s_, collectives, p2p);
    program prog;
    if (!place_ops(p) || !(opt_.fragment || require_all(p)) || !same_stream(p) ||
        !dependencies(p, prog))
      return static_cast<report&&>(out_);
    if (out_.ok() && !deadlock_free(p, prog)) return static_cast<report&&>(out_);
    if (out_.ok() && s_.model.max_live > 0) memory_bound();
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
  // Where op i sits, found by binary search: violations are few, and the placement's per-op
  // arrays go to the stream program before rule 4.
  constexpr violation at(std::uint32_t i, rule r, fault f) const {
    const std::uint32_t g = s_.slot_holding(i);
    const int rank = s_.rank_holding(g);
    return {.code = r,
            .what = f,
            .rank = rank,
            .slot = static_cast<int>(g - s_.first_slot(rank)),
            .subject = s_.ops[i]};
  }
  constexpr violation with_other(violation v, std::uint32_t j) const {
    const violation o = at(j, v.code, v.what);
    v.other = o.subject;
    v.other_rank = o.rank;
    v.other_slot = o.slot;
    return v;
  }

  // Rule 1, per op: inside the model, on its chunk's rank, once; a unit's backward in one form.
  // Written for constant evaluation, which pays for every call and array access: member tables
  // of the index, the flat id table read directly, the backward forms looked at only when the
  // schedule splits a backward.
  constexpr bool place_ops(placed& p) {
    constexpr std::uint32_t sh = paged<std::uint32_t>::page_shift,
                            pm = paged<std::uint32_t>::page_mask;
    const op_index& ix = p.ix;
    const auto n = static_cast<std::uint32_t>(s_.ops.size());
    const op* ops = s_.ops.data();
    const auto* rank = p.rank.pages();
    auto* id = p.id.pages();
    const auto* dense = static_cast<const id_positions&>(p.pos).dense();
    bool split_backward = false;
    for (std::uint32_t i = 0; i < n; ++i) {
      const op o = ops[i];  // one read of the op, its fields then read from the copy
      std::uint32_t own = npos;
      outside why = ix.why_outside(o);
      if (why == outside::none && o.lane >= lanes_per_class) why = outside::lane;
      if (why != outside::none) {
        violation v = at(i, rule::complete, fault::outside_model);
        v.value = static_cast<int>(why);
        if (!add(v)) return false;
      } else if (const int home = ix.home[o.chunk]; home != rank[i >> sh].v[i & pm]) {
        violation v = at(i, rule::complete, fault::wrong_rank);
        v.other_rank = home;
        if (!add(v)) return false;
      } else if (const std::uint32_t raw = ix.raw_id(o),
                 first = dense ? dense[raw >> sh].v[raw & pm] - 1u : p.pos[raw];
                 first != npos) {
        if (!add(with_other(at(i, rule::complete, fault::duplicate), first))) return false;
      } else {
        if (dense)
          p.pos.dense()[raw >> sh].v[raw & pm] = i + 1;
        else
          p.pos.set(raw, i);
        own = raw;
        split_backward = split_backward || o.ph == phase::dX || o.ph == phase::dW;
      }
      id[i >> sh].v[i & pm] = own;
    }
    // A fused backward beside a split one of the same unit: their ids follow its own.
    for (std::uint32_t i = 0; split_backward && i < n; ++i) {
      const op& o = ops[i];
      const std::uint32_t own = p.id[i];
      if (own == npos || o.ph != phase::B || !ix.weighted[static_cast<int>(o.k)]) continue;
      for (std::uint32_t half = 1; half <= 2; ++half)
        if (const std::uint32_t j = p.pos[own + half]; j != npos)
          if (!add(with_other(at(i, rule::complete, fault::mixed_backward), j))) return false;
    }
    return out_.ok() || out_.violations.size() < opt_.max_violations;
  }

  // Rule 1: `o` is required and not there.
  constexpr bool missing(const op& o) {
    return add({.code = rule::complete,
                .what = fault::missing,
                .rank = s_.model.rank_of(o.chunk),
                .subject = o});
  }
  constexpr bool missing(const placed& p, const op& o) { return p.has(o) || missing(o); }

  // Rule 1, per model unit: everything needed is there. A layer stage's ops are looked up by
  // id, its forward's and the backward forms' one after another (no op values built per unit).
  constexpr bool require_all(const placed& p) {
    const model_desc& m = s_.model;
    const op_index& ix = p.ix;
    constexpr std::uint32_t sh = paged<std::uint32_t>::page_shift,
                            pm = paged<std::uint32_t>::page_mask;
    const auto* dense = p.pos.dense();
    const auto K = static_cast<std::uint32_t>(ix.K);
    for (int mbi = 0; mbi < m.micro; ++mbi)
      for (int c = m.first_chunk(mbi); c < m.end_chunk(mbi); ++c) {
        for (int l = 0; l < m.layers; ++l)
          for (int sp = 0; sp < ix.parts; ++sp) {
            const std::uint32_t unit0 =
                static_cast<std::uint32_t>(((mbi * ix.S + c) * m.layers + l) * ix.parts + sp) * K;
            for (int k = 0; k < kind_count; ++k) {
              const int kp = ix.kpos[k];
              if (kp < 0 || sp >= ix.parts_of_kind[k]) continue;
              // F's id; B, dX and dW follow it.
              const std::uint32_t f = (unit0 + static_cast<std::uint32_t>(kp)) * phase_count;
              bool there[phase_count] = {};
              for (std::uint32_t ph = 0; ph < (m.backward ? phase_count : 1u); ++ph)
                there[ph] =
                    dense ? dense[(f + ph) >> sh].v[(f + ph) & pm] != 0 : p.pos[f + ph] != npos;
              const auto named = [&](phase ph) {
                return make_op(static_cast<kind>(k), ph, mbi, c, l, sp);
              };
              if (!there[0] && !missing(named(phase::F))) return false;
              if (!m.backward) continue;
              if (there[1] || !ix.weighted[k] || (!there[2] && !there[3])) {
                // The fused form, or no backward at all: name the fused form.
                if (!there[1] && !missing(named(phase::B))) return false;
                continue;
              }
              if (!there[2] && !missing(named(phase::dX))) return false;
              if (!there[3] && !missing(named(phase::dW))) return false;
            }
          }
        if (m.tp != tp_overlap::off)
          for (kind k : {kind::all_gather, kind::reduce_scatter})
            for (phase ph : {phase::F, phase::B})
              for (int sp = 0; sp < m.splits; ++sp)
                if (m.tp_has(k, ph, sp) && !missing(p, make_op(k, ph, mbi, c, 0, sp))) return false;
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
    const paged<std::uint8_t>& stream = p.stream;
    const std::uint32_t* slot_end = s_.slot_end.data();
    for (std::uint32_t g = 0, b = 0, slots = static_cast<std::uint32_t>(s_.slot_end.size());
         g < slots; ++g) {
      const std::uint32_t e = slot_end[g];
      for (std::uint32_t i = b + 1; i < e; ++i)
        for (std::uint32_t j = b; j < i; ++j)
          if (stream[i] == stream[j] && s_.ops[i].lane == s_.ops[j].lane) {  // lanes past the
            // last wrap the stream's index: rule 1 reports them, this compares what they say
            if (!add(with_other(at(i, rule::slot, fault::same_stream), j))) return false;
            break;
          }
      b = e;
    }
    return true;
  }

  // Rules 2 and 3, dependencies: a same-rank producer sits in an earlier slot. The walk over
  // every op's producers also collects the waits of the stream program rule 4 runs.
  constexpr bool dependencies(const placed& p, program& prog) {
    bool more = true;
    // An op may need one producer for two reasons (a last chunk's backward needs its own
    // forward, which is also the loss); report the pair once.
    std::uint32_t last_op = npos, last_reported = npos;
    const auto misplaced = [&](std::uint32_t i, std::uint32_t j) {  // reported, not waited for
      if (!more || (i == last_op && j == last_reported)) return false;
      last_op = i;
      last_reported = j;
      const bool same = s_.slot_holding(j) == s_.slot_holding(i);
      more = add(with_other(at(i, same ? rule::slot : rule::order,
                               same ? fault::dependent_in_slot : fault::runs_before_producer),
                            j));
      return false;
    };
    const auto absent = [&](std::uint32_t i, std::uint32_t pid) {
      if (!more || !opt_.fragment) return;
      const op need = p.ix.op_of(pid);
      if (opt_.assumed.cover(need)) return;
      violation v = at(i, rule::order, fault::producer_missing);
      v.other = need;
      v.other_rank = s_.model.rank_of(need.chunk);
      more = add(v);
    };
    place_and_wait(p, prog, misplaced, absent);
    return more;
  }

  // Rule 4: pair transfers FIFO per channel, then run the stream program under the one
  // semantics (semantics.hpp) with no time; an op that can never start is on a cycle of the
  // happens-before graph.
  constexpr bool deadlock_free(placed& p, program& prog) {
    const auto n = static_cast<std::uint32_t>(s_.ops.size());
    paged<std::uint32_t> partner;  // none unless there are transfers or block pairs
    if (p.explicit_p2p) {
      partner.assign(n, npos);
      const transfer_fault f = match_transfers(p, partner);
      if (f.what != fault::none) {
        violation v = at(f.subject, rule::deadlock, f.what);
        if (f.other != npos) v = with_other(v, f.other);
        add(v);
        return false;
      }
    }
    settle_program(p, prog, static_cast<paged<std::uint32_t>&&>(partner), false);
    if (runs_to_completion(prog, s_)) return placeable();
    // A deadlock: run the whole program again through the semantics' events, whose state names
    // what each stuck rank waits for.
    add_queues(prog, s_);
    const semantics g(prog, s_);
    readiness<> st(g);
    struct walk : readiness_events {
      buffer<std::uint32_t> ready_units;
      constexpr void ready(std::uint32_t u) { ready_units.push_back(u); }
    } ev;
    ev.ready_units.reserve(n);
    st.begin(ev);
    buffer<std::uint8_t> done(n, 0);
    std::uint32_t finished = 0;
    while (!ev.ready_units.empty()) {
      const std::uint32_t u = ev.ready_units.back();
      ev.ready_units.pop_back();
      g.each_member(u, [&](std::uint32_t x) { done[x] = 1; });
      finished += g.member_count(u);
      st.complete_unit(u, ev);
    }
    if (finished == n) return true;

    // Name the op every stuck rank waits at, and what it waits for.
    for (const std::uint32_t first : stuck_ops(g, done)) {
      if (first == npos) continue;
      violation v = at(first, rule::deadlock, fault::cycle);
      if (const std::uint32_t w = waiting_for(st, done, first); w != npos) v = with_other(v, w);
      out_.blocked.push_back(v);
    }
    add(out_.blocked.front());
    return false;
  }

  // A schedule that lowering gives transfers runs as PyTorch's placement lowers it, whose
  // ranks issue their slots in order, a slot once its receives are posted (transfers.hpp): where
  // that walk stops, the lowered program cannot be built, though the streams alone would run
  // (one of a rank's streams running ahead of another). A fragment has no whole walk.
  constexpr bool placeable() {
    if (opt_.fragment || !adds_transfers(s_)) return true;
    const transfer_lowering L(s_, {});
    const placement_stop stop = walk_when_sent(
        L, [](std::size_t, std::uint32_t) {}, [](std::size_t, const op&) {});
    if (stop.rank < 0) return true;
    violation v = at(stop.index, rule::deadlock, fault::cycle);
    v.value = 1;  // in the lowering's issue order
    v.other_rank = stop.peer_rank;
    if (stop.peer_slot < s_.end_slot(stop.peer_rank)) {
      v.other = s_.ops[s_.first_op(stop.peer_slot)];
      v.other_slot = static_cast<int>(stop.peer_slot - s_.first_slot(stop.peer_rank));
    }
    out_.blocked.push_back(v);
    add(v);
    return false;
  }

  // Rule 5: live activations stay under the bound.
  constexpr void memory_bound() {
    bool reported = false;
    walk_live(
        s_, [](int) { return 1; },
        [&](int, std::uint32_t i, int live) {
          if (reported || live <= s_.model.max_live) return;
          violation v = at(i, rule::memory, fault::over_bound);
          v.value = live;
          v.bound = s_.model.max_live;
          add(v);
          reported = true;
        });
  }
};

}  // namespace detail

namespace detail {
/// `check` at run time: this file's checker in header-only builds; with
/// WEFT_SEPARATE_COMPILATION compiled once into `weft::compiled`, so that a file which checks or
/// verifies at run time does not compile the checker again (docs/benchmarks.md).
WEFT_DECL report check_at_run_time(const schedule& s, const check_options& opt);
}  // namespace detail

/// Every violation of rules 1-5 (up to `max_violations`), for schedules built from data.
constexpr report check(const schedule& s, const check_options& opt = {}) {
  if (std::is_constant_evaluated()) return detail::checker(s, opt).run();
  return detail::check_at_run_time(s, opt);
}

/// The first violation, as a structural value (empty when the schedule is legal). Takes the
/// schedule by value: clang does not run the destructor of a temporary bound to a reference
/// inside a template argument, which would report its buffers as leaked.
constexpr violation diagnose(schedule s) {
  report r = check(s, {.max_violations = 1});
  if (r.ok()) return violation{};
  violation v = r.violations.front();
  // Ops missing while scheduled ops need ops the schedule lacks: part of a step, most likely,
  // proven as a whole one. Say so, naming a missing producer and the scheduled op that needs it.
  if (v.what == fault::missing) {
    const report part = check(s, {.fragment = true, .max_violations = 1});
    if (!part.ok() && part.violations.front().what == fault::producer_missing) {
      const violation& f = part.violations.front();
      v.value = 1;
      v.subject = f.other;
      v.rank = s.model.rank_of(f.other.chunk);
      v.other = f.subject;
      v.other_rank = f.rank;
      v.other_slot = f.slot;
    }
  }
  return v;
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

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/schedule/impl/verify.ipp>
#endif
