// weft's communication interface over MPI against the same MPI calls made directly, side by side
// in one run: point-to-point latency and bandwidth (a ping-pong between ranks 0 and 1) and
// all-to-all(v) over every rank, for the sizes the MoE example moves (8 KiB: an activation or a
// dispatch's rows) and larger. The host thread waits for weft's events, polling as MPI_Wait
// does (rt::progress_source). Raw and weft
// alternate round by round, so the machine's drift hits both; medians over the rounds.
//
//   mpirun -np 2 mpi_comm p2p [ROUNDS]
//   mpirun -np 4 mpi_comm a2a [ROUNDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include <weft/mpi/communicator.hpp>
#include <weft/mpi/environment.hpp>

using namespace weft;
using clock_type = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Iterations of `fn` that take about 20 ms (at least 3), agreed by every rank.
template <class Fn>
int iterations_for(Fn&& fn) {
  const auto t0 = clock_type::now();
  fn();
  fn();
  const double one = std::chrono::duration<double>(clock_type::now() - t0).count() / 2;
  int n = std::clamp(static_cast<int>(0.02 / std::max(one, 1e-7)), 3, 20000);
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return n;
}

/// Seconds per iteration of `fn`, `n` times after a barrier.
template <class Fn>
double time_per(int n, Fn&& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) fn();
  return std::chrono::duration<double>(clock_type::now() - t0).count() / n;
}

void p2p(mpi::communicator& c, int rounds) {
  const int me = c.rank(), peer = 1 - me;
  if (me == 0)
    std::printf(
        "ping-pong between 2 processes, one-way time (half a round trip), medians of %d "
        "rounds\n%10s %12s %12s %9s %14s\n",
        rounds, "bytes", "raw MPI us", "weft us", "weft/raw", "weft GB/s");
  for (const std::size_t bytes :
       {std::size_t{8}, std::size_t{512}, std::size_t{4} << 10, std::size_t{8} << 10,
        std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{1} << 20,
        std::size_t{4} << 20}) {
    std::vector<float> out(bytes / sizeof(float), 1.0f), in(out.size());
    const int n = static_cast<int>(out.size());
    const auto raw = [&] {
      MPI_Request q[2];
      if (me == 0) {
        MPI_Isend(out.data(), n, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(in.data(), n, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &q[1]);
      } else {
        MPI_Irecv(in.data(), n, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &q[1]);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        MPI_Isend(out.data(), n, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &q[0]);
      }
      MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    };
    const auto through_weft = [&] {
      if (me == 0) {
        const rt::event s = c.isend(out, peer, 0), r = c.irecv(in, peer, 0);
        r.wait();
        s.wait();
      } else {
        c.irecv(in, peer, 0).wait();
        c.isend(out, peer, 0).wait();
      }
    };
    const int k = iterations_for(raw);
    std::vector<double> a, b;
    for (int r = 0; r < rounds; ++r) {
      a.push_back(time_per(k, raw) / 2);
      b.push_back(time_per(k, through_weft) / 2);
    }
    if (me == 0)
      std::printf("%10zu %12.2f %12.2f %9.3f %14.3f\n", bytes, 1e6 * median(a), 1e6 * median(b),
                  median(b) / median(a), 1e-9 * static_cast<double>(bytes) / median(b));
  }
}

void a2a(mpi::communicator& c, int rounds) {
  const int p = c.size();
  std::vector<int> all(static_cast<std::size_t>(p));
  std::iota(all.begin(), all.end(), 0);
  MPI_Comm raw_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw_comm);
  if (c.rank() == 0)
    std::printf(
        "all-to-all(v) over %d processes, bytes each process sends, medians of %d rounds\n"
        "%10s %12s %12s %9s\n",
        p, rounds, "bytes", "raw MPI us", "weft us", "weft/raw");
  // 8 KiB: what the MoE example's dispatch and combine move per process (32 tokens x top-2 x
  // width 32, fp32); then larger.
  for (std::size_t bytes : {std::size_t{8} << 10, std::size_t{64} << 10, std::size_t{512} << 10,
                            std::size_t{4} << 20}) {
    const std::size_t each = bytes / sizeof(float) / static_cast<std::size_t>(p);
    std::vector<float> out(each * static_cast<std::size_t>(p), 1.0f), in(out.size());
    const std::vector<std::size_t> counts(static_cast<std::size_t>(p), each);
    std::vector<int> icounts(static_cast<std::size_t>(p), static_cast<int>(each)), displs;
    for (int j = 0; j < p; ++j) displs.push_back(j * static_cast<int>(each));
    const auto raw = [&] {
      MPI_Request q;
      MPI_Ialltoallv(out.data(), icounts.data(), displs.data(), MPI_FLOAT, in.data(),
                     icounts.data(), displs.data(), MPI_FLOAT, raw_comm, &q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    };
    const auto through_weft = [&] { c.all_to_all_v(out, counts, in, counts, all, 0).wait(); };
    through_weft();  // creates the group's communicator outside the timing
    const int k = iterations_for(raw);
    std::vector<double> a, b;
    for (int r = 0; r < rounds; ++r) {
      a.push_back(time_per(k, raw));
      b.push_back(time_per(k, through_weft));
    }
    if (c.rank() == 0)
      std::printf("%10zu %12.2f %12.2f %9.3f\n", bytes, 1e6 * median(a), 1e6 * median(b),
                  median(b) / median(a));
  }
  MPI_Comm_free(&raw_comm);
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(&argc, &argv);
  const std::string what = argc > 1 ? argv[1] : "p2p";
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 11;
  mpi::communicator c;
  if (what == "p2p" && c.size() != 2) {
    if (c.rank() == 0) std::fprintf(stderr, "mpi_comm p2p: run it on 2 processes\n");
    return 2;
  }
  if (what == "p2p")
    p2p(c, rounds);
  else
    a2a(c, rounds);
  std::fflush(stdout);
}
