// A consumer of weft::mpi: MPI started by weft, a communicator over the world (one process when
// run without mpirun, as this test does), an all-reduce and a ring transfer through it.
#include <weft/mpi/communicator.hpp>
#include <weft/mpi/environment.hpp>

#include <cstdio>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  weft::mpi::environment env(&argc, &argv);
  weft::mpi::communicator world;
  std::vector<int> all(static_cast<std::size_t>(world.size()));
  std::iota(all.begin(), all.end(), 0);
  std::vector<double> v{1.5};
  world.all_reduce_sum(v, all, 0).wait();
  std::vector<double> got(1);
  const int next = (world.rank() + 1) % world.size();
  const int prev = (world.rank() + world.size() - 1) % world.size();
  const weft::rt::event r = world.irecv(got, prev, 0);
  world.isend(v, next, 0).wait();
  r.wait();
  if (v[0] != 1.5 * world.size() || got[0] != v[0]) return 1;
  std::printf("rank %d of %d: %g\n", world.rank(), world.size(), v[0]);
}
