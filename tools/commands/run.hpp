// `weft run`: a tiny model trained one step on in-process ranks (or MPI processes) under the
// schedule; measured metrics beside the prediction, loss and gradients against a serial run.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/time.hpp>
#include "options.hpp"

namespace weft::cli {

/// `--backend`: ranks as threads of this process, or one MPI process each.
enum class backend_kind { inproc, mpi };
/// `--reduce`: sums in member order (bit for bit as in-process), or the MPI library's own.
enum class reduce_order { member, library };
/// `--mpi-threads`: who issues MPI calls.
enum class mpi_threading { automatic, multiple, progress };

struct run_args {
  static constexpr std::string_view name = "run";
  pipeline_args pipeline;
  std::string schedule_file;  ///< a PyTorch schedule CSV instead of a generator
  int ep = 0;                 ///< expert-parallel replicas; 0: 2 with MoE layers
  delay_args delay;
  backend_kind backend = backend_kind::inproc;
  reduce_order reduce = reduce_order::member;
  mpi_threading threads = mpi_threading::automatic;
  int workers = 0;       ///< compute threads; 0: 2 in-process, 1 per MPI process
  failure_args failing;  ///< --inject-fault, --timeout
  output_args output;
};

int run_command(const run_args& o);

}  // namespace weft::cli
