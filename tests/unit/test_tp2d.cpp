// 2D tensor parallelism (MindSpeed's tp-2d note): the grid's groups and rules, every sharded layer
// against the unsharded one on in-process ranks, and the distributed norm where the note's formula
// fails.
#include <doctest/doctest.h>

#include <cmath>
#include <exception>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <weft/nn/attention.hpp>
#include <weft/nn/norm.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/tp/grid.hpp>
#include <weft/tp/layers.hpp>

// The precisions the layers are tested in (sanitizer builds: fp32 only, tests/CMakeLists.txt).
#ifdef WEFT_TEST_ONE_PRECISION
#define WEFT_TP_TYPES float
#else
#define WEFT_TP_TYPES float, double
#endif

using namespace weft;
using namespace weft::tp;

namespace {

template <class T>
using mat = nn::matrix<T>;

template <class T>
mat<T> random(Eigen::Index r, Eigen::Index c, std::mt19937& rng, double scale = 0.5) {
  std::normal_distribution<double> n(0, scale);
  mat<T> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(n(rng));
  return m;
}

template <class T>
double rel_err(const mat<T>& got, const mat<T>& want) {
  return static_cast<double>((got - want).norm()) /
         std::max(1e-30, static_cast<double>(want.norm()));
}

/// Runs `body(rank_comm)` on every rank of `g`, each on a thread of one in-process world.
template <class T>
void on_grid(const grid& g, const std::function<void(rank_comm<T>&)>& body) {
  rt::inproc_world world(g.size());
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(g.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < g.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        rank_comm<T> rc(world.at(r), g, seconds(20));
        body(rc);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// The block of a [s, H] activation rank (x, y) holds: rows chunk x, columns chunk y.
template <class T>
mat<T> block_of(const mat<T>& full, const grid& g, int x, int y) {
  const Eigen::Index r = full.rows() / g.tp_x, c = full.cols() / g.tp_y;
  return full.block(x * r, y * c, r, c);
}

/// An unsharded attention layer of width H with random weights.
template <class T>
nn::attention<T> random_attention(Eigen::Index H, int heads, std::mt19937& rng) {
  nn::attention<T> a;
  a.heads = heads;
  for (nn::param<T>* w : {&a.wq, &a.wk, &a.wv, &a.wo}) *w = nn::param<T>(random<T>(H, H, rng, 0.2));
  return a;
}

const grid shapes[] = {{2, 2}, {4, 2}, {2, 4}, {3, 2}};

}  // namespace

TEST_CASE("the grid: TP-X groups contiguous, TP-Y strided; the tp-2d note's rules") {
  const grid g = make_grid(8, 4, 2);
  CHECK(g.x_group(5) == std::vector<int>{4, 5, 6, 7});
  CHECK(g.y_group(5) == std::vector<int>{1, 5});
  CHECK(g.x_of(6) == 2);
  CHECK(g.y_of(6) == 1);
  CHECK_THROWS_WITH_AS(make_grid(8, 8, 1), doctest::Contains("tp_x and tp_y must both be > 1"),
                       config_error);
  CHECK_THROWS_WITH_AS(make_grid(8, 2, 2), doctest::Contains("need satisfy tp = tp_x * tp_y"),
                       config_error);
  CHECK_THROWS_WITH_AS(linear2d<float>::check_linear(30, 8, 2, 4, gather_over::x),
                       doctest::Contains("input size should be divisible by tp-y"), config_error);
  CHECK_THROWS_WITH_AS(linear2d<float>::check_linear(8, 30, 4, 2, gather_over::x),
                       doctest::Contains("output size should be divisible by tp-x"), config_error);
}

TEST_CASE_TEMPLATE("the MLP: output, input gradient and every weight gradient equal the unsharded",
                   T, WEFT_TP_TYPES) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (const grid& g : shapes) {
    CAPTURE(g.tp_x);
    CAPTURE(g.tp_y);
    std::mt19937 rng(42);
    const Eigen::Index s = 24, H = 24, F = 48;
    const mat<T> x = random<T>(s, H, rng), w1 = random<T>(H, F, rng), w2 = random<T>(F, H, rng),
                 dy = random<T>(s, H, rng);
    // Unsharded.
    const mat<T> h = x * w1, a = gelu(h), y = a * w2;
    const mat<T> dw2 = a.transpose() * dy,
                 dh = ((dy * w2.transpose()).array() * gelu_grad(h).array()).matrix();
    const mat<T> dw1 = x.transpose() * dh, dx = dh * w1.transpose();
    on_grid<T>(g, [&](rank_comm<T>& rc) {
      mlp2d<T> m = mlp2d<T>::shard(w1, w2, rc);
      typename mlp2d<T>::context c;
      const mat<T> out = m.forward(rc, block_of(x, g, rc.x(), rc.y()), c);
      CHECK(rel_err(out, block_of(y, g, rc.x(), rc.y())) < tol);
      const mat<T> din = m.backward(rc, block_of(dy, g, rc.x(), rc.y()), c);
      CHECK(rel_err(din, block_of(dx, g, rc.x(), rc.y())) < tol);
      // fc1 holds dW1's [in chunk y, out chunk x], fc2 dW2's [in chunk x, out chunk y].
      CHECK(rel_err(m.fc1.w.grad, mat<T>(dw1.block(rc.y() * (H / g.tp_y), rc.x() * (F / g.tp_x),
                                                   H / g.tp_y, F / g.tp_x))) < tol);
      CHECK(rel_err(m.fc2.w.grad, mat<T>(dw2.block(rc.x() * (F / g.tp_x), rc.y() * (H / g.tp_y),
                                                   F / g.tp_x, H / g.tp_y))) < tol);
    });
  }
}

TEST_CASE_TEMPLATE(
    "attention: output, input gradient and every weight gradient equal the unsharded", T,
    WEFT_TP_TYPES) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (const grid& g : shapes) {
    CAPTURE(g.tp_x);
    CAPTURE(g.tp_y);
    std::mt19937 rng(7);
    const Eigen::Index s = 24, H = 48;
    nn::attention<T> ref = random_attention<T>(H, 12, rng);
    const mat<T> x = random<T>(s, H, rng), dy = random<T>(s, H, rng);
    typename nn::attention<T>::context rc0;
    const auto mask = nn::causal_mask(s);
    const mat<T> y = ref.forward(x, mask, rc0), dx = ref.backward_dx(dy, rc0);
    ref.backward_dw(rc0);
    on_grid<T>(g, [&](rank_comm<T>& rc) {
      attention2d<T> a = attention2d<T>::shard(ref, rc);
      typename attention2d<T>::context c;
      const mat<T> out = a.forward(rc, block_of(x, g, rc.x(), rc.y()), c);
      CHECK(rel_err(out, block_of(y, g, rc.x(), rc.y())) < tol);
      const mat<T> din = a.backward(rc, block_of(dy, g, rc.x(), rc.y()), c);
      CHECK(rel_err(din, block_of(dx, g, rc.x(), rc.y())) < tol);
      // QKV's shard: rows chunk y of H, columns [q | k | v] of this TP-X place's heads.
      const Eigen::Index w = H / g.tp_x, in = H / g.tp_y;
      mat<T> want(in, 3 * w);
      want << ref.wq.grad.block(rc.y() * in, rc.x() * w, in, w),
          ref.wk.grad.block(rc.y() * in, rc.x() * w, in, w),
          ref.wv.grad.block(rc.y() * in, rc.x() * w, in, w);
      CHECK(rel_err(a.qkv.w.grad, want) < tol);
      CHECK(rel_err(a.proj.w.grad, mat<T>(ref.wo.grad.block(rc.x() * w, rc.y() * in, w, in))) <
            tol);
    });
  }
}

TEST_CASE_TEMPLATE("LayerNorm and RMSNorm over TP-Y equal the unsharded, gradients too", T,
                   WEFT_TP_TYPES) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (const grid& g : shapes) {
    CAPTURE(g.tp_x);
    CAPTURE(g.tp_y);
    std::mt19937 rng(3);
    const Eigen::Index s = 24, H = 24;
    const mat<T> x = random<T>(s, H, rng, 2.0), dy = random<T>(s, H, rng);
    nn::layer_norm<T> ln{nn::param<T>(random<T>(1, H, rng)), nn::param<T>(random<T>(1, H, rng))};
    nn::rms_norm<T> rms{nn::param<T>(random<T>(1, H, rng))};
    typename nn::layer_norm<T>::context lc;
    typename nn::rms_norm<T>::context rmc;
    const mat<T> ly = ln.forward(x, lc), ldx = ln.backward_dx(dy, lc);
    ln.backward_dw(lc);
    const mat<T> ry = rms.forward(x, rmc), rdx = rms.backward_dx(dy, rmc);
    rms.backward_dw(rmc);
    on_grid<T>(g, [&](rank_comm<T>& rc) {
      const Eigen::Index w = H / g.tp_y;
      layer_norm2d<T> l = layer_norm2d<T>::shard(ln.g.value, ln.b.value, ln.eps, rc);
      typename layer_norm2d<T>::context c;
      CHECK(rel_err(l.forward(rc, block_of(x, g, rc.x(), rc.y()), c),
                    block_of(ly, g, rc.x(), rc.y())) < tol);
      CHECK(rel_err(l.backward(rc, block_of(dy, g, rc.x(), rc.y()), c),
                    block_of(ldx, g, rc.x(), rc.y())) < tol);
      CHECK(rel_err(l.g.grad, mat<T>(ln.g.grad.middleCols(rc.y() * w, w))) < tol);
      CHECK(rel_err(l.b.grad, mat<T>(ln.b.grad.middleCols(rc.y() * w, w))) < tol);
      rms_norm2d<T> r = rms_norm2d<T>::shard(rms.g.value, rms.eps, rc);
      typename rms_norm2d<T>::context rcx;
      CHECK(rel_err(r.forward(rc, block_of(x, g, rc.x(), rc.y()), rcx),
                    block_of(ry, g, rc.x(), rc.y())) < tol);
      CHECK(rel_err(r.backward(rc, block_of(dy, g, rc.x(), rc.y()), rcx),
                    block_of(rdx, g, rc.x(), rc.y())) < tol);
      CHECK(rel_err(r.g.grad, mat<T>(rms.g.grad.middleCols(rc.y() * w, w))) < tol);
    });
  }
}

TEST_CASE(
    "the distributed norm where the sum and sum-of-squares form fails (fp32, x ~ 1e4 + N(0,1))") {
  // One row of H = 4096 values over tp_y = 4 ranks (2 x 4 grid, the row on every TP-X place).
  const grid g{2, 4};
  const Eigen::Index H = 4096;
  std::mt19937 rng(2024);
  std::normal_distribution<double> n(0, 1);
  std::vector<double> v(static_cast<std::size_t>(H));
  for (double& e : v) e = 1e4 + n(rng);
  // The reference: fp64, two passes.
  double mean = 0;
  for (double e : v) mean += e;
  mean /= static_cast<double>(H);
  double var = 0;
  for (double e : v) var += (e - mean) * (e - mean);
  var /= static_cast<double>(H);
  mat<float> x(2, H);
  for (Eigen::Index j = 0; j < H; ++j)
    x(0, j) = x(1, j) = static_cast<float>(v[static_cast<std::size_t>(j)]);
  // What fp32 holds, in fp64 two passes: the variance the norm should find.
  double mean32 = 0, var32 = 0;
  for (Eigen::Index j = 0; j < H; ++j) mean32 += x(0, j);
  mean32 /= static_cast<double>(H);
  for (Eigen::Index j = 0; j < H; ++j) var32 += (x(0, j) - mean32) * (x(0, j) - mean32);
  var32 /= static_cast<double>(H);
  CHECK(var32 == doctest::Approx(var).epsilon(1e-2));
  on_grid<float>(g, [&](rank_comm<float>& rc) {
    const mat<float> mine = block_of(x, g, rc.x(), rc.y());  // 1 row x 1024 values
    mat<float> m, s2;
    layer_norm2d<float>::moments(rc, mine, m, s2, static_cast<int>(H));
    CHECK(static_cast<double>(s2(0, 0)) == doctest::Approx(var32).epsilon(1e-3));
    // The sums-of-squares form in fp32, as the note computes it (step 7 squares the sum; read
    // as the mean's square it still cancels): all-reduced sums, then E[x²] - E[x]².
    mat<float> sums(1, 2);
    sums(0, 0) = mine.row(0).sum();
    sums(0, 1) = mine.row(0).array().square().sum();
    rc.sum(sums, rc.y_group(), "sums");
    const float ex = sums(0, 0) / static_cast<float>(H), ex2 = sums(0, 1) / static_cast<float>(H);
    const double naive = static_cast<double>(ex2 - ex * ex);
    const double literal = static_cast<double>(ex2 - sums(0, 0) * sums(0, 0));
    CHECK(std::abs(naive - var32) > 0.5);  // garbage: cancellation of two 1e8-sized numbers
    CHECK(literal < -1e9);                 // the literal formula: hopelessly negative
  });
}

TEST_CASE_TEMPLATE("1D tensor parallelism is the grid tp x 1: the same layers, exact", T,
                   WEFT_TP_TYPES) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (const int tp : {2, 4, 6}) {
    CAPTURE(tp);
    const grid g = one_d_grid(tp);
    std::mt19937 rng(9);
    const Eigen::Index s = 24, H = 48, F = 96;
    const mat<T> x = random<T>(s, H, rng), w1 = random<T>(H, F, rng), w2 = random<T>(F, H, rng);
    const mat<T> y = gelu(mat<T>(x * w1)) * w2;
    nn::attention<T> ref = random_attention<T>(H, 12, rng);
    typename nn::attention<T>::context c0;
    const mat<T> ya = ref.forward(x, nn::causal_mask(s), c0);
    on_grid<T>(g, [&](rank_comm<T>& rc) {
      mlp2d<T> m = mlp2d<T>::shard(w1, w2, rc);
      typename mlp2d<T>::context c;
      CHECK(rel_err(m.forward(rc, block_of(x, g, rc.x(), 0), c), block_of(y, g, rc.x(), 0)) < tol);
      attention2d<T> a = attention2d<T>::shard(ref, rc);
      typename attention2d<T>::context ca;
      CHECK(rel_err(a.forward(rc, block_of(x, g, rc.x(), 0), ca), block_of(ya, g, rc.x(), 0)) <
            tol);
    });
  }
}

TEST_CASE("bytes per layer: what each rank sends is the formula, 1D against 2D") {
  const Eigen::Index s = 24, H = 48, F = 96;
  std::mt19937 rng(5);
  const mat<float> x = random<float>(s, H, rng), w1 = random<float>(H, F, rng),
                   w2 = random<float>(F, H, rng);
  nn::attention<float> ref = random_attention<float>(H, 24, rng);
  for (const grid& g : {grid{2, 2}, grid{4, 2}, grid{2, 4}, grid{3, 2}, one_d_grid(4),
                        one_d_grid(8), one_d_grid(6)}) {
    CAPTURE(g.tp_x);
    CAPTURE(g.tp_y);
    const layer_volume want = forward_volume(g, s, H, F, 4);
    on_grid<float>(g, [&](rank_comm<float>& rc) {
      mlp2d<float> m = mlp2d<float>::shard(w1, w2, rc);
      typename mlp2d<float>::context c;
      m.forward(rc, block_of(x, g, rc.x(), rc.y()), c);
      const double mlp = rc.sent().total();
      CHECK(mlp == doctest::Approx(want.mlp));
      attention2d<float> a = attention2d<float>::shard(ref, rc);
      typename attention2d<float>::context ca;
      a.forward(rc, block_of(x, g, rc.x(), rc.y()), ca);
      CHECK(rc.sent().total() - mlp == doctest::Approx(want.attention));
    });
  }
  // tp 16: 8 x 2 against 1D, llama3-405B's widths (H 16384, F 53248, s 8192): 2D moves less.
  const layer_volume one = forward_volume(one_d_grid(16), 8192, 16384, 53248, 2);
  const layer_volume two = forward_volume(grid{8, 2}, 8192, 16384, 53248, 2);
  // Per rank, 1D: 2 * 15/16 * s * H per sublayer; 2D: 2 * 7/16 * s * H plus, over Y, 2/16 * s * F
  // (MLP) or 6/16 * s * H (attention): about two thirds of 1D's.
  CHECK(one.mlp == doctest::Approx(2 * 15.0 / 16 * 8192 * 16384 * 2));
  CHECK(two.mlp / one.mlp == doctest::Approx((14.0 * 16384 + 2.0 * 53248) / (30.0 * 16384)));
  CHECK(two.attention / one.attention == doctest::Approx(20.0 / 30.0));
}

TEST_CASE("bytes each rank sends in the MLP: two all-gathers and two reduce-scatters forward") {
  const grid g{4, 2};
  const Eigen::Index s = 24, H = 24, F = 48;
  std::mt19937 rng(1);
  const mat<float> x = random<float>(s, H, rng), w1 = random<float>(H, F, rng),
                   w2 = random<float>(F, H, rng);
  on_grid<float>(g, [&](rank_comm<float>& rc) {
    mlp2d<float> m = mlp2d<float>::shard(w1, w2, rc);
    typename mlp2d<float>::context c;
    m.forward(rc, block_of(x, g, rc.x(), rc.y()), c);
    const double b = 4;  // fp32
    // fc1: all-gather [s/4, H/2] over 4; reduce-scatter [s, F/4] over 2. fc2: all-gather
    // [s/2, F/4] over 2; reduce-scatter [s, H/2] over 4.
    const double ag = 3 * (s / 4.0) * (H / 2.0) * b + 1 * (s / 2.0) * (F / 4.0) * b;
    const double rs = 0.5 * s * (F / 4.0) * b + 0.75 * s * (H / 2.0) * b;
    CHECK(rc.sent().all_gather == doctest::Approx(ag));
    CHECK(rc.sent().reduce_scatter == doctest::Approx(rs));
    CHECK(rc.sent().all_reduce == 0);
  });
}

TEST_CASE("a rank whose peers never join a sum fails with weft's run-time error, naming it") {
  // A 2 x 1 grid where only rank 1 runs: its TP-X all-reduce waits for rank 0 until its 0.1 s
  // are up, then throws run_error with the rank and what it waited in.
  const grid g{2, 1};
  rt::inproc_world world(g.size());
  rank_comm<float> rc(world.at(1), g, seconds(0.1));
  mat<float> m = mat<float>::Ones(2, 2);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    rc.sum(m, rc.x_group(), "the test's sum");
    FAIL("the sum should time out");
  } catch (const weft::run_error& e) {
    CHECK(std::string(e.what()) == "weft: tp-2d: rank 1 timed out after 0.1 s in the test's sum");
    CHECK(e.rank == 1);
    CHECK(!e.cause);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}
