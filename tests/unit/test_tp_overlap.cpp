// A tensor-parallel linear's overlaps (MindSpeed's tp-2d note) as schedules: the checker proves
// them and names the op a wrong order breaks, the simulator times them as the ring and chunk
// arithmetic says, and two forward overlaps at once are refused.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <utility>

#include <weft/exec/runner.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/tp/layer_run.hpp>
#include <weft/tp/preset.hpp>
#include <weft/tp/run.hpp>
#include <weft/tp/schedule.hpp>

#include "scenario_presets.hpp"
#include "time_approx.hpp"

using namespace weft;

namespace {

constexpr tp_overlap every_overlap[] = {tp_overlap::none, tp_overlap::ag_matmul,
                                        tp_overlap::matmul_rs, tp_overlap::fused};

// The compiler proves each overlap legal, as a user's static_assert would.
static_assert(verify(tp::linear_schedule(tp_overlap::none, 1)));
static_assert(verify(tp::linear_schedule(tp_overlap::ag_matmul, 8)));
static_assert(verify(tp::linear_schedule(tp_overlap::matmul_rs, 2, true, true)));
static_assert(verify(tp::linear_schedule(tp_overlap::fused, 4)));

/// Where op `o` sits in `s`.
std::size_t position(const schedule& s, const op& o) {
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].same_work(o)) return i;
  FAIL("no ", to_string(o));
  return 0;
}

/// `s` with the ops at `a` and `b` swapped.
schedule swapped(schedule s, const op& a, const op& b) {
  const std::size_t i = position(s, a), j = position(s, b);
  const op t = s.ops[i];
  s.ops[i] = s.ops[j];
  s.ops[j] = t;
  return s;
}

/// Costs in units: a matmul piece of P costs `piece`, a ring step `step`, the whole
/// reduce-scatter `rs` (its pieces share it), backward twice the forward.
unit_cost_model linear_costs(const model_desc& m, double piece, double step, double rs) {
  unit_cost_model c;
  const double P = m.splits;
  c.set(kind::block, phase::F, units(piece * P)).set(kind::block, phase::B, units(2 * piece * P));
  const double ag = m.tp_ring() ? step * (P - 1) : step;
  c.set(kind::all_gather, phase::F, units(ag)).set(kind::reduce_scatter, phase::F, units(rs));
  c.set(kind::all_gather, phase::B, units(step)).set(kind::reduce_scatter, phase::B, units(rs));
  return c;
}

double forward_time(tp_overlap o, int pieces, double piece, double step, double rs) {
  const schedule s = tp::linear_schedule(o, pieces, false);
  const program p = lower(s);
  return simulate(p, linear_costs(s.model, piece, step, rs)).makespan.count();
}

}  // namespace

TEST_CASE("every overlap of a linear is legal for every piece count, forward and backward") {
  for (const tp_overlap o : every_overlap)
    for (int pieces : {1, 2, 3, 8})
      for (bool backward : {false, true})
        for (bool split : {false, true}) {
          if (o == tp_overlap::none && pieces > 1) continue;
          const std::string name = tp::name_of(o);
          CAPTURE(name);
          CAPTURE(pieces);
          const report r = check(tp::linear_schedule(o, pieces, backward, split && backward));
          CHECK_MESSAGE(r.ok(), (r.ok() ? std::string() : to_string(r.violations[0])));
        }
}

TEST_CASE("the checker names the op a wrong overlap breaks") {
  SUBCASE("a ring's piece multiplied before its step brought it") {
    const schedule s = swapped(tp::linear_schedule(tp_overlap::ag_matmul, 4),
                               make_op(kind::block, phase::F, 0, 0, 0, 1),
                               make_op(kind::block, phase::F, 0, 0, 0, 3));
    const violation v = diagnose(s);
    REQUIRE(v);
    CHECK(v.code == rule::order);
    CHECK(v.subject.same_work(make_op(kind::block, phase::F, 0, 0, 0, 3)));
    CHECK(v.other.same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 3)));
  }
  SUBCASE("a piece reduce-scattered in the slot of its own matmul") {
    schedule s = tp::linear_schedule(tp_overlap::matmul_rs, 2);
    // slot 1 holds piece 0 alone; put its reduce-scatter there too.
    const std::size_t rs = position(s, make_op(kind::reduce_scatter, phase::F, 0, 0, 0, 0));
    const std::size_t mm = position(s, make_op(kind::block, phase::F, 0, 0, 0, 0));
    schedule t(s.model);
    t.add_rank();
    for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i) {
        if (i == rs) continue;
        t.ops.push_back(s.ops[i]);
        if (i == mm) t.ops.push_back(s.ops[rs]);
      }
      if (t.slot_end.empty() || t.ops.size() > t.slot_end.back())
        t.slot_end.push_back(static_cast<std::uint32_t>(t.ops.size()));
    }
    const violation v = diagnose(t);
    REQUIRE(v);
    CHECK(v.code == rule::slot);
    CHECK(v.what == fault::dependent_in_slot);
  }
  SUBCASE("a ring step left out") {
    schedule s = tp::linear_schedule(tp_overlap::fused, 3, false);
    schedule t(s.model);
    t.add_rank();
    for (std::uint32_t g = 0; g < s.slot_end.size(); ++g) {
      for (std::uint32_t i = s.first_op(g); i < s.slot_end[g]; ++i)
        if (!s.ops[i].same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 2)))
          t.ops.push_back(s.ops[i]);
      t.slot_end.push_back(static_cast<std::uint32_t>(t.ops.size()));
    }
    const violation v = diagnose(t);
    REQUIRE(v);
    CHECK(v.code == rule::complete);
    CHECK(v.what == fault::missing);
    CHECK(v.subject.same_work(make_op(kind::all_gather, phase::F, 0, 0, 0, 2)));
  }
  SUBCASE("a collective a linear does not have") {
    schedule s = tp::linear_schedule(tp_overlap::none, 1);
    s.ops.push_back(make_op(kind::all_reduce, phase::F, 0));
    s.slot_end.push_back(static_cast<std::uint32_t>(s.ops.size()));
    const violation v = diagnose(s);
    REQUIRE(v);
    CHECK(v.what == fault::outside_model);
  }
}

TEST_CASE("a linear's model is checked") {
  model_desc m = tp::linear_model(tp_overlap::none, 2);
  CHECK(validate(m) == model_error::tp_pieces);
  m = tp::linear_model(tp_overlap::ag_matmul, 4);
  CHECK(validate(m) == model_error::none);
  m.layers = 2;
  CHECK(validate(m) == model_error::tp_needs_linear);
  m = tp::linear_model(tp_overlap::fused, 2);
  m.stages = stage_set::dense();
  CHECK(validate(m) == model_error::tp_needs_linear);
  CHECK_THROWS_AS(tp::linear_schedule(tp_overlap::none, tp::linear_groups{0, 2}), config_error);
}

TEST_CASE("two forward overlaps at once are a configuration error") {
  CHECK(tp::resolve({}) == tp_overlap::none);
  CHECK(tp::resolve({.ag_matmul = true}) == tp_overlap::ag_matmul);
  CHECK(tp::resolve({.matmul_rs = true}) == tp_overlap::matmul_rs);
  CHECK(tp::resolve({.fused = true}) == tp_overlap::fused);
  CHECK_THROWS_WITH_AS(tp::resolve({.ag_matmul = true, .matmul_rs = true}),
                       doctest::Contains("at most one forward overlap"), config_error);
  CHECK_THROWS_AS(tp::resolve({.matmul_rs = true, .fused = true}), config_error);
  CHECK_THROWS_AS(tp::resolve({.ag_matmul = true, .fused = true}), config_error);
}

TEST_CASE("pieces follow the groups the overlap cuts along") {
  const tp::linear_groups g{.gather = 8, .scatter = 2};
  CHECK(tp::pieces_for(tp_overlap::none, g) == 1);
  CHECK(tp::pieces_for(tp_overlap::ag_matmul, g) == 8);
  CHECK(tp::pieces_for(tp_overlap::matmul_rs, g) == 2);
  CHECK(tp::pieces_for(tp_overlap::fused, g) == 8);
}

TEST_CASE("simulated overlaps: a ring hides its steps behind the pieces, chunks hide the scatter") {
  // n members, a step a, a whole matmul n c, a whole reduce-scatter r. By hand:
  //  none:       (n - 1) a + n c + r (all in a row);
  //  ag-matmul:  each piece j >= 1 waits for max(its step, piece j - 1): with a <= c that is
  //              n c, then r;
  //  matmul-rs:  the gather whole, then the pieces back to back, the last piece's scatter r / n
  //              plus its latency share after them (latency 0 here): (n - 1) a + n c + r / n.
  const int n = 4;
  const double a = 1, c = 2, r = 3;
  CHECK(forward_time(tp_overlap::none, 1, n * c, (n - 1) * a, r) == doctest::Approx(3 + 8 + 3));
  CHECK(forward_time(tp_overlap::ag_matmul, n, c, a, r) == doctest::Approx(n * c + r));
  CHECK(forward_time(tp_overlap::matmul_rs, n, c, (n - 1) * a, r) ==
        doctest::Approx((n - 1) * a + n * c + r / n));
  CHECK(forward_time(tp_overlap::fused, n, c, a, r) == doctest::Approx(n * c + r / n));
  // A step longer than a piece: the ring sets the pace, a + (n - 1) a ... the last piece after
  // the last step: (n - 1) a' + c, then r.
  const double slow = 5;
  CHECK(forward_time(tp_overlap::ag_matmul, n, c, slow, r) ==
        doctest::Approx((n - 1) * slow + c + r));
}

namespace {

template <class T>
using mat = nn::matrix<T>;

template <class T>
mat<T> random_matrix(Eigen::Index r, Eigen::Index c, std::mt19937& rng) {
  std::normal_distribution<double> d(0, 1);
  mat<T> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng));
  return m;
}

double rel_err(const mat<double>& got, const mat<double>& want) {
  const double scale = want.norm();
  return (got - want).norm() / (scale > 0 ? scale : 1.0);
}

/// The block of `full` split in `rows` x `cols` chunks at (i, j).
mat<double> block_at(const mat<double>& full, int rows, int i, int cols, int j) {
  const Eigen::Index r = full.rows() / rows, c = full.cols() / cols;
  return full.block(i * r, j * c, r, c);
}

/// Runs one linear's forward and backward program on every rank of `g` and checks the output,
/// the input gradient and every weight shard's gradient against the unsharded layer.
void run_linear_exactly(const tp::grid& g, tp::gather_over ag, tp_overlap o, bool split) {
  std::mt19937 rng(7);
  const Eigen::Index s = 144, in = 12, out = 24;
  const mat<double> x = random_matrix<double>(s, in, rng), w = random_matrix<double>(in, out, rng),
                    dy = random_matrix<double>(s, out, rng);
  const mat<double> y = x * w, dx = dy * w.transpose(), dw = x.transpose() * dy;
  tp::linear_binding<double> lin(g, ag, w, s, o);
  const int G = lin.gather_size(), S = lin.scatter_size();
  const auto place = [&](int r) {
    const int gx = g.x_of(r), gy = g.y_of(r);
    return std::pair{ag == tp::gather_over::x ? gx : gy, ag == tp::gather_over::x ? gy : gx};
  };
  for (int r = 0; r < g.size(); ++r) {
    const auto [gi, si] = place(r);
    lin.set_input(r, block_at(x, G, gi, S, si));
    lin.set_output_grad(r, block_at(dy, S, si, G, gi));
  }
  const exec::run_options opt{.workers = 2, .comm_workers = 1};
  exec::runner fwd(lower(lin.forward_schedule()), g.size(), opt);
  fwd.run(lin);
  exec::runner bwd(lower(lin.backward_schedule(split), assuming(tp::forward_done)), g.size(), opt);
  bwd.run(lin);
  for (int r = 0; r < g.size(); ++r) {
    const auto [gi, si] = place(r);
    CAPTURE(r);
    CHECK(rel_err(lin.output(r), block_at(y, S, si, G, gi)) < 1e-12);
    CHECK(rel_err(lin.input_grad(r), block_at(dx, G, gi, S, si)) < 1e-12);
    CHECK(rel_err(lin.weight(r).grad, block_at(dw, S, si, G, gi)) < 1e-12);
  }
}

}  // namespace

TEST_CASE("every overlap runs exactly: output, input gradient and weight gradients") {
  for (const tp::grid g :
       {tp::grid{2, 2}, tp::grid{4, 2}, tp::grid{2, 4}, tp::grid{3, 2}, tp::one_d_grid(4)})
    for (const tp::gather_over ag : {tp::gather_over::x, tp::gather_over::y})
      for (const tp_overlap o : every_overlap) {
        const std::string name = tp::name_of(o);
        CAPTURE(g.tp_x);
        CAPTURE(g.tp_y);
        CAPTURE(ag == tp::gather_over::x);
        CAPTURE(name);
        run_linear_exactly(g, ag, o, o == tp_overlap::fused);
      }
}

TEST_CASE("sizes an overlap cannot cut are refused") {
  std::mt19937 rng(1);
  const mat<double> w = random_matrix<double>(12, 24, rng);
  // matmul-rs on 4 x 2 scattering over X (4): the sequence must divide into 4 x 4 slices.
  CHECK_THROWS_WITH_AS(
      tp::linear_binding<double>(tp::grid{4, 2}, tp::gather_over::y, w, 24, tp_overlap::matmul_rs),
      doctest::Contains("divisible by the scatter group's size squared"), config_error);
  CHECK_NOTHROW(
      tp::linear_binding<double>(tp::grid{4, 2}, tp::gather_over::y, w, 32, tp_overlap::matmul_rs));
  CHECK_THROWS_WITH_AS(
      tp::linear_binding<double>(tp::grid{3, 2}, tp::gather_over::x, w, 20, tp_overlap::none),
      doctest::Contains("divisible by the gather group's size"), config_error);
  CHECK_THROWS_WITH_AS(
      tp::linear_binding<double>(tp::grid{2, 5}, tp::gather_over::x, w, 20, tp_overlap::none),
      doctest::Contains("input size should be divisible by tp-y"), config_error);
  tp::linear_binding<double> lin(tp::grid{2, 2}, tp::gather_over::x, w, 8, tp_overlap::none);
  CHECK_THROWS_WITH_AS(lin.set_input(0, mat<double>(3, 6)), doctest::Contains("expected 4 x 6"),
                       config_error);
  CHECK_THROWS_AS(lin.set_input(4, mat<double>(4, 6)), config_error);
}

TEST_CASE("a backward run alone must assume its forward") {
  const schedule b = tp::linear_backward(tp_overlap::ag_matmul, 4);
  CHECK_NOTHROW(lower(b, assuming(tp::forward_done)));
  CHECK_THROWS_WITH_AS(lower(b, assuming(done(B))), doctest::Contains("not legal"), config_error);
}

TEST_CASE("a whole layer run through its linears' schedules equals the unsharded layer") {
  const tp::layer_shape shape{.seq = 72, .batch = 2, .hidden = 24, .heads = 12, .ffn = 48};
  const auto w = tp::layer_weights<double>::random(shape, 5);
  std::mt19937 rng(9);
  const Eigen::Index s = shape.tokens(), H = shape.hidden;
  const mat<double> x = random_matrix<double>(s, H, rng), dy = random_matrix<double>(s, H, rng);
  // Unsharded.
  nn::attention<double> att = w.attention;
  nn::attention<double>::context c;
  const mat<double> a = att.forward(x, tp::batched_causal_mask(shape.seq, shape.batch), c);
  const mat<double> h = a * w.w1, gl = tp::gelu(h), y = gl * w.w2;
  const mat<double> dw2 = gl.transpose() * dy,
                    dh = ((dy * w.w2.transpose()).array() * tp::gelu_grad(h).array()).matrix();
  const mat<double> dw1 = a.transpose() * dh;
  const mat<double> dx = att.backward_dx(dh * w.w1.transpose(), c);
  att.backward_dw(c);
  nn::attention<double> grads = att;
  for (nn::param<double>* p : {&grads.wq, &grads.wk, &grads.wv, &grads.wo}) p->value = p->grad;

  for (const tp::grid g : {tp::grid{2, 2}, tp::grid{4, 2}, tp::grid{3, 2}, tp::one_d_grid(4)})
    for (const tp_overlap o : every_overlap) {
      const std::string name = tp::name_of(o);
      CAPTURE(g.tp_x);
      CAPTURE(g.tp_y);
      CAPTURE(name);
      tp::layer_runner<double> layer(g, shape, w, o, {.workers = 2, .comm_workers = 1});
      const std::vector<mat<double>> xs = tp::blocks_of(x, g), dys = tp::blocks_of(dy, g);
      std::vector<mat<double>> dxs;
      std::vector<tp::phase_timing> timings;
      layer.step(xs, dys, dxs, timings);  // a first step: what it sent must not count again
      for (std::size_t i = 0; i < layer.linears(); ++i)
        for (int r = 0; r < g.size(); ++r) layer.linear(i).binding.weight(r).zero_grad();
      const std::vector<mat<double>> ys = layer.step(xs, dys, dxs, timings);
      CHECK(timings.size() == 10);  // four linears forward and backward, attention both ways
      const mat<double> wfull[] = {tp::attention2d<double>::fused_qkv(grads, g.tp_x),
                                   grads.wo.value, dw1, dw2};
      for (int r = 0; r < g.size(); ++r) {
        CAPTURE(r);
        CHECK(rel_err(ys[static_cast<std::size_t>(r)],
                      block_at(y, g.tp_x, g.x_of(r), g.tp_y, g.y_of(r))) < 1e-12);
        CHECK(rel_err(dxs[static_cast<std::size_t>(r)],
                      block_at(dx, g.tp_x, g.x_of(r), g.tp_y, g.y_of(r))) < 1e-12);
        for (std::size_t i = 0; i < 4; ++i) {
          // QKV and fc1 gather over X: [in chunk y, out chunk x]; proj and fc2 the reverse.
          const bool over_x = i % 2 == 0;
          const int gi = over_x ? g.x_of(r) : g.y_of(r), si = over_x ? g.y_of(r) : g.x_of(r);
          const int G = over_x ? g.tp_x : g.tp_y, S = over_x ? g.tp_y : g.tp_x;
          CAPTURE(i);
          CHECK(rel_err(layer.linear(i).binding.weight(r).grad, block_at(wfull[i], S, si, G, gi)) <
                1e-12);
        }
      }
      // What rank 0 sent forward and backward is twice the forward's formula... the backward
      // moves the same bytes as the forward, collective by collective.
      const tp::layer_volume v = tp::forward_volume(
          g, static_cast<double>(s), static_cast<double>(H), static_cast<double>(shape.ffn), 8);
      CHECK(layer.sent(0).total() == doctest::Approx(2 * (v.mlp + v.attention)));
    }
}

TEST_CASE("the llama3-405B preset: groups on machines and collectives priced by hand") {
  const node_mesh mesh;  // 8 devices a machine
  const group_span x16 = span_of_group(mesh, 0, 16, 1), x8 = span_of_group(mesh, 0, 8, 1),
                   y2 = span_of_group(mesh, 0, 2, 8), y4 = span_of_group(mesh, 0, 4, 4);
  CHECK((x16.nodes == 2 && x16.per_node == 8));
  CHECK((x8.nodes == 1 && x8.per_node == 8));
  CHECK((y2.nodes == 2 && y2.per_node == 1));
  CHECK((y4.nodes == 2 && y4.per_node == 2));
  // 16 MB gathered per rank. Inside a machine (2 us, 150 GB/s): 7 steps of 2 MB.
  const double T = 16e6;
  CHECK(gather_time(mesh, x8, T).count() == doctest::Approx(7 * (2e-6 + 2e6 / 150e9)));
  // Two machines with one member each (10 us, 25 GB/s): one step of 8 MB.
  CHECK(gather_time(mesh, y2, T).count() == doctest::Approx(10e-6 + 8e6 / 25e9));
  // 16 over two machines, two levels: the 1 MB blocks swapped between the machines' peers,
  // then 7 steps of 2 MB inside each machine. As one flat ring: 15 steps of 1 MB on the slow
  // link.
  CHECK(gather_time(mesh, x16, T).count() ==
        doctest::Approx((10e-6 + 1e6 / 25e9) + 7 * (2e-6 + 2e6 / 150e9)));
  CHECK(gather_time(mesh, x16, T, true).count() == doctest::Approx(15 * (10e-6 + 1e6 / 25e9)));

  // fc1 of the 8 x 2 grid: [8192, 16384] x [16384, 106496] over 16 ranks.
  const tp_layer_facts f = testing::llama3_405b();
  const std::vector<tp_linear_facts> ls = tp_layer_linears(f, tp::grid{8, 2});
  REQUIRE(ls.size() == 4);
  CHECK(ls[2].name == "fc1");
  const cost_model c = tp_linear_costs(ls[2], f.tokens(), f.mesh, f.device, 2, tp_overlap::none);
  const double flops = 2.0 * 8192 * 16384 * 106496 / 16;
  CHECK(c.of(kind::block, phase::F).count() == doctest::Approx(flops / (313e12 * 0.6)));
  // Its reduce-scatter over Y: [8192, 106496 / 8] bf16 per rank, half of it over the slow link.
  CHECK(c.of(kind::reduce_scatter, phase::F).count() ==
        doctest::Approx(10e-6 + 0.5 * 8192 * 13312 * 2 / 25e9));
  // Every configuration simulates; the layer's matmuls are the same work on either grid.
  const tp_layer_time one = simulate_tp_layer(f, tp::one_d_grid(16), tp_overlap::none);
  const tp_layer_time two = simulate_tp_layer(f, tp::grid{8, 2}, tp_overlap::none);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(one.linears[i].compute.count() == doctest::Approx(two.linears[i].compute.count()));
    CHECK(two.linears[i].time > two.linears[i].compute);
  }
}

TEST_CASE("llama3-405B layer priced: links by group, compute slowed where it overlaps") {
  const tp_layer_facts free = testing::llama3_405b();
  tp_layer_facts links = free, slowed = free;
  links.contention.shared_links = true;
  slowed.contention.compute_slowdown = 0.189;
  for (const tp::grid g : {tp::one_d_grid(16), tp::grid{8, 2}}) {
    // Without overlap a linear's ops run one at a time: nothing to price.
    const seconds none = simulate_tp_layer(free, g, tp_overlap::none).total;
    CHECK(simulate_tp_layer(slowed, g, tp_overlap::none).total.count() ==
          doctest::Approx(none.count()));
  }
  // 8 x 2 fused: fc1's ring runs inside a machine while each piece's scatter crosses to the
  // other, on links of two classes that share nothing. With the machine's link slowed until a
  // ring step outlasts a piece, the ring and the scatters overlap: apart, sharing changes
  // nothing; on one class they slow each other.
  const tp::grid g{8, 2};
  tp_layer_facts slow_ring = links;
  slow_ring.mesh.intra = link_model::with_bandwidth(seconds(2e-6), 2e9);
  tp_layer_facts slow_ring_free = slow_ring;
  slow_ring_free.contention = {};
  CHECK(simulate_tp_layer(slow_ring, g, tp_overlap::fused).total.count() ==
        doctest::Approx(simulate_tp_layer(slow_ring_free, g, tp_overlap::fused).total.count()));
  const tp_linear_facts fc1 = tp_layer_linears(slow_ring, g)[2];
  const program p = lower(tp::linear_schedule(
      tp_overlap::fused, tp::linear_groups{fc1.gather.members, fc1.scatter.members}));
  cost_model one_class = tp_linear_costs(fc1, slow_ring.tokens(), slow_ring.mesh, slow_ring.device,
                                         2, tp_overlap::fused);
  const seconds apart = simulate(p, one_class).makespan;
  one_class.contention.shared_links = true;  // gathers and scatters both on intra_node
  CHECK(simulate(p, one_class).makespan > apart);
  const tp_layer_time a = simulate_tp_layer(free, g, tp_overlap::fused);
  CHECK(simulate_tp_layer(links, g, tp_overlap::fused).total.count() ==
        doctest::Approx(a.total.count()));
  // Slowed compute costs something, and at most 18.9 % of the matmuls it overlaps.
  const tp_layer_time b = simulate_tp_layer(slowed, g, tp_overlap::fused);
  seconds matmuls{0};
  for (const tp_linear_time& l : a.linears) matmuls += l.compute;
  CHECK(b.total > a.total);
  CHECK(b.total.count() <= a.total.count() + 0.189 * matmuls.count() + 1e-12);
}
