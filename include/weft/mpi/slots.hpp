// How many compute workers of a world of processes run at once — what the shared-worker
// simulator needs to predict a run over MPI (sim/shared_workers.hpp): per machine, the lesser of
// its cores and its processes' compute workers, summed over the machines.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <thread>

#include <weft/mpi/environment.hpp>

namespace weft::mpi {

/// Collective over `comm`: every process passes its compute workers and gets the world's.
inline unsigned concurrent_workers(MPI_Comm comm, unsigned workers_per_process) {
  MPI_Comm node = MPI_COMM_NULL;
  detail::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                "MPI_Comm_split_type");
  int local = 0, here = 0;
  detail::check(MPI_Comm_size(node, &local), "MPI_Comm_size");
  detail::check(MPI_Comm_rank(node, &here), "MPI_Comm_rank");
  MPI_Comm_free(&node);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // One process per machine speaks for it.
  unsigned mine =
      here == 0 ? std::min(cores, static_cast<unsigned>(local) * workers_per_process) : 0u;
  unsigned all = 0;
  detail::check(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED, MPI_SUM, comm), "MPI_Allreduce");
  return std::max(1u, all);
}

}  // namespace weft::mpi
