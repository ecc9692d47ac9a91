// The MPI world of `weft run --backend mpi` (tools/process_world.hpp).
#include "process_world.hpp"

#include <weft/core/error.hpp>

#if WEFT_WITH_MPI
#include <weft/mpi/communicator.hpp>
#include <weft/mpi/environment.hpp>
#include <weft/mpi/slots.hpp>
#endif

namespace weft::cli {

#if WEFT_WITH_MPI
namespace {

mpi::threading threading_of(mpi_threading t) {
  switch (t) {
    case mpi_threading::multiple:
      return mpi::threading::multiple;
    case mpi_threading::progress:
      return mpi::threading::progress_thread;
    case mpi_threading::automatic:
      break;
  }
  return mpi::threading::automatic;
}

class mpi_world final : public process_world {
 public:
  explicit mpi_world(const run_args& o)
      : env_(nullptr, nullptr, {.threads = threading_of(o.threads)}),
        comm_(MPI_COMM_WORLD,
              {.reduce = o.reduce == reduce_order::library ? mpi::reduction_order::library
                                                           : mpi::reduction_order::member,
               .threads = env_.threads()}) {}
  rt::communicator& comm() override { return comm_; }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    v = v.substr(0, v.find_first_of(",\n"));
    return v + ", " + std::to_string(comm_.size()) + " processes, " +
           (comm_.multiple() ? "MPI_THREAD_MULTIPLE" : "a progress thread owns MPI") + ", " +
           (comm_.order() == mpi::reduction_order::member ? "sums in member order"
                                                          : "the library's sums");
  }
  unsigned concurrent_workers(unsigned per_process) override {
    return mpi::concurrent_workers(MPI_COMM_WORLD, per_process);
  }

 private:
  void end_job(int code) override { mpi::environment::abort(code); }

  mpi::environment env_;
  mpi::communicator comm_;
};

}  // namespace

std::unique_ptr<process_world> start_mpi(const run_args& o) {
  return std::make_unique<mpi_world>(o);
}
#else
std::unique_ptr<process_world> start_mpi(const run_args&) {
  throw config_error(
      "weft: this weft was built without MPI: install libopenmpi-dev and openmpi-bin, then "
      "build again");
}
#endif

}  // namespace weft::cli
