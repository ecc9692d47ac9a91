// `weft run --backend mpi`: the world of processes a run spans, behind an interface so that only
// one file of the tool includes MPI (and a weft built without MPI still builds).
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include <weft/rt/comm.hpp>

#include "commands/run.hpp"

namespace weft::cli {

class process_world {
 public:
  virtual ~process_world() = default;
  virtual rt::communicator& comm() = 0;
  /// The library, its thread level and how it sums: for the report.
  virtual std::string describe() const = 0;
  /// How many compute workers of the world run at once, each process running `per_process`:
  /// the shared-worker simulator's pool for the prediction. Collective.
  virtual unsigned concurrent_workers(unsigned per_process) = 0;
  /// Ends every process of the job with `code`: after a failure, peers may wait in MPI for data
  /// that never comes, so the job ends as a whole.
  [[noreturn]] void abort(int code) {
    end_job(code);
    std::_Exit(code);  // end_job does not return; should it, this process still ends
  }

 private:
  virtual void end_job(int code) = 0;
};

/// Starts MPI for `weft run --backend mpi`; throws config_error when this weft was built
/// without it.
std::unique_ptr<process_world> start_mpi(const run_args& o);

}  // namespace weft::cli
