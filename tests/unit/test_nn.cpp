// Finite-difference gradient checks for every kernel, in double; the backward split into dX and
// dW gives the same gradients as one pass; fp32 forward agrees with fp64.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include <weft/exec/moe_layer.hpp>
#include <weft/nn/attention.hpp>
#include <weft/nn/experts.hpp>
#include <weft/nn/linear.hpp>
#include <weft/nn/norm.hpp>

using namespace weft::nn;
using mat = matrix<double>;

namespace {

std::mt19937 rng(7);
mat random(Eigen::Index r, Eigen::Index c, double scale = 1.0) {
  std::normal_distribution<double> n(0.0, scale);
  mat m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

/// Largest relative difference between an analytic gradient and central differences of `f`
/// with respect to `x`.
double check(mat& x, const mat& analytic, const std::function<double()>& f) {
  const double h = 1e-6;
  double worst = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double keep = x.data()[i];
    x.data()[i] = keep + h;
    const double up = f();
    x.data()[i] = keep - h;
    const double down = f();
    x.data()[i] = keep;
    const double numeric = (up - down) / (2 * h);
    const double a = analytic.data()[i];
    worst = std::max(worst, std::abs(a - numeric) / std::max(1.0, std::abs(numeric)));
  }
  return worst;
}

constexpr double tolerance = 1e-6;

}  // namespace

TEST_CASE("linear: dX and dW match finite differences") {
  linear<double> k{param<double>(random(5, 3)), param<double>(random(1, 3))};
  mat x = random(4, 5), r = random(4, 3);
  const auto loss = [&] {
    linear<double>::context c;
    return (k.forward(x, c).array() * r.array()).sum();
  };
  linear<double>::context c;
  k.forward(x, c);
  const mat dx = k.backward_dx(r, c);
  k.backward_dw(c);
  CHECK(check(x, dx, loss) < tolerance);
  CHECK(check(k.w.value, k.w.grad, loss) < tolerance);
  CHECK(check(k.b.value, k.b.grad, loss) < tolerance);
}

TEST_CASE("RMSNorm and LayerNorm: dX and dW match finite differences") {
  mat x = random(4, 6), r = random(4, 6);
  {
    rms_norm<double> k{param<double>(random(1, 6))};
    const auto loss = [&] {
      rms_norm<double>::context c;
      return (k.forward(x, c).array() * r.array()).sum();
    };
    rms_norm<double>::context c;
    k.forward(x, c);
    const mat dx = k.backward_dx(r, c);
    k.backward_dw(c);
    CHECK(check(x, dx, loss) < tolerance);
    CHECK(check(k.g.value, k.g.grad, loss) < tolerance);
  }
  {
    layer_norm<double> k{param<double>(random(1, 6)), param<double>(random(1, 6))};
    const auto loss = [&] {
      layer_norm<double>::context c;
      return (k.forward(x, c).array() * r.array()).sum();
    };
    layer_norm<double>::context c;
    k.forward(x, c);
    const mat dx = k.backward_dx(r, c);
    k.backward_dw(c);
    CHECK(check(x, dx, loss) < tolerance);
    CHECK(check(k.g.value, k.g.grad, loss) < tolerance);
    CHECK(check(k.b.value, k.b.grad, loss) < tolerance);
  }
}

TEST_CASE("attention with causal and general masks: dX and dW match finite differences") {
  attention_mask general(5, 5);
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 5; ++j) general(i, j) = (i + 2 * j) % 3 != 0;
  general.row(4).setConstant(false);  // a query that attends to nothing
  for (const attention_mask& mask : {causal_mask(5), general}) {
    attention<double> k{param<double>(random(4, 4, 0.5)), param<double>(random(4, 4, 0.5)),
                        param<double>(random(4, 4, 0.5)), param<double>(random(4, 4, 0.5)), 2};
    mat x = random(5, 4), r = random(5, 4);
    const auto loss = [&] {
      attention<double>::context c;
      return (k.forward(x, mask, c).array() * r.array()).sum();
    };
    attention<double>::context c;
    const mat y = k.forward(x, mask, c);
    const mat dx = k.backward_dx(r, c);
    k.backward_dw(c);
    CHECK(y.allFinite());
    CHECK(check(x, dx, loss) < tolerance);
    for (param<double>* p : {&k.wq, &k.wk, &k.wv, &k.wo})
      CHECK(check(p->value, p->grad, loss) < tolerance);
  }
}

TEST_CASE("attention: a query row that attends to nothing gets zeros") {
  attention<double> k{param<double>(random(2, 2)), param<double>(random(2, 2)),
                      param<double>(random(2, 2)), param<double>(random(2, 2)), 1};
  attention_mask m = causal_mask(3);
  m.row(1).setConstant(false);
  attention<double>::context c;
  const mat y = k.forward(random(3, 2), m, c);
  CHECK(y.row(1).isZero());
  CHECK_THROWS_AS(k.forward(random(3, 2), causal_mask(4), c), weft::config_error);
}

TEST_CASE("router: deterministic top-k, gate gradients match finite differences") {
  router<double> k{param<double>(random(4, 6)), 2};
  mat x = random(5, 4), r = random(5, 2);
  router<double>::context c;
  k.forward(x, c);
  const auto loss = [&] {
    router<double>::context cc;
    return (k.forward(x, cc).gate.array() * r.array()).sum();
  };
  const mat dx = k.backward_dx(r, c);
  k.backward_dw(c);
  CHECK(check(x, dx, loss) < tolerance);
  CHECK(check(k.w.value, k.w.grad, loss) < tolerance);
  // Ties go to the lower expert index.
  router<double> flat{param<double>(mat::Zero(4, 6)), 2};
  router<double>::context cf;
  const auto tie = flat.forward(random(3, 4), cf);
  for (int i = 0; i < 3; ++i) {
    CHECK(tie.expert[static_cast<std::size_t>(2 * i)] == 0);
    CHECK(tie.expert[static_cast<std::size_t>(2 * i + 1)] == 1);
  }
}

TEST_CASE("expert MLP and the loss: gradients match finite differences") {
  expert_mlp<double> k{param<double>(random(4, 8, 0.5)), param<double>(random(8, 4, 0.5))};
  mat x = random(3, 4), t = random(3, 4);
  const auto loss = [&] {
    expert_mlp<double>::context c;
    return mse_loss<double>::value(k.forward(x, c), t);
  };
  expert_mlp<double>::context c;
  const mat y = k.forward(x, c);
  const mat dx = k.backward_dx(mse_loss<double>::gradient(y, t), c);
  k.backward_dw(c);
  CHECK(check(x, dx, loss) < tolerance);
  CHECK(check(k.w1.value, k.w1.grad, loss) < tolerance);
  CHECK(check(k.w2.value, k.w2.grad, loss) < tolerance);
}

TEST_CASE("fp32 kernels agree with fp64 within 1e-5 relative") {
  const mat wd = random(4, 8, 0.5), w2d = random(8, 4, 0.5), xd = random(6, 4);
  expert_mlp<double> kd{param<double>(wd), param<double>(w2d)};
  expert_mlp<float> kf{param<float>(wd.cast<float>()), param<float>(w2d.cast<float>())};
  expert_mlp<double>::context cd;
  expert_mlp<float>::context cf;
  const mat yd = kd.forward(xd, cd);
  const matrix<float> yf = kf.forward(xd.cast<float>(), cf);
  CHECK((yf.cast<double>() - yd).norm() / yd.norm() < 1e-5);
}

TEST_CASE("a whole MoE layer (attention, router, dispatch, experts, combine, shared expert)") {
  weft::exec::moe_layer<double> k;
  k.norm1.g = param<double>(mat::Ones(1, 4) + random(1, 4, 0.1));
  k.norm2.g = param<double>(mat::Ones(1, 4) + random(1, 4, 0.1));
  k.attn = {param<double>(random(4, 4, 0.5)), param<double>(random(4, 4, 0.5)),
            param<double>(random(4, 4, 0.5)), param<double>(random(4, 4, 0.5)), 2};
  k.route = {param<double>(random(4, 4)), 2};
  for (int e = 0; e < 4; ++e)
    k.experts.push_back({param<double>(random(4, 6, 0.5)), param<double>(random(6, 4, 0.5))});
  k.shared = {param<double>(random(4, 6, 0.5)), param<double>(random(6, 4, 0.5))};
  const attention_mask mask = causal_mask(5);
  mat x = random(5, 4), r = random(5, 4);
  const auto loss = [&] {
    weft::exec::moe_layer<double>::context c;
    return (k.forward(x, mask, c).array() * r.array()).sum();
  };
  weft::exec::moe_layer<double>::context c;
  k.forward(x, mask, c);
  const mat dx = k.backward_dx(r, c);
  k.backward_dw(c);
  CHECK(check(x, dx, loss) < tolerance);
  int checked = 0;
  k.each_param([&](param<double>& p) {
    CHECK(check(p.value, p.grad, loss) < tolerance);
    ++checked;
  });
  CHECK(checked == 9 + 2 * 4);
}

TEST_CASE("the MoE layer's sub-stages in another legal order give the same results bit for bit") {
  const auto make = [] {
    std::mt19937 g(3);
    std::normal_distribution<double> n(0.0, 0.5);
    const auto rnd = [&](Eigen::Index r, Eigen::Index c) {
      mat m(r, c);
      for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(g);
      return m;
    };
    weft::exec::moe_layer<double> k;
    k.norm1.g = param<double>(mat::Ones(1, 4));
    k.norm2.g = param<double>(mat::Ones(1, 4));
    k.attn = {param<double>(rnd(4, 4)), param<double>(rnd(4, 4)), param<double>(rnd(4, 4)),
              param<double>(rnd(4, 4)), 2};
    k.route = {param<double>(rnd(4, 4)), 2};
    for (int e = 0; e < 4; ++e)
      k.experts.push_back({param<double>(rnd(4, 6)), param<double>(rnd(6, 4))});
    k.shared = {param<double>(rnd(4, 6)), param<double>(rnd(6, 4))};
    return k;
  };
  weft::exec::moe_layer<double> whole = make(), staged = make();
  const attention_mask mask = causal_mask(5);
  const mat x = random(5, 4), dy = random(5, 4);

  weft::exec::moe_layer<double>::context a;
  const mat y1 = whole.forward(x, mask, a);
  const mat dx1 = whole.backward_dx(dy, a);
  whole.backward_dw(a);

  weft::exec::moe_layer<double>::context b;
  staged.attn_forward(x, mask, b);  // attn F
  staged.shared_forward(b);         // shared F (beside dispatch)
  b.rows.expert = b.chosen.expert;  // dispatch F
  b.rows.in = b.expert_in;
  staged.mlp_forward(b.rows);  // mlp F
  b.routed_out = b.rows.out;   // combine F
  const mat y2 = staged.output(b);
  staged.combine_backward(dy, b);                  // combine B
  staged.shared_backward_dx(dy, b);                // shared dX
  b.rows.dout = b.dexpert_out;                     // combine B moved it
  staged.mlp_backward_dx(b.rows);                  // mlp dX
  b.dexpert_in = b.rows.din;                       // dispatch B
  const mat dx2 = staged.attn_backward_dx(dy, b);  // attn dX
  staged.mlp_backward_dw(b.rows);                  // the deferred dW passes
  staged.shared_backward_dw(b);
  staged.attn_backward_dw(b);

  CHECK(y1 == y2);
  CHECK(dx1 == dx2);
  std::vector<mat> g1, g2;
  whole.each_param([&](param<double>& p) { g1.push_back(p.grad); });
  staged.each_param([&](param<double>& p) { g2.push_back(p.grad); });
  REQUIRE(g1.size() == g2.size());
  for (std::size_t i = 0; i < g1.size(); ++i) CHECK(g1[i] == g2[i]);
}
