// Adaptive context parallelism, execution: attention over cp in-process ranks following a plan
// equals single-device masked attention, forward and backward, for every mask family, with and
// without re-mapping; repeated runs are equal bit for bit.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <weft/cp/attention.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/remap.hpp>

using namespace weft;
using namespace weft::cp;
using mat = nn::matrix<float>;
using matd = nn::matrix<double>;

namespace {

mat random(int r, int c, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  mat m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(g);
  return m;
}

/// The textbook formulas, in double: softmax over the attended keys; rows attending nothing give
/// zeros.
struct reference {
  matd o, dq, dk, dv;
  reference(const dense_mask& m, const matd& q, const matd& k, const matd& v, const matd& d_o) {
    const int s = m.size();
    const double scale = 1.0 / std::sqrt(double(q.cols()));
    matd p = matd::Zero(s, s);
    for (int a = 0; a < s; ++a) {
      double top = -std::numeric_limits<double>::infinity();
      for (int b = 0; b < s; ++b)
        if (m(a, b)) top = std::max(top, q.row(a).dot(k.row(b)) * scale);
      double sum = 0;
      for (int b = 0; b < s; ++b)
        if (m(a, b)) sum += p(a, b) = std::exp(q.row(a).dot(k.row(b)) * scale - top);
      if (sum > 0) p.row(a) /= sum;
    }
    o = p * v;
    dv = p.transpose() * d_o;
    const matd dp = d_o * v.transpose();
    matd ds = matd::Zero(s, s);
    for (int a = 0; a < s; ++a) {
      const double rowdot = (dp.row(a).array() * p.row(a).array()).sum();
      for (int b = 0; b < s; ++b) ds(a, b) = p(a, b) * (dp(a, b) - rowdot) * scale;
    }
    dq = ds * k;
    dk = ds.transpose() * q;
  }
};

double rel(const mat& got, const matd& want) {
  return (got.cast<double>() - want).norm() / std::max(1e-30, want.norm());
}

}  // namespace

TEST_CASE("distributed attention equals single-device attention, forward and backward") {
  const int s = 64, d = 8;
  const mat q = random(s, d, 1), k = random(s, d, 2), v = random(s, d, 3), d_o = random(s, d, 4);
  for (const char* spec :
       {"full", "causal", "window:w=6", "bidir-window:w=4", "global-window:g=4,w=8",
        "causal-documents:n=3", "interleaved-documents:n=4", "shared-question:q=16,n=3",
        "prefix-lm:p=12", "random:density=0.3,b=4,seed=2"})
    for (const int cp : {2, 4, 8})
      for (const bool remapped : {false, true}) {
        const std::string what =
            std::string(spec) + ", cp " + std::to_string(cp) + (remapped ? ", re-mapped" : "");
        CAPTURE(what);
        const dense_mask m = masks::by_name(spec, s).dense();
        const std::vector<int> order = remapped ? remap(m, cp).order : identity_order(s);
        const round_assignment plan = assign_rounds(grid(m, order, cp));
        cp_attention run(m, order, plan);
        const auto f = run.forward(q, k, v);
        const auto b = run.backward(d_o);
        const reference ref(m, q.cast<double>(), k.cast<double>(), v.cast<double>(),
                            d_o.cast<double>());
        CHECK(rel(f.o, ref.o) < 1e-5);
        CHECK(rel(b.dq, ref.dq) < 1e-5);
        CHECK(rel(b.dk, ref.dk) < 1e-5);
        CHECK(rel(b.dv, ref.dv) < 1e-5);
        const auto again = run.forward(q, k, v);
        CHECK(again.o == f.o);
        CHECK(run.backward(d_o).dq == b.dq);
      }
}

TEST_CASE("in double precision throughout: the ranks compute and exchange doubles") {
  // Agreement to 1e-12 is out of float's reach (its epsilon is 1.2e-7): a rank that computed or
  // sent single precision anywhere would show.
  const int s = 48, d = 8;
  const matd q = random(s, d, 11).cast<double>(), k = random(s, d, 12).cast<double>(),
             v = random(s, d, 13).cast<double>(), d_o = random(s, d, 14).cast<double>();
  for (const char* spec : {"causal", "shared-question:q=12,n=3", "random:density=0.3,b=4,seed=5"})
    for (const int cp : {2, 4}) {
      CAPTURE(std::string(spec) + ", cp " + std::to_string(cp));
      const dense_mask m = masks::by_name(spec, s).dense();
      const std::vector<int> order = remap(m, cp).order;
      basic_cp_attention<double> run(m, order, assign_rounds(grid(m, order, cp)));
      const auto f = run.forward(q, k, v);
      const auto b = run.backward(d_o);
      const reference ref(m, q, k, v, d_o);
      const auto rel_d = [](const matd& got, const matd& want) {
        return (got - want).norm() / std::max(1e-30, want.norm());
      };
      CHECK(rel_d(f.o, ref.o) < 1e-12);
      CHECK(rel_d(b.dq, ref.dq) < 1e-12);
      CHECK(rel_d(b.dk, ref.dk) < 1e-12);
      CHECK(rel_d(b.dv, ref.dv) < 1e-12);
    }
}

TEST_CASE("rows that attend to nothing get zeros and pass no gradient") {
  const int s = 16;
  dense_mask m = masks::causal(s).dense();
  for (int k = 0; k < s; ++k) m.set(5, k, false);  // query 5 attends to nothing
  const mat q = random(s, 4, 5), k = random(s, 4, 6), v = random(s, 4, 7), d_o = random(s, 4, 8);
  cp_attention run(m, identity_order(s), assign_rounds(grid(m, identity_order(s), 4)));
  const auto f = run.forward(q, k, v);
  CHECK(f.o.row(5).isZero());
  CHECK(f.lse[5] == -std::numeric_limits<float>::infinity());
  const auto b = run.backward(d_o);
  CHECK(b.dq.row(5).isZero());
}

TEST_CASE("a plan that does not fit the mask, and inputs of the wrong size, are refused") {
  const dense_mask causal = masks::causal(16).dense(), full = masks::full(16).dense();
  const round_assignment for_causal = assign_rounds(grid(causal, identity_order(16), 4));
  CHECK_THROWS_WITH_AS(cp_attention(full, identity_order(16), for_causal),
                       doctest::Contains("(the plan does not fit the mask)"), config_error);
  CHECK_THROWS_WITH_AS(cp_attention(masks::causal(18).dense(), identity_order(18), for_causal),
                       "weft: cp attention: 18 tokens do not split into 4 equal slices",
                       config_error);
  cp_attention run(causal, identity_order(16), for_causal);
  CHECK_THROWS_WITH_AS(run.backward(random(16, 4, 1)),
                       "weft: cp attention: backward before forward", config_error);
  CHECK_THROWS_WITH_AS(run.forward(random(12, 4, 1), random(16, 4, 2), random(16, 4, 3)),
                       "weft: cp attention: Q has 12 rows, the mask 16 tokens", config_error);
}

TEST_CASE("a failing rank stops the run: the first error, with its rank and round") {
  const int s = 32;
  const dense_mask m = masks::causal(s).dense();
  const round_assignment plan = assign_rounds(grid(m, identity_order(s), 4));
  REQUIRE(plan.rounds >= 2);
  const mat q = random(s, 4, 1), k = random(s, 4, 2), v = random(s, 4, 3);
  {  // a throwing kernel on rank 2 in round 1: no std::terminate, no hang
    cp_attention_options o;
    o.on_task = [](int rank, int round, bool) {
      if (rank == 2 && round == 1) throw std::runtime_error("kernel failed");
    };
    cp_attention run(m, identity_order(s), plan, o);
    try {
      run.forward(q, k, v);
      FAIL("the run should fail");
    } catch (const cp_run_error& e) {
      CHECK(std::string(e.what()) == "weft: cp attention: rank 2, forward round 1: kernel failed");
      CHECK(e.rank == 2);
      CHECK(e.round == 1);
      CHECK(e.step == "forward");
      CHECK(e.cause);
      // One run-time error for every runtime: a handler of weft::run_error sees it too.
      const weft::run_error& base = e;
      CHECK(base.rank == 2);
      CHECK(!base.at);  // CP attention's rounds have no ops
    }
    // The forward failed: there is nothing to run the backward of.
    CHECK_THROWS_WITH_AS(run.backward(random(s, 4, 4)),
                         "weft: cp attention: backward before forward", config_error);
  }
  {  // a rank that stalls past the deadline: its peers time out, naming what they wait for
    cp_attention_options o;
    o.timeout = seconds(0.2);
    o.on_task = [](int rank, int round, bool backward) {
      if (backward && rank == 0 && round == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    };
    cp_attention run(m, identity_order(s), plan, o);
    run.forward(q, k, v);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      run.backward(random(s, 4, 4));
      FAIL("the run should time out");
    } catch (const cp_run_error& e) {
      CHECK(e.step == "backward");
      CHECK(e.rank != 0);
      CHECK(std::string(e.what()).find("timed out after 0.2") != std::string::npos);
      CHECK(std::string(e.what()).find("waiting to ") != std::string::npos);
      CHECK(!e.cause);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  }
}
