// The MPI backend, run under mpirun on 2, 3 and 4 processes (every rank runs every test case):
// the communicator's operations against values worked out by hand, its errors, failure notices,
// and the runner over a world of processes against an in-process run of the same schedule, bit
// for bit. WEFT_TEST_MPI_THREADS=progress runs it all with one progress thread owning MPI.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/mpi/communicator.hpp>
#include <weft/mpi/environment.hpp>
#include <weft/mpi/slots.hpp>

using namespace weft;

// An MPI call's failure is a failed run, handled where the runtime's own are.
static_assert(std::is_base_of_v<run_error, mpi::mpi_error>);
using namespace std::chrono_literals;

namespace {

mpi::threading threads = mpi::threading::automatic;

mpi::options with(mpi::reduction_order order = mpi::reduction_order::member) {
  return {.reduce = order, .threads = threads};
}

std::vector<int> everyone(const rt::communicator& c) {
  std::vector<int> v(static_cast<std::size_t>(c.size()));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// Waits for `e`, failing the test (instead of hanging) after 20 s.
void finish(const rt::event& e) { REQUIRE(e.wait_for(20s)); }

/// A value whose sums depend on their order in fp32: big and small magnitudes by rank.
float awkward(int rank, std::size_t k) {
  const float big = (rank % 2 ? -1.0f : 1.0f) * 3.0e7f;
  return rank == 0 ? 1.25f + static_cast<float>(k) : big + static_cast<float>(rank * 7 + k) * 0.3f;
}

}  // namespace

TEST_CASE("point-to-point: a ring, FIFO per source and tag, tags kept apart") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int r = c.rank(), n = c.size(), next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<float> first(3), second(3), tagged(3);
  const std::vector<float> a{100.0f * r, 1, 2}, b{100.0f * r + 50, 3, 4}, t{-1.0f * r, 5, 6};
  // Receives first, the tagged one between the two of tag 0.
  const rt::event r1 = c.irecv(first, prev, 0);
  const rt::event rt_ = c.irecv(tagged, prev, 7);
  const rt::event r2 = c.irecv(second, prev, 0);
  for (const rt::event& e : {c.isend(a, next, 0), c.isend(t, next, 7), c.isend(b, next, 0)})
    finish(e);
  for (const rt::event& e : {r1, r2, rt_}) finish(e);
  CHECK(first == std::vector<float>{100.0f * prev, 1, 2});
  CHECK(second == std::vector<float>{100.0f * prev + 50, 3, 4});
  CHECK(tagged == std::vector<float>{-1.0f * prev, 5, 6});
  // fp64 keeps every bit: 1 + 2^-40 is not a float.
  std::vector<double> fine{1.0 + std::ldexp(1.0, -40)}, got(1);
  const rt::event rd = c.irecv(got, prev, 3);
  finish(c.isend(fine, next, 3));
  finish(rd);
  CHECK(got[0] == fine[0]);
}

TEST_CASE("all-to-all(v): member i's j-th part lands at member j, in member order") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int r = c.rank(), n = c.size();
  const auto all = everyone(c);
  // Member i sends i + j + 1 values of 1000 i + j to member j.
  std::vector<std::size_t> sc, rc;
  std::vector<double> send;
  for (int j = 0; j < n; ++j) {
    sc.push_back(static_cast<std::size_t>(r + j + 1));
    rc.push_back(static_cast<std::size_t>(j + r + 1));
    send.insert(send.end(), sc.back(), 1000.0 * r + j);
  }
  std::vector<double> recv(std::accumulate(rc.begin(), rc.end(), std::size_t{0}));
  finish(c.all_to_all_v(send, sc, recv, rc, all, 0));
  std::vector<double> want;
  for (int i = 0; i < n; ++i)
    want.insert(want.end(), static_cast<std::size_t>(i + r + 1), 1000.0 * i + r);
  CHECK(recv == want);
}

TEST_CASE("sums in member order equal the left fold 0 + m0 + m1 + ... bit for bit") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int r = c.rank(), n = c.size();
  const auto all = everyone(c);
  constexpr std::size_t len = 5;
  std::vector<float> mine(len);
  for (std::size_t k = 0; k < len; ++k) mine[k] = awkward(r, k);
  std::vector<float> fold(len, 0.0f);
  for (int j = 0; j < n; ++j)
    for (std::size_t k = 0; k < len; ++k) fold[k] += awkward(j, k);

  std::vector<float> reduced = mine;
  finish(c.all_reduce_sum(reduced, all, 0));
  CHECK(reduced == fold);

  // Reduce-scatter: every member holds n slices; member j gets the sum of the j-th ones.
  std::vector<float> slices;
  for (int j = 0; j < n; ++j)
    for (std::size_t k = 0; k < len; ++k) slices.push_back(awkward(r, k) + static_cast<float>(j));
  std::vector<float> got(len), want(len, 0.0f);
  for (int i = 0; i < n; ++i)
    for (std::size_t k = 0; k < len; ++k) want[k] += awkward(i, k) + static_cast<float>(r);
  finish(c.reduce_scatter_sum(slices, got, all, 1));
  CHECK(got == want);

  // A group of the even ranks, on a channel of its own.
  std::vector<int> even;
  for (int j = 0; j < n; j += 2) even.push_back(j);
  if (r % 2 == 0) {
    std::vector<double> v{static_cast<double>(r) + 0.5};
    finish(c.all_reduce_sum(v, even, 4));
    double s = 0;
    for (const int j : even) s += j + 0.5;
    CHECK(v[0] == s);
  }
}

TEST_CASE("the library's sums agree with member order within rounding") {
  mpi::communicator c(MPI_COMM_WORLD, with(mpi::reduction_order::library));
  const int r = c.rank(), n = c.size();
  const auto all = everyone(c);
  std::vector<double> v{1.0 / (r + 1), 2.0 * r};
  finish(c.all_reduce_sum(v, all, 0));
  double h = 0;
  for (int j = 1; j <= n; ++j) h += 1.0 / j;
  CHECK(v[0] == doctest::Approx(h).epsilon(1e-12));
  CHECK(v[1] == doctest::Approx(n * (n - 1.0)));
  std::vector<double> slices(static_cast<std::size_t>(n), 1.0 + r), mine(1);
  finish(c.reduce_scatter_sum(slices, mine, all, 0));
  CHECK(mine[0] == doctest::Approx(n * (n + 1) / 2.0));
}

TEST_CASE("all-gather and barrier over the world and over a sub-group") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int r = c.rank(), n = c.size();
  const auto all = everyone(c);
  std::vector<float> mine{static_cast<float>(r), static_cast<float>(10 * r)};
  std::vector<float> got(2 * static_cast<std::size_t>(n));
  finish(c.all_gather(mine, got, all, 2));
  for (int j = 0; j < n; ++j) {
    CHECK(got[2 * static_cast<std::size_t>(j)] == static_cast<float>(j));
    CHECK(got[2 * static_cast<std::size_t>(j) + 1] == static_cast<float>(10 * j));
  }
  finish(c.barrier(all, 0));
  // The last two ranks, listed backwards: member order is the list's, not the ranks'.
  if (r >= n - 2) {
    const std::vector<int> pair{n - 1, n - 2};
    std::vector<float> both(4);
    finish(c.all_gather(mine, both, pair, 0));
    CHECK(both == std::vector<float>{static_cast<float>(n - 1), static_cast<float>(10 * (n - 1)),
                                     static_cast<float>(n - 2), static_cast<float>(10 * (n - 2))});
  }
}

TEST_CASE("concurrent workers: one machine, the lesser of its cores and its processes' workers") {
  // mpirun starts every process of these tests on this machine.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CHECK(mpi::concurrent_workers(MPI_COMM_WORLD, 1) == std::min(cores, unsigned(n)));
  CHECK(mpi::concurrent_workers(MPI_COMM_WORLD, 64) == std::min(cores, 64u * unsigned(n)));
}

TEST_CASE("bad calls are refused on the caller's thread, with what is wrong") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int n = c.size();
  std::vector<float> v(3);
  CHECK_THROWS_WITH_AS(
      c.isend(v, n, 0),
      ("weft: mpi: send to rank " + std::to_string(n) + ", outside a world of " + std::to_string(n))
          .c_str(),
      config_error);
  rt::const_data huge;
  huge.data = v.data();
  huge.count = std::size_t{INT_MAX} + 1;
  CHECK_THROWS_AS(c.isend(huge, 0, 0), config_error);
  const std::vector<int> not_me{(c.rank() + 1) % n};
  CHECK_THROWS_WITH_AS(c.barrier(not_me, 0),
                       ("weft: mpi: rank " + std::to_string(c.rank()) +
                        " joins a collective of a group it is not in")
                           .c_str(),
                       std::invalid_argument);
  const auto all = everyone(c);
  const std::vector<std::size_t> counts(static_cast<std::size_t>(n), 1);
  // The counts add up to n values; the buffers hold n + 1.
  std::vector<float> send(static_cast<std::size_t>(n) + 1), recv(send.size());
  CHECK_THROWS_WITH_AS(c.all_to_all_v(send, counts, recv, counts, all, 0),
                       doctest::Contains("all-to-all counts do not add up to the buffers"),
                       std::invalid_argument);
  CHECK(c.fault().empty());
}

TEST_CASE("a receive shorter than its send, and a failure notice, become faults") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int r = c.rank(), n = c.size();
  // Rank 1 expects 2 values where rank 0 sends 3.
  if (r == 0) {
    std::vector<float> three{1, 2, 3};
    c.isend(three, 1, 0).wait_for(5s);
  }
  if (r == 1) {
    std::vector<float> two(2);
    const rt::event e = c.irecv(two, 0, 0);
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (c.fault().empty() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    CHECK(!e.done());
    CHECK(c.fault().find("receive from rank 0") != std::string::npos);
  }
  finish(mpi::communicator(MPI_COMM_WORLD, with()).barrier(everyone(c), 0));
  // The last rank announces a failure; every other rank's communicator says so.
  mpi::communicator d(MPI_COMM_WORLD, with());
  if (r == n - 1) d.announce_failure("kernel X threw");
  if (r != n - 1) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (d.fault().empty() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    CHECK(d.fault() == "rank " + std::to_string(n - 1) + ": kernel X threw");
  }
}

TEST_CASE("the runner over processes: every whole-block generator equals the in-process run") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int P = c.size(), M = 2 * P;
  const pipeline_params p{.ranks = P, .micro = M};
  struct case_ {
    const char* name;
    schedule s;
    int stages;
  };
  std::vector<case_> cases{
      {"gpipe", gpipe(p), P},
      {"1f1b", one_f_one_b(p), P},
      {"zb-h1", zb_h1(p), P},
      {"interleaved", interleaved({.ranks = P, .micro = M, .chunks = 2}), 2 * P},
      {"zb-v", zb_v(p), 2 * P},
      {"dualpipev", dualpipev(p), 2 * P}};
  if (P % 2 == 0) cases.push_back({"dualpipe", dualpipe(p), P});  // two directions: even ranks
  for (const case_& k : cases) {
    CAPTURE(k.name);
    exec::dense_model<float> model({.stages = k.stages, .micro = M, .seed = 11});
    exec::dense_executor<float> over_mpi(model, {.workers = 1, .comm = &c});
    const exec::run_result<float> run = over_mpi.run(k.s);
    CHECK(run.time.makespan > seconds(0));
    // Every op of the whole world has its times, on every rank.
    int unmeasured = 0;
    for (std::size_t i = 0; i < run.time.finish.size(); ++i)
      unmeasured += run.time.finish[i] < seconds(0);
    CHECK(unmeasured == 0);
    if (c.rank() != 0) continue;
    exec::dense_executor<float> in_process(model);
    CHECK(exec::same_bits(run, in_process.run(k.s)));
  }
}

TEST_CASE("the runner over processes: MoE with fb-overlap equals the in-process run") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  // 4 processes: 2 pipeline ranks x 2 expert-parallel replicas; otherwise one replica per rank.
  const int R = c.size() % 2 == 0 ? 2 : 1, P = c.size() / R;
  if (P < 2) return;
  const pipeline_params p{.ranks = P,
                          .micro = 2 * P,
                          .layers = 2,
                          .stages = stage_set::moe_with_shared(),
                          .overlap = overlap_options::all()};
  exec::moe_model<float> model(
      {.stages = 2 * P, .layers = 2, .micro = 2 * P, .replicas = R, .seed = 5});
  exec::moe_executor<float> over_mpi(model, {.workers = 1, .comm = &c});
  const exec::run_result<float> run = over_mpi.run(dualpipev(p));
  if (c.rank() != 0) return;
  exec::moe_executor<float> in_process(model);
  CHECK(exec::same_bits(run, in_process.run(dualpipev(p))));
}

TEST_CASE("the runner over processes: a world of the wrong size, a throwing op, a stuck peer") {
  mpi::communicator c(MPI_COMM_WORLD, with());
  const int P = c.size(), r = c.rank();
  exec::dense_model<float> small({.stages = P + 1, .micro = 2});
  exec::dense_executor<float> too_many(small, {.comm = &c});
  CHECK_THROWS_WITH_AS(too_many.run(one_f_one_b({.ranks = P + 1, .micro = 2})),
                       ("weft: run: the program runs on " + std::to_string(P + 1) + " ranks (" +
                        std::to_string(P + 1) +
                        " pipeline ranks x 1 replicas); the communicator has " + std::to_string(P))
                           .c_str(),
                       config_error);

  exec::dense_model<float> model({.stages = P, .micro = 4});
  const schedule s = one_f_one_b({.ranks = P, .micro = 4});
  {  // The last rank's third op throws: it names itself; every other rank names it.
    mpi::communicator w(MPI_COMM_WORLD, with());
    int seen = 0;
    exec::dense_executor<float> ex(model, {.timeout = 20s,
                                           .before_op =
                                               [&](int rank, const op&) {
                                                 if (rank == P - 1 && ++seen == 3)
                                                   throw std::runtime_error("boom");
                                               },
                                           .comm = &w});
    const auto t0 = std::chrono::steady_clock::now();
    std::string what;
    try {
      ex.run(s);
    } catch (const exec::run_error& e) {
      what = e.what();
    }
    CHECK(std::chrono::steady_clock::now() - t0 < 10s);  // long before the timeout
    if (r == P - 1)
      CHECK(what.find("rank " + std::to_string(P - 1) + ", ") != std::string::npos);
    else
      CHECK(what.find("stopped: rank " + std::to_string(P - 1) + ": ") != std::string::npos);
    CHECK(what.find("boom") != std::string::npos);
    // The world still holds the failed run's operations: no second run on it.
    CHECK_THROWS_WITH_AS(ex.run(s), doctest::Contains("start the processes again"),
                         exec::run_error);
  }
  {  // Rank 0 stalls 1.5 s in its first op; the others time out after 0.3 s, naming what they
     // wait at, and rank 0 hears of it.
    mpi::communicator w(MPI_COMM_WORLD, with());
    bool once = true;
    exec::dense_executor<float> ex(model, {.timeout = 300ms,
                                           .before_op =
                                               [&](int rank, const op&) {
                                                 if (rank == 0 && std::exchange(once, false))
                                                   std::this_thread::sleep_for(1500ms);
                                               },
                                           .comm = &w});
    std::string what;
    try {
      ex.run(s);
    } catch (const exec::run_error& e) {
      what = e.what();
    }
    CHECK(what.find("waiting:\n  rank " + std::to_string(r) + ": ") != std::string::npos);
    if (r == 1) CHECK(what.find("not finished after 0.3 s") != std::string::npos);
  }
  finish(c.barrier(everyone(c), 9));
}

int main(int argc, char** argv) {
  const char* mode = std::getenv("WEFT_TEST_MPI_THREADS");
  if (mode && std::string(mode) == "progress") threads = mpi::threading::progress_thread;
  mpi::environment env(&argc, &argv, {.threads = threads, .report_termination = false});
  threads = env.threads();
  doctest::Context ctx(argc, argv);
  if (env.world_rank() != 0) ctx.setOption("out", "/dev/null");  // one report, rank 0's
  const int failed = ctx.run();
  // Every rank's verdict: a failure anywhere fails the job.
  int any = failed != 0, all_ok = 0;
  MPI_Allreduce(&any, &all_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return all_ok;
}
