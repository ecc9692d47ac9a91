// The MoE example over MPI: a tiny MoE on 4 processes (2 pipeline ranks x 2 expert-parallel),
// DualPipeV with fb-overlap and 1F1B as in examples/train_moe_dualpipev.cpp, over the machine's
// own links (no emulated delay). Each schedule runs several times; each run calibrates the cost
// model — compute and comm ops' measured times (`calibrated` with the comm spans), the runtime's
// reaction to an event, its cost per unit — and the shared-worker simulator predicts that run,
// with as many workers as the world's processes can run at once. Then the same schedules on 4
// in-process ranks. Medians; the error is the median of each run's own (predicted - measured) /
// measured, with its range.
//
//   mpirun -np 4 mpi_moe [RUNS [SPIN_US [COMM_WORKERS]]]
//   (SPIN_US: the progress thread's spin, mpi::options; COMM_WORKERS: 0 runs comm streams on the
//   compute workers)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <weft/exec/moe_executor.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/mpi/communicator.hpp>
#include <weft/mpi/slots.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/prediction.hpp>

#include "moe_example.hpp"

using namespace weft;

namespace {

using bench::median;
using bench::micro;
using bench::pipeline_ranks;
using bench::replicas;
unsigned comm_workers = 1;

/// Rank 0 works alone meanwhile; the others wait without spinning on the cores it needs.
void quiet_barrier() {
  MPI_Request q;
  MPI_Ibarrier(MPI_COMM_WORLD, &q);
  for (int done = 0; !done;) {
    MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

struct figures {
  double step = 0, predicted = 0, in_process = 0;
  double error = 0, error_min = 0, error_max = 0;  // (predicted - measured) / measured, per run
  double exposed[3] = {}, exposed_pred[3] = {};
};

figures compare(mpi::communicator& world, const schedule& s, const exec::moe_config& c, int runs,
                unsigned workers) {
  const exec::moe_model<float> model(c);
  figures f;
  // In-process first, on rank 0 alone: 4 ranks, 2 compute workers, no emulated link.
  if (world.rank() == 0) {
    exec::moe_executor<float> ex(model, {.workers = 2});
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) t.push_back(ex.run(s).time.makespan.count());
    f.in_process = median(t);
  }
  quiet_barrier();
  exec::moe_executor<float> ex(model, {.workers = 1, .comm_workers = comm_workers, .comm = &world});
  std::vector<double> step, predicted, error, exposed[3], exposed_pred[3];
  for (int r = 0; r < runs; ++r) {
    const exec::run_result<float> run = ex.run(s);  // every rank: the whole timeline
    const step_metrics got = measure(run.prog, run.time);
    const step_metrics want =
        measure(run.prog, predicted_run(run.prog, run.time, run, workers, replicas));
    step.push_back(got.makespan.count());
    predicted.push_back(want.makespan.count());
    error.push_back((want.makespan - got.makespan) / got.makespan);
    for (int ph = 0; ph < 3; ++ph) {
      exposed[ph].push_back(got.exposed_by_phase[ph].count());
      exposed_pred[ph].push_back(want.exposed_by_phase[ph].count());
    }
  }
  f.step = median(step);
  f.predicted = median(predicted);
  f.error = median(error);
  f.error_min = *std::min_element(error.begin(), error.end());
  f.error_max = *std::max_element(error.begin(), error.end());
  for (int ph = 0; ph < 3; ++ph) {
    f.exposed[ph] = median(exposed[ph]);
    f.exposed_pred[ph] = median(exposed_pred[ph]);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(&argc, &argv);
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  mpi::options o;
  if (argc > 2) o.spin = std::chrono::microseconds(std::atoi(argv[2]));
  if (argc > 3) comm_workers = static_cast<unsigned>(std::atoi(argv[3]));
  mpi::communicator world(MPI_COMM_WORLD, o);
  if (world.size() != pipeline_ranks * replicas) {
    if (world.rank() == 0) std::fprintf(stderr, "mpi_moe: run it on 4 processes\n");
    return 2;
  }
  const unsigned workers = mpi::concurrent_workers(MPI_COMM_WORLD, 1);
  const stage_set moe = stage_set::moe_with_shared();
  struct row {
    const char* name;
    schedule s;
    exec::moe_config c;
  };
  const row rows[] = {
      {"1F1B", one_f_one_b({.ranks = pipeline_ranks, .micro = micro, .layers = 4, .stages = moe}),
       bench::example_config(pipeline_ranks, 4)},
      {"DualPipeV + fb-overlap",
       dualpipev({.ranks = pipeline_ranks,
                  .micro = micro,
                  .layers = 2,
                  .stages = moe,
                  .overlap = overlap_options::all()}),
       bench::example_config(2 * pipeline_ranks, 2)}};
  if (world.rank() == 0) {
    std::printf(
        "4 MPI processes (2 pipeline x 2 expert-parallel), 1 compute worker each, %u run "
        "at once; %d runs each, medians\n",
        workers, runs);
    std::printf("%-24s %10s %10s %8s %17s %12s   exposed comm, ms, measured / predicted\n",
                "schedule", "MPI ms", "predicted", "error", "error per run", "in-process");
    std::printf("%-24s %10s %10s %8s %17s %12s   %15s   %15s   %15s\n", "", "", "", "",
                "min .. max", "ms", "warm-up", "steady", "cool-down");
  }
  for (const row& r : rows) {
    const figures f = compare(world, r.s, r.c, runs, workers);
    if (world.rank() != 0) continue;
    std::printf("%-24s %10.2f %10.2f %+7.1f%% %+7.1f .. %+5.1f%% %12.2f", r.name, 1e3 * f.step,
                1e3 * f.predicted, 100 * f.error, 100 * f.error_min, 100 * f.error_max,
                1e3 * f.in_process);
    for (int ph = 0; ph < 3; ++ph)
      std::printf("   %6.2f / %6.2f", 1e3 * f.exposed[ph], 1e3 * f.exposed_pred[ph]);
    std::printf("\n");
  }
}
