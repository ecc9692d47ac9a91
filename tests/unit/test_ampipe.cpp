// AMPipe (MindSpeed's ampipe note): a MoE layer split along the sequence gives the whole layer's
// output and gradients for any degree and mask; routing capacity per chunk is the one thing
// chunking changes; the split pipeline is a schedule the checker proves and the executor runs
// exactly.
#include <doctest/doctest.h>

#include <limits>

#include <random>
#include <string>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/exec/seeded.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/registry.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/ampipe_preset.hpp>
#include <weft/sim/simulate.hpp>
#include "scenario_presets.hpp"

using namespace weft;
using namespace weft::exec;

namespace {

template <class T>
double rel_err(const nn::matrix<T>& got, const nn::matrix<T>& want) {
  const double scale = static_cast<double>(want.norm());
  return static_cast<double>((got - want).norm()) / (scale > 0 ? scale : 1.0);
}

/// A layer of the MoE model with every gradient zeroed.
template <class T>
moe_layer<T> fresh_layer(std::uint64_t seed, double capacity = 0) {
  moe_model<T> model(
      {.stages = 1, .tokens = 12, .width = 8, .capacity_factor = capacity, .seed = seed});
  moe_layer<T> layer = model.stages[0][0];
  layer.each_param([](nn::param<T>& p) { p.zero_grad(); });
  return layer;
}

/// A mask that is neither causal nor full: random, with one query row that sees nothing.
nn::attention_mask general_mask(Eigen::Index s) {
  std::mt19937 gen(3);
  nn::attention_mask m(s, s);
  for (Eigen::Index i = 0; i < s; ++i)
    for (Eigen::Index j = 0; j < s; ++j) m(i, j) = (gen() % 3) != 0;
  for (Eigen::Index j = 0; j < s; ++j) m(s / 2, j) = false;
  return m;
}

template <class T>
struct layer_result {
  nn::matrix<T> y, dx;
  std::vector<nn::matrix<T>> grads;
};

/// Forward and backward of one layer, whole (degree 1) or in `degree` chunks.
template <class T>
layer_result<T> run_layer(int degree, const nn::attention_mask& mask, double capacity = 0) {
  moe_layer<T> layer = fresh_layer<T>(11, capacity);
  seeded_normal<T> random(5);
  const nn::matrix<T> x = random(12, 8, 1.0), dy = random(12, 8, 1.0);
  layer_result<T> r;
  if (degree == 1) {
    typename moe_layer<T>::context c;
    r.y = layer.forward(x, mask, c);
    r.dx = layer.backward_dx(dy, c);
    layer.backward_dw(c);
  } else {
    std::vector<typename moe_layer<T>::context> cs(static_cast<std::size_t>(degree));
    r.y = layer.forward_chunked(x, mask, cs);
    r.dx = layer.backward_dx_chunked(dy, cs);
    layer.backward_dw_chunked(cs);
  }
  layer.each_param([&](nn::param<T>& p) { r.grads.push_back(p.grad); });
  return r;
}

template <class T>
double worst_gap(const layer_result<T>& a, const layer_result<T>& b) {
  double worst = std::max(rel_err(a.y, b.y), rel_err(a.dx, b.dx));
  for (std::size_t i = 0; i < a.grads.size(); ++i)
    worst = std::max(worst, rel_err(a.grads[i], b.grads[i]));
  return worst;
}

}  // namespace

TEST_CASE("a layer in D chunks equals the whole layer: output, input and weight gradients") {
  for (const bool causal : {true, false}) {
    const nn::attention_mask mask = causal ? nn::causal_mask(12) : general_mask(12);
    const auto whole = run_layer<double>(1, mask);
    const auto whole_f = run_layer<float>(1, mask);
    for (const int D : {2, 3, 4, 6, 12}) {
      CAPTURE(causal);
      CAPTURE(D);
      CHECK(worst_gap(run_layer<double>(D, mask), whole) < 1e-12);
      CHECK(worst_gap(run_layer<float>(D, mask), whole_f) < 1e-5);
    }
  }
}

TEST_CASE("a chunk's queries see every key: dropping the other chunks' keys would differ") {
  // The second half of a causal sequence attends to the first: its attention output depends on
  // the first half's tokens, which the chunked layer must therefore read in full.
  moe_layer<double> layer = fresh_layer<double>(11);
  seeded_normal<double> random(5);
  nn::matrix<double> x = random(12, 8, 1.0);
  const nn::attention_mask mask = nn::causal_mask(12);
  typename moe_layer<double>::context c;
  layer.attn_forward(x, mask, c, 6, 6);
  const nn::matrix<double> h = c.h;
  x.row(0) = random(1, 8, 1.0);  // a token of the first chunk (not a multiple: norms rescale)
  layer.attn_forward(x, mask, c, 6, 6);
  CHECK(rel_err(c.h, h) > 1e-3);
  CHECK_THROWS_AS(layer.attn_forward(x, mask, c, 8, 6), weft::config_error);
}

TEST_CASE("capacity: per routing call, first choices first, so chunking changes what is dropped") {
  // Four tokens that all prefer expert 0, then expert 1 (width 1, positive inputs).
  nn::router<double> r;
  r.w = nn::param<double>(nn::matrix<double>{{4.0, 2.0, 0.0, -2.0}});
  r.k = 2;
  r.capacity_factor = 1;
  nn::matrix<double> x(4, 1);
  x << 1, 1, 1, 1;
  typename nn::router<double>::context c;
  // Whole sequence: C = ceil(4 * 2 / 4 * 1) = 2 per expert; tokens 0 and 1 reach expert 0 and
  // expert 1, tokens 2 and 3 reach neither.
  CHECK(r.capacity(4) == 2);
  auto whole = r.forward(x, c);
  CHECK(whole.kept == std::vector<unsigned char>{1, 1, 1, 1, 0, 0, 0, 0});
  // Two chunks of two tokens: C = 1 per chunk, so tokens 0 and 2 are kept, 1 and 3 dropped.
  CHECK(r.capacity(2) == 1);
  auto first = r.forward(x.topRows(2), c);
  auto second = r.forward(x.bottomRows(2), c);
  CHECK(first.kept == std::vector<unsigned char>{1, 1, 0, 0});
  CHECK(second.kept == std::vector<unsigned char>{1, 1, 0, 0});
  // Second choices queue behind every first choice: with C = 3 the third token's second choice
  // (expert 1) is kept, the fourth token's first choice (expert 0) is not.
  r.capacity_factor = 1.5;
  CHECK(r.capacity(4) == 3);
  CHECK(r.forward(x, c).kept == std::vector<unsigned char>{1, 1, 1, 1, 1, 1, 0, 0});
  r.min_capacity = 4;
  CHECK(r.capacity(4) == 4);
  r.capacity_factor = 0;  // dropless
  CHECK(r.capacity(4) == 8);
}

TEST_CASE("with a capacity the chunked layer routes per chunk; dropless it equals the whole") {
  const nn::attention_mask mask = nn::causal_mask(12);
  CHECK(worst_gap(run_layer<double>(1, mask, 1.0), run_layer<double>(1, mask)) > 1e-3);
  CHECK(worst_gap(run_layer<double>(2, mask, 1.0), run_layer<double>(1, mask, 1.0)) > 1e-3);
}

namespace {

std::vector<std::string> layer_order(const schedule& s, int rank) {
  std::vector<std::string> out;
  for (int k = 0; k < s.slots(rank); ++k) {
    std::string slot;
    for (const op& o : s.slot(rank, k)) {
      if (o.mb != 0 || o.layer != 0) return out;
      if (!slot.empty()) slot += '|';
      slot.append(name_of(o.k)).append(name_of(o.ph)).append(std::to_string(o.split));
    }
    out.push_back(slot);
  }
  return out;
}

}  // namespace

TEST_CASE("the AMPipe note's order: dispatch(s) beside attention(s+1), combine(s) beside experts(s+1)") {
  const pipeline_params p{.ranks = 1,
                          .micro = 1,
                          .stages = stage_set::moe(),
                          .overlap = {.pipeline_splits = true},
                          .splits = 3};
  const schedule s = one_f_one_b(p);
  CHECK(layer_order(s, 0) ==
        std::vector<std::string>{"attnF0", "attnF1|dispatchF0", "attnF2|dispatchF1",
                                 "mlpF0|dispatchF2", "mlpF1|combineF0", "mlpF2|combineF1",
                                 "combineF2", "combineB2", "mlpB2|combineB1", "mlpB1|combineB0",
                                 "mlpB0|dispatchB2", "attnB2|dispatchB1", "attnB1|dispatchB0",
                                 "attnB0"});
  CHECK(check(s).ok());
}

namespace {

struct ampipe_case {
  std::string name;
  schedule s;
  int stages;
};

std::vector<ampipe_case> ampipe_schedules(int D, overlap_options o) {
  const pipeline_params p{.ranks = 2,
                          .micro = 4,
                          .layers = 2,
                          .stages = stage_set::moe_with_shared(),
                          .overlap = o,
                          .splits = D};
  return {{"1f1b", one_f_one_b(p), 2},
          {"dualpipev", dualpipev(p), 4},
          {"interleaved",
           interleaved({.ranks = 2,
                        .micro = 4,
                        .chunks = 2,
                        .layers = 2,
                        .stages = stage_set::moe_with_shared(),
                        .overlap = o,
                        .splits = D}),
           4}};
}

const overlap_options ampipe_only{.pipeline_splits = true};

/// Proves `c` legal, runs it on 2 x 2 in-process ranks (12 tokens, 2 layers, 4 micro-batches)
/// and compares loss and gradients with the unsplit serial reference.
template <class T>
void runs_exactly(const ampipe_case& c, double tolerance) {
  REQUIRE(check(c.s).ok());
  moe_model<T> model(
      {.stages = c.stages, .layers = 2, .tokens = 12, .micro = 4, .replicas = 2, .seed = 5});
  moe_executor<T> ex(model);
  const run_result<T> run = ex.run(c.s);
  const T loss = model.serial_step();
  CHECK(run.loss == doctest::Approx(loss).epsilon(tolerance));
  CHECK(max_grad_rel_err(run, model) < tolerance);
}

}  // namespace

TEST_CASE("AMPipe schedules (1F1B, DualPipeV, interleaved; D = 2, 3) are legal and run exactly") {
  for (const int D : {2, 3})
    for (const overlap_options o : {overlap_options::none(), ampipe_only, overlap_options::all()})
      for (const ampipe_case& c : ampipe_schedules(D, o)) {
        const std::string what = c.name + " D=" + std::to_string(D) +
                                 (o.pipeline_splits ? " pipelined" : "") +
                                 (o.pair_forward_backward ? " +fb-overlap" : "");
        CAPTURE(what);
        runs_exactly<float>(c, 1e-5);
      }
}

TEST_CASE("in fp64 an AMPipe run equals the unsplit serial reference to 1e-12") {
  for (const ampipe_case& c : ampipe_schedules(3, overlap_options::all())) {
    CAPTURE(c.name);
    runs_exactly<double>(c, 1e-12);
  }
}

TEST_CASE("with a capacity an AMPipe run routes per chunk: the chunked reference, not the whole") {
  const schedule s = one_f_one_b({.ranks = 2,
                                  .micro = 2,
                                  .stages = stage_set::moe_with_shared(),
                                  .overlap = ampipe_only,
                                  .splits = 2});
  moe_model<double> model(
      {.stages = 2, .tokens = 12, .micro = 2, .replicas = 2, .capacity_factor = 1.0, .seed = 5});
  moe_executor<double> ex(model);
  const run_result<double> run = ex.run(s);
  const double chunked = model.serial_step(2);
  CHECK(run.loss == doctest::Approx(chunked).epsilon(1e-12));
  CHECK(max_grad_rel_err(run, model) < 1e-12);
  const double whole = model.serial_step(1);
  CHECK(std::abs(run.loss - whole) > 1e-6 * std::abs(whole));
  CHECK(max_grad_rel_err(run, model) > 1e-3);
}

TEST_CASE("AMPipe configurations that cannot work are refused by name") {
  moe_model<float> model({.stages = 2, .tokens = 8, .micro = 2});
  moe_executor<float> ex(model);
  CHECK_THROWS_WITH_AS(
      ex.run(one_f_one_b(
          {.ranks = 2, .micro = 2, .stages = stage_set::moe_with_shared(), .splits = 3})),
      "weft: run: the AMPipe degree (splits = 3) must divide the tokens per "
      "micro-batch (8)",
      config_error);
  CHECK_THROWS_WITH_AS(model.serial_step(3),
                       "weft: moe model: the AMPipe degree (3) must divide the tokens per "
                       "micro-batch (8)",
                       config_error);
  CHECK_THROWS_WITH_AS(one_f_one_b({.ranks = 2, .micro = 2, .splits = 256}),
                       "weft: 1f1b: splits must be in [1, 255]", config_error);
  // A whole block cannot run on a piece of the sequence: once accepted and called legal, the
  // dense executor ran each split as the whole block (every weight gradient x splits).
  generator_args whole;
  whole.ranks = 2;
  whole.micro = 2;
  whole.splits = 2;
  for (const char* name : {"1f1b", "interleaved", "zb-v", "dualpipev"})
    CHECK_THROWS_WITH_AS(generate(name, whole),
                         ("weft: " + std::string(name) +
                          ": splits (AMPipe's pieces of the sequence) cut a layer's sub-stages "
                          "(attn, mlp, ...): a whole block does not split")
                             .c_str(),
                         config_error);
  whole.stages = stage_set::moe();
  CHECK(check(generate("1f1b", whole)).ok());
}

TEST_CASE("pipe-experts: pieces pipelined, combines on a second stream with multi-stream") {
  const pipeline_params p{.ranks = 1,
                          .micro = 1,
                          .stages = stage_set::moe(),
                          .overlap = {.multi_stream_all_to_all = true},
                          .pieces = 2};
  const schedule s = one_f_one_b(p);
  CHECK(layer_order(s, 0) == std::vector<std::string>{"attnF0", "dispatchF0", "mlpF0|dispatchF1",
                                                      "mlpF1|combineF0", "combineF1", "combineB1",
                                                      "mlpB1|combineB0", "mlpB0|dispatchB1",
                                                      "dispatchB0", "attnB0"});
  // The combines (forward) and the dispatches backward run on the second all-to-all lane.
  for (const op& o : s.ops)
    if ((o.k == kind::combine && o.ph == phase::F) || (o.k == kind::dispatch && o.ph == phase::B))
      CHECK(o.lane == second_all_to_all_lane);
  CHECK(check(s).ok());
}

TEST_CASE("AMPipe with pipe-experts (D = 1, 2; N = 2, 3; one or two streams) runs exactly") {
  struct cfg {
    int D, P;
    bool pipelined, multi;
  };
  for (const cfg k : {cfg{1, 2, false, true}, cfg{1, 3, false, false}, cfg{2, 2, true, true},
                      cfg{2, 3, true, false}, cfg{3, 2, false, true}}) {
    const overlap_options o{
        .self_overlap = true, .pipeline_splits = k.pipelined, .multi_stream_all_to_all = k.multi};
    const pipeline_params p{.ranks = 2,
                            .micro = 4,
                            .layers = 2,
                            .stages = stage_set::moe_with_shared(),
                            .overlap = o,
                            .splits = k.D,
                            .pieces = k.P};
    for (const ampipe_case& c :
         {ampipe_case{"1f1b", one_f_one_b(p), 2}, ampipe_case{"dualpipev", dualpipev(p), 4},
          ampipe_case{"zb-h1", zb_h1(p), 2}}) {
      const std::string what = c.name + " D=" + std::to_string(k.D) +
                               " N=" + std::to_string(k.D * k.P) + (k.multi ? " multi" : "");
      CAPTURE(what);
      runs_exactly<double>(c, 1e-12);
    }
  }
}

TEST_CASE("pipe-experts configurations that cannot work are refused by name") {
  CHECK_THROWS_WITH_AS(one_f_one_b({.ranks = 2,
                                    .micro = 2,
                                    .stages = stage_set::moe(),
                                    .overlap = overlap_options::all(),
                                    .pieces = 2}),
                       "weft: 1f1b: pipe-experts pieces do not combine with fb-overlap's "
                       "forward/backward pairing (overlap.pair_forward_backward)",
                       config_error);
  CHECK_THROWS_WITH_AS(one_f_one_b({.ranks = 2, .micro = 2, .pieces = 2}),
                       "weft: 1f1b: pieces (pipe-experts) cut the routed-expert path: the layer "
                       "needs dispatch, mlp and combine",
                       config_error);
  moe_model<float> model({.stages = 2, .tokens = 12, .micro = 2});
  moe_executor<float> ex(model);
  CHECK_THROWS_WITH_AS(ex.run(one_f_one_b({.ranks = 2,
                                           .micro = 2,
                                           .stages = stage_set::moe_with_shared(),
                                           .splits = 2,
                                           .pieces = 4})),
                       "weft: run: pipe-experts pieces (4) must divide the tokens of an AMPipe "
                       "chunk (6)",
                       config_error);
}

// ---- The AMPipe note's rules and the ampipe-16p scenario (simulation) ----

TEST_CASE("the AMPipe note's rules: divisibility, multi-stream with SP, when pipe-experts applies") {
  const auto refuses = [](ampipe_config c, const char* why) {
    CHECK_THROWS_WITH_AS(resolve(c), why, config_error);
  };
  refuses({.seq = 1000, .degree = 3},
          "weft: ampipe: the sequence length (1000) must be divisible by --ampipe-degree (3)");
  refuses({.seq = 1000, .cp = 2, .degree = 4},
          "weft: ampipe: with context parallelism the sequence length (1000) must be divisible "
          "by 2 x degree x cp (16)");
  refuses({.seq = 1000, .tp = 8, .sequence_parallel = true, .degree = 2},
          "weft: ampipe: with sequence parallelism the sequence length (1000) must be divisible "
          "by degree x tp (16)");
  refuses({.seq = 1024, .tp = 8, .pipe_experts = true, .multi_data = 2, .multi_stream = true},
          "weft: ampipe: --pipe-experts-multi-stream needs --sequence-parallel");
  refuses({.degree = 0}, "weft: ampipe: --ampipe-degree must be in [1, 255]");
  refuses({.local_experts = 16, .degree = 16, .tp_sp_overlap = true},
          "weft: ampipe: degree x pieces (256, with tp-sp overlap a piece per local expert) must "
          "be at most 255");
  // Pieces times local experts must not wrap into range: 2^30 experts x 4 pieces was 0 in int,
  // 2^31 - 1 experts with pipe-experts' 2 pieces -2 (both accepted).
  refuses({.local_experts = 1 << 30,
           .degree = 1,
           .tp_sp_overlap = true,
           .pipe_experts = true,
           .multi_data = 4},
          "weft: ampipe: degree x pieces (4294967296, with tp-sp overlap a piece per local "
          "expert) must be at most 255");
  refuses({.local_experts = std::numeric_limits<int>::max(),
           .degree = 2,
           .tp_sp_overlap = true,
           .pipe_experts = true,
           .multi_data = 4},
          "weft: ampipe: degree x pieces (8589934588, with tp-sp overlap a piece per local "
          "expert) must be at most 255");
  // MindSpeed takes only degree 2 with context parallelism; weft's chunks are exact for any.
  CHECK(resolve({.seq = 131072, .cp = 2, .degree = 4}).splits == 4);

  // Pipe-experts: N a multiple of D and N > D, or N >= D with multi-stream.
  const ampipe_layout four = resolve({.degree = 2, .pipe_experts = true, .multi_data = 4});
  CHECK(four.pipe_experts);
  CHECK(four.pieces == 2);
  CHECK_FALSE(four.overlap.multi_stream_all_to_all);
  const ampipe_layout equal = resolve({.degree = 2, .pipe_experts = true, .multi_data = 2});
  CHECK_FALSE(equal.pipe_experts);
  CHECK(equal.pieces == 1);
  CHECK(equal.warning.find("pipe-experts is not applied") != std::string::npos);
  const ampipe_layout streams =
      resolve({.degree = 2, .pipe_experts = true, .multi_data = 2, .multi_stream = true});
  CHECK(streams.pipe_experts);
  CHECK(streams.pieces == 1);
  CHECK(streams.overlap.multi_stream_all_to_all);
  CHECK_FALSE(resolve({.degree = 2, .pipe_experts = true, .multi_data = 3}).pipe_experts);
  // MindSpeed's precedence slip turned pipe-experts on for N > D without --use-pipe-experts.
  CHECK(resolve({.degree = 2, .multi_data = 4}).pieces == 1);
  // tp-sp overlap: the all-to-alls per chunk and local expert.
  CHECK(resolve({.local_experts = 2, .degree = 2, .tp_sp_overlap = true}).pieces == 2);
  CHECK(resolve({.local_experts = 2,
                 .degree = 2,
                 .tp_sp_overlap = true,
                 .pipe_experts = true,
                 .multi_data = 4,
                 .multi_stream = true})
            .pieces == 4);
}

TEST_CASE("a split op costs its share: causal attention by its keys, latencies whole") {
  cost_model c;
  c.set(kind::attn, phase::F, seconds(10)).set(kind::dispatch, phase::F, seconds(4));
  c.causal_share = 0.5;
  c.fixed[static_cast<int>(kind::dispatch)][static_cast<int>(phase::F)] = seconds(1);
  const model_desc m{.stages = stage_set::moe(), .splits = 2, .pieces = 2};
  // Half the attention is causal: split 0 sees a quarter of the key-query pairs, split 1 three.
  CHECK(c.of(attn(F, split{0}), m).count() == doctest::Approx(10 * (0.25 + 0.25 * 0.5)));
  CHECK(c.of(attn(F, split{1}), m).count() == doctest::Approx(10 * (0.25 + 0.25 * 1.5)));
  // A piece is a quarter of the all-to-all's bytes; its latency is whole.
  CHECK(c.of(dispatch(F, split{3}), m).count() == doctest::Approx(3.0 / 4 + 1));
  CHECK(c.of(dispatch(F), model_desc{.stages = stage_set::moe()}).count() == 4);
}

TEST_CASE("ampipe-16p: the layer's work from the note's shapes; the baseline is all serial") {
  const moe_mesh_facts f = testing::ampipe_16p();
  const moe_mesh_layer l = layer_costs(f);
  // Per device: a CP slice of 65536 tokens, TP 8. QKV and projection 4 h^2 (+ router h x 4);
  // causal scores 2 S^2 h / (cp tp); experts: 2 choices x 4 h x 4h per token.
  CHECK(l.attention_flops == doctest::Approx(9.896409956352e12));
  CHECK(l.causal_flops == doctest::Approx(2.6388279066624e13));
  CHECK(l.expert_flops == doctest::Approx(3.9582418599936e13));
  // One all-to-all: 8192 tokens x 2 choices x 12288 x 2 bytes, half to the other machine at
  // 25 GB/s (plus 10 us).
  CHECK(l.all_to_all.count() == doctest::Approx(8192.0 * 2 * 12288 * 2 / 2 / 25e9 + 10e-6));

  // Degree 1 without pipe-experts on one rank: nothing overlaps, the step is the sum of the
  // ops' costs (each layer's four sub-stages forward and backward).
  const cost_model c = ampipe_cost_model(f);
  double sum = 0;
  for (const kind k : {kind::attn, kind::dispatch, kind::mlp, kind::combine})
    for (const phase ph : {phase::F, phase::B}) sum += c.of(k, ph).count();
  const timeline base = simulate(lower(ampipe_schedule(f, {})), c);
  CHECK(base.makespan.count() == doctest::Approx(2 * sum));

  // Every option hides some of it; AMPipe with tp-sp overlap more than pipe-experts alone.
  const auto step = [&](ampipe_config s) {
    return simulate(lower(ampipe_schedule(f, s)), c).makespan.count();
  };
  const double pipe_experts = step({.pipe_experts = true, .multi_data = 2, .multi_stream = true});
  const double ampipe = step({.degree = 2, .tp_sp_overlap = true});
  CHECK(pipe_experts < base.makespan.count());
  CHECK(ampipe < pipe_experts);
  // The chunks' dK/dV sums grow with the degree: past some degree, splitting costs more than
  // the little communication left to hide.
  CHECK(step({.degree = 16, .tp_sp_overlap = true}) > step({.degree = 4, .tp_sp_overlap = true}));
}
