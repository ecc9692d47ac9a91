// The pipeline generators at run time: legal up to 64 ranks x 256 micro-batches, each op once,
// the published peak memory, and clear errors for impossible parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/registry.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/verify.hpp>

using namespace weft;

namespace {

// Block-level ops a complete schedule holds: one forward and one backward per (mb, chunk), the
// backward fused (1 op) or split (2 ops).
std::size_t compute_ops(const schedule& s, phase ph) {
  return static_cast<std::size_t>(
      std::count_if(s.ops.begin(), s.ops.end(), [&](const op& o) { return o.ph == ph; }));
}

void check_complete(const schedule& s, int units) {
  CHECK(compute_ops(s, phase::F) == static_cast<std::size_t>(units));
  CHECK(compute_ops(s, phase::B) + compute_ops(s, phase::dX) == static_cast<std::size_t>(units));
  CHECK(compute_ops(s, phase::dW) == compute_ops(s, phase::dX));
}

int max_peak(const schedule& s) {
  const auto peak = peak_live_activations(s);
  return *std::max_element(peak.begin(), peak.end());
}

std::string message_of(auto&& make) {
  try {
    make();
  } catch (const config_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every generator is legal and complete, up to 64 ranks x 256 micro-batches") {
  for (int P : {2, 3, 4, 8, 16, 64})
    for (int M : {P, 2 * P, 4 * P, 256}) {
      CAPTURE(P);
      CAPTURE(M);
      const pipeline_params p{.ranks = P, .micro = M};
      for (const schedule& s : {gpipe(p), one_f_one_b(p), zb_h1(p)}) {
        CHECK(verify(s));
        check_complete(s, P * M);
      }
      // PyTorch's rounds: any micro that splits into max(1, M / P) rounds of equal size.
      if (M % std::max(1, M / P) == 0)
        for (int V : {1, 2, 4}) {
          if (P * V > 255) continue;
          CAPTURE(V);
          const schedule s = interleaved({.ranks = P, .micro = M, .chunks = V});
          CHECK(verify(s));
          check_complete(s, P * M * V);
          CHECK(verify(interleaved({.ranks = P, .micro = M, .chunks = V, .extra_warmup = true})));
        }
      if (M >= 2 * P) {
        const schedule z = zb_v(p);
        CHECK(verify(z));
        check_complete(z, 2 * P * M);
        const schedule v = dualpipev(p);
        CHECK(verify(v));
        check_complete(v, 2 * P * M);
        if (P % 2 == 0 && M % 2 == 0) {
          const schedule d = dualpipe(p);
          CHECK(verify(d));
          check_complete(d, P * M);  // each micro-batch passes one direction's P chunks
        }
      }
    }
}

TEST_CASE("peak live activations match the published figures") {
  for (int P : {2, 4, 6, 8})
    for (int M : {2 * P, 3 * P, 4 * P}) {
      CAPTURE(P);
      CAPTURE(M);
      const pipeline_params p{.ranks = P, .micro = M};
      const auto one_f = peak_live_activations(one_f_one_b(p));
      for (int r = 0; r < P; ++r) CHECK(one_f[static_cast<std::size_t>(r)] == P - r);
      CHECK(max_peak(gpipe(p)) == M);
      for (const int live : peak_live_activations(zb_h1(p))) CHECK(live == P);  // 1F1B's peak
      // DualPipe: PP + 1 micro-batches of a stage on every rank.
      for (const int live : peak_live_activations(dualpipe(p))) CHECK(live == P + 1);
      // DualPipeV: its chunks are half a rank's layers: 2 PP + 1 of them, within PP + 1 stages.
      for (const int live : peak_live_activations(dualpipev(p))) CHECK(live == 2 * P + 1);
      // ZB-V: 2 PP chunks of half a rank's layers, the PP stages of 1F1B's first rank.
      for (const int live : peak_live_activations(zb_v(p))) CHECK(live == 2 * P);
      // Megatron VPP: rank r keeps its warm-up plus one, 2 (P - r - 1) + (V - 1) P + 1.
      const auto vpp = peak_live_activations(interleaved({.ranks = P, .micro = M, .chunks = 2}));
      for (int r = 0; r < P; ++r)
        CHECK(vpp[static_cast<std::size_t>(r)] == 2 * (P - r - 1) + P + 1);
    }
}

TEST_CASE("the MoE variant of VPP warms up with one more micro-batch") {
  const schedule base = interleaved({.ranks = 4, .micro = 8, .chunks = 2});
  const schedule moe = interleaved({.ranks = 4, .micro = 8, .chunks = 2, .extra_warmup = true});
  for (int r = 0; r < 4; ++r) {
    const auto warmup = [r](const schedule& s) {
      int n = 0;
      for (const op& o : s.rank_ops(r)) {
        if (o.ph != phase::F) break;
        ++n;
      }
      return n;
    };
    CHECK(warmup(moe) == warmup(base) + 1);
  }
}

TEST_CASE("generators expand to MoE sub-stages and explicit transfers") {
  const pipeline_params p{
      .ranks = 4, .micro = 8, .layers = 2, .stages = stage_set::moe(), .transfers = true};
  CHECK(check(gpipe(p)).ok());
  CHECK(check(one_f_one_b(p)).ok());
  CHECK(check(zb_h1(p)).ok());
  CHECK(check(dualpipev(p)).ok());
  CHECK(check(zb_v(p)).ok());
  CHECK(check(dualpipe(p)).ok());
  CHECK(check(interleaved({.ranks = 4,
                           .micro = 8,
                           .chunks = 2,
                           .layers = 2,
                           .stages = stage_set::moe(),
                           .transfers = true}))
            .ok());
  // A split backward runs dispatch and combine whole in its dX chain; dW only has weights.
  const schedule z = zb_h1({.ranks = 2, .micro = 4, .stages = stage_set::moe()});
  for (const op& o : z.ops)
    if (o.ph == phase::dX || o.ph == phase::dW) CHECK(has_weights(o.k));
}

namespace {

// Of the all-to-all ops (dispatch, combine), how many share their slot with a compute op?
std::pair<int, int> hidden_all_to_all(const schedule& s) {
  int hidden = 0, total = 0;
  for (int r = 0; r < s.ranks(); ++r)
    for (int i = 0; i < s.slots(r); ++i) {
      const auto slot = s.slot(r, i);
      bool compute = false;
      for (const op& o : slot) compute = compute || stream_of(o.k) == stream_class::compute;
      for (const op& o : slot)
        if (o.k == kind::dispatch || o.k == kind::combine) {
          ++total;
          hidden += compute ? 1 : 0;
        }
    }
  return {hidden, total};
}

}  // namespace

TEST_CASE("MoE fb-overlap: every combination of options is legal for every generator") {
  for (const stage_set st : {stage_set::moe(), stage_set::moe_with_shared()})
    for (int bits = 0; bits < 8; ++bits)
      for (const bool transfers : {false, true}) {
        const overlap_options o{.pair_forward_backward = (bits & 1) != 0,
                                .split_dw = (bits & 2) != 0,
                                .self_overlap = (bits & 4) != 0};
        CAPTURE(bits);
        CAPTURE(transfers);
        const pipeline_params p{.ranks = 4,
                                .micro = 8,
                                .layers = 2,
                                .stages = st,
                                .transfers = transfers,
                                .overlap = o};
        for (const schedule& s :
             {gpipe(p), one_f_one_b(p), zb_h1(p), zb_v(p), dualpipev(p), dualpipe(p)})
          CHECK(check(s).ok());
        CHECK(check(interleaved({.ranks = 4,
                                 .micro = 8,
                                 .chunks = 2,
                                 .layers = 2,
                                 .stages = st,
                                 .transfers = transfers,
                                 .overlap = o,
                                 .extra_warmup = true}))
                  .ok());
      }
}

TEST_CASE("MoE fb-overlap: DeepSeek's pairs hide every all-to-all of the steady phase") {
  const pipeline_params base{.ranks = 4, .micro = 16, .stages = stage_set::moe_with_shared()};
  pipeline_params paired = base;
  paired.overlap = {.pair_forward_backward = true, .split_dw = true, .self_overlap = false};
  pipeline_params full = base;
  full.overlap = overlap_options::all();

  const auto [none_hidden, total] = hidden_all_to_all(dualpipev(base));
  CHECK(none_hidden == 0);  // the baseline issues one op per slot
  const auto [pair_hidden, pair_total] = hidden_all_to_all(dualpipev(paired));
  const auto [full_hidden, full_total] = hidden_all_to_all(dualpipev(full));
  CHECK(pair_total == total);
  CHECK(full_total == total);
  CHECK(pair_hidden > 0);
  CHECK(full_hidden > pair_hidden);

  // Inside a pair, every dispatch and combine has a compute partner.
  const schedule s = dualpipev(paired);
  for (int r = 0; r < s.ranks(); ++r)
    for (int i = 0; i < s.slots(r); ++i) {
      const auto slot = s.slot(r, i);
      bool forward = false, backward = false, compute = false;
      for (const op& o : slot) {
        forward = forward || o.ph == phase::F;
        backward = backward || o.ph != phase::F;
        compute = compute || stream_of(o.k) == stream_class::compute;
      }
      if (forward && backward)
        for (const op& o : slot)
          if (o.k == kind::dispatch || o.k == kind::combine) CHECK(compute);
    }
}

TEST_CASE("MoE fb-overlap: the pair of one layer, as MindSpeed's fb-overlap note draws it") {
  const pipeline_params p{
      .ranks = 2,
      .micro = 4,
      .stages = stage_set::moe(),
      .overlap = {.pair_forward_backward = true, .split_dw = false, .self_overlap = false}};
  const schedule s = dualpipev(p);
  // Find the first slot holding attn/F with combine/B: the next three are the rest of the pair.
  for (int r = 0; r < s.ranks(); ++r)
    for (int i = 0; i + 3 < s.slots(r); ++i) {
      const auto a = s.slot(r, i);
      if (a.size() != 2 || a[0].k != kind::attn || a[1].k != kind::combine) continue;
      const auto kinds = [&](int k) {
        const auto x = s.slot(r, i + k);
        return std::pair{x[0].k, x[1].k};
      };
      CHECK(kinds(1) == std::pair{kind::mlp, kind::dispatch});  // mlp-B hides dispatch-F
      CHECK(kinds(2) == std::pair{kind::mlp, kind::dispatch});  // mlp-F hides dispatch-B
      CHECK(kinds(3) == std::pair{kind::attn, kind::combine});  // attn-B hides combine-F
      CHECK(s.slot(r, i + 1)[0].ph == phase::B);
      CHECK(s.slot(r, i + 2)[0].ph == phase::F);
      return;
    }
  FAIL("no pair found");
}

namespace {
std::string to_csv(const schedule& s) {
  std::ostringstream out;
  write_pytorch_csv(out, s);
  return out.str();
}
}  // namespace

TEST_CASE("interleaved with micro-batches not a multiple of ranks, in PyTorch's order") {
  // ScheduleInterleaved1F1B, 2 ranks, 2 stages each, 3 micro-batches: one round of 3. Derived by
  // hand from its rules: rank r warms up with (V-1)*3 + 2*(P-1-r) forwards (5 and 3), forward
  // step k runs local stage (k / 3) % 2, backward step j local stage 1 - (j / 3) % 2, micro-batch
  // numbers counting up per stage.
  CHECK(to_csv(interleaved({.ranks = 2, .micro = 3, .chunks = 2})) ==
        "0F0,0F1,0F2,2F0,2F1,2F2,2B0,2B1,2B2,0B0,0B1,0B2\n"
        "1F0,1F1,1F2,3F0,3B0,3F1,3B1,3F2,3B2,1B0,1B1,1B2\n");
  // PyTorch's own example: 4 ranks, 10 micro-batches (2 rounds of 5); legal, complete.
  const schedule s = interleaved({.ranks = 4, .micro = 10, .chunks = 2});
  CHECK(verify(s));
  check_complete(s, 4 * 10 * 2);
  // Rank 3 warms up with (2-1)*5 + 0 forwards: stage 3 for micro-batches 0-4, then stage 7.
  CHECK(to_csv(s).find("3F0,3F1,3F2,3F3,3F4,7F0,7B0,") != std::string::npos);
}

TEST_CASE("generators reject impossible parameters, naming the rule") {
  CHECK(message_of([] { gpipe({.ranks = 0}); }) == "weft: gpipe: ranks must be in [1, 255]");
  CHECK(message_of([] { one_f_one_b({.ranks = 2, .micro = 0}); }) ==
        "weft: 1f1b: micro must be in [1, 65535]");
  CHECK(message_of([] { zb_h1({.ranks = 2, .layers = 0}); }) ==
        "weft: zb-h1: layers must be in [1, 65535]");
  // 6 micro-batches on 4 ranks make one round of 6... which PyTorch accepts; 7 on 3 make 2
  // rounds that do not split it.
  CHECK(message_of([] {
          interleaved({.ranks = 3, .micro = 7, .chunks = 2});
        }).find("weft: interleaved: micro must be a multiple of the rounds") == 0);
  CHECK(message_of([] { interleaved({.ranks = 4, .micro = 8, .chunks = 0}); }) ==
        "weft: interleaved: chunks (per rank) must be >= 1");
  CHECK(message_of([] { interleaved({.ranks = 128, .micro = 128, .chunks = 2}); }) ==
        "weft: interleaved: at most 255 model chunks (ranks x chunks per rank)");
  // Found by fuzzing: ranks x chunks computed in int overflowed (2 x 2^31-1) before the check.
  CHECK(message_of([] {
          interleaved({.ranks = 2, .micro = 2, .chunks = std::numeric_limits<int>::max()});
        }) == "weft: interleaved: at most 255 model chunks (ranks x chunks per rank)");
  CHECK(validate(model_desc{.ranks = 255, .chunks_per_rank = std::numeric_limits<int>::max()}) ==
        model_error::bad_chunks);
  CHECK(message_of([] { dualpipev({.ranks = 4, .micro = 7}); }) ==
        "weft: dualpipev: micro must be >= 2 * ranks");
  CHECK(message_of([] { zb_v({.ranks = 4, .micro = 7}); }) ==
        "weft: zb-v: micro must be >= 2 * ranks");
  CHECK(message_of([] { dualpipe({.ranks = 3, .micro = 12}); }) ==
        "weft: dualpipe: ranks must be even");
  CHECK(message_of([] { dualpipe({.ranks = 4, .micro = 9}); }) ==
        "weft: dualpipe: micro must be even (half for each direction)");
  CHECK(message_of([] { dualpipe({.ranks = 4, .micro = 6}); }) ==
        "weft: dualpipe: micro must be >= 2 * ranks");
  CHECK(message_of([] { gpipe({.ranks = 2, .stages = stage_set{}}); }) ==
        "weft: gpipe: a layer needs at least one stage kind");
}

TEST_CASE("overlap options: {} is the baseline, all() turns every part on") {
  static_assert(overlap_options{} == overlap_options::none());
  constexpr overlap_options all = overlap_options::all();
  static_assert(all.pair_forward_backward && all.split_dw && all.self_overlap);
  CHECK(dualpipev({.ranks = 2, .micro = 4, .stages = stage_set::moe(), .overlap = {}}).ops ==
        dualpipev({.ranks = 2, .micro = 4, .stages = stage_set::moe()}).ops);
}

TEST_CASE("the registry: every generator makes the pipeline its row says") {
  generator_args a;
  a.ranks = 4;
  a.micro = 8;
  a.chunks = 3;
  for (const generator_info& g : generators) {
    CAPTURE(g.name);
    const schedule s = generate(g.name, a);
    CHECK(find_generator(g.name) == &g);
    CHECK(s.model.place == g.place);
    CHECK(s.model.bidirectional == g.bidirectional);
    CHECK(s.model.chunks_per_rank == (g.chunks_per_rank == 0 ? a.chunks : g.chunks_per_rank));
    const bool splits =
        std::any_of(s.ops.begin(), s.ops.end(), [](const op& o) { return o.ph == phase::dX; });
    CHECK(splits == g.splits_backward);
    CHECK(check(s).ok());
    if (g.has_extra_warmup) {  // the variant differs (one more warm-up forward)
      generator_args b = a;
      b.extra_warmup = true;
      CHECK_FALSE(generate(g.name, b).ops == s.ops);
    }
  }
  CHECK(find_generator("1F1B") == nullptr);
  // docs/schedules.md's table has a row per generator, with the registry's summary.
  std::ifstream doc(WEFT_DOCS_DIR "/schedules.md");
  REQUIRE(doc);
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  for (const generator_info& g : generators)
    CHECK_MESSAGE(text.find("| `" + std::string(g.name) + "` | " + std::string(g.summary) + " |") !=
                      std::string::npos,
                  "docs/schedules.md has no row for ", g.name);
  // An unknown name is refused, naming the known ones (the tool once fell through to the
  // interleaved schedule).
  try {
    (void)generate("pipedream", a);
    FAIL("an unknown generator was accepted");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()).find("no generator named 'pipedream'") != std::string::npos);
    CHECK(std::string(e.what()).find("dualpipev") != std::string::npos);
  }
}

TEST_CASE("V-Half and V-Min take any number of micro-batches on any number of ranks") {
  // sail-sg's zbv_greedy.py builds them for any M >= 1; each result must be legal.
  for (const char* name : {"v-half", "v-min"})
    for (int P = 1; P <= 7; ++P)
      for (int M = 1; M <= 3 * P; ++M) {
        CAPTURE(name);
        CAPTURE(P);
        CAPTURE(M);
        generator_args a;
        a.ranks = P;
        a.micro = M;
        CHECK(check(generate(name, a)).ok());
      }
}

namespace {
// A digest of a schedule: every op in order, its slots and its ranks (FNV-1a).
constexpr std::uint64_t digest(const schedule& s) {
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const op& o : s.ops)
    for (const std::uint64_t v :
         {std::uint64_t(o.k), std::uint64_t(o.ph), std::uint64_t(o.mb), std::uint64_t(o.chunk),
          std::uint64_t(o.layer), std::uint64_t(o.split), std::uint64_t(o.lane)})
      mix(v);
  for (const std::uint32_t e : s.slot_end) mix(e);
  for (const std::uint32_t r : s.rank_begin) mix(r + (std::uint64_t{1} << 40));
  return h;
}

constexpr generator_args digest_args{{.ranks = 2, .micro = 4, .stages = stage_set::moe()}};

// Every generator's schedule built in constant evaluation, where the generators run their
// constexpr bodies.
constexpr auto compile_time_digests = [] {
  std::array<std::uint64_t, std::size(generators)> d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = digest(generators[i].make(digest_args));
  return d;
}();
}  // namespace

TEST_CASE("each generator at run time makes what its constexpr body makes at compile time") {
  // At run time the generators call their run-time copies (compiled into weft::compiled with
  // WEFT_SEPARATE_COMPILATION): the same schedule, op for op.
  for (std::size_t i = 0; i < std::size(generators); ++i) {
    CAPTURE(generators[i].name);
    CHECK(digest(generators[i].make(digest_args)) == compile_time_digests[i]);
  }
}
