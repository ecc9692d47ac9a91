// `weft run`'s options (commands/run.hpp) on CLI11: the pipeline or a schedule file, the backend,
// the links and a fault; and the rules CLI11 cannot express (`check`). The groups it shares with
// other subcommands are option_groups.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

void define(CLI::App& sub, run_args& o, deferred& later) {
  schedule_option(sub, o.pipeline, true);
  pipeline_options(sub, o.pipeline, true);
  sub.add_option("--schedule-file", o.schedule_file,
                 "a PyTorch schedule CSV (whole chunks; e.g. weft search --out) instead of "
                 "--schedule, --pp and --micro: run on the tiny dense model");
  sub.add_option("--ep", o.ep,
                 "expert-parallel replicas of each pipeline rank (default 2 with MoE layers)")
      ->check(whole_in(1, 64));
  delay_option(sub, o.delay, later,
               "the emulated link for transfers and all-to-alls: none, intra-node, inter-node, "
               "or cross-dc[:KM[:RATIO]] (data centres KM apart, 1000 by default; bandwidth / "
               "RATIO, 1 by default)");
  sub.add_option("--backend", o.backend,
                 "inproc: every rank a thread of this process; mpi: one process per rank, "
                 "started by mpirun (docs/mpi.md)")
      ->transform(
          one_of<backend_kind>({{"inproc", backend_kind::inproc}, {"mpi", backend_kind::mpi}}));
  sub.add_option("--reduce", o.reduce,
                 "mpi: sums in member order (equal to inproc bit for bit) or the MPI library's "
                 "own (MPI_Iallreduce, MPI_Ireduce_scatter_block)")
      ->transform(one_of<reduce_order>(
          {{"member", reduce_order::member}, {"library", reduce_order::library}}));
  sub.add_option("--mpi-threads", o.threads,
                 "mpi: callers issue MPI calls (multiple, needs MPI_THREAD_MULTIPLE) or one "
                 "progress thread owns them (progress); auto: multiple when MPI provides it")
      ->transform(one_of<mpi_threading>({{"auto", mpi_threading::automatic},
                                         {"multiple", mpi_threading::multiple},
                                         {"progress", mpi_threading::progress}}));
  sub.add_option("--workers", o.workers,
                 "threads that run compute (default: 2 for all in-process ranks, 1 per MPI "
                 "process)")
      ->check(whole_in(1, 256));
  failure_options(sub, o.failing, later,
                  "KIND:RANK[:N] with KIND throw, exit, kill or stall: world rank RANK fails "
                  "before its N-th op (0 first, the default), to see how a run ends");
  output_options(sub, o.output, true);
}

void check(const run_args& o) {
  const pipeline_args& p = o.pipeline;
  if (o.schedule_file.empty()) require_shape(p, true);
  if (!o.schedule_file.empty() && (p.shaped() || p.chunks != 2 || o.ep != 0))
    bad("--schedule-file holds the whole schedule (ranks, micro-batches, chunks; whole blocks on "
        "the tiny dense model): it takes no --schedule, --pp, --micro, --chunks, --layers, --moe, "
        "--shared-expert, --fb-overlap, --transfers, --ep, AMPipe or p2p options");
  check_pipeline(p, takes_chunks(p.schedule), false, false);
  if (o.ep > 1 && !p.sub_stages()) bad("--ep needs MoE layers (--moe or --fb-overlap)");
  const bool mpi = o.backend == backend_kind::mpi;
  if (mpi && o.delay.link != link_choice::none)
    bad("--delay-model emulates links between in-process ranks; over MPI the links are real: "
        "leave it out with --backend mpi");
  if (!mpi && (o.reduce != reduce_order::member || o.threads != mpi_threading::automatic))
    bad("--reduce and --mpi-threads apply to --backend mpi");
  if (ends_process(o.failing.fault) && !mpi)
    bad("--inject-fault " + o.failing.fault.text.substr(0, o.failing.fault.text.find(':')) +
        " ends a process: it needs --backend mpi (in-process, every rank would go)");
}

}  // namespace weft::cli
