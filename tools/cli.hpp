// The weft tool's command line: what each subcommand was asked to do, parsed and range-checked
// (CLI11), with no side effects, so the fuzzer can drive it as the tool does.
#pragma once

#include <string>
#include <vector>

#include <weft/plan/job.hpp>
#include <weft/sim/cost.hpp>

namespace weft::cli {

/// Exit codes: 0 done (legal, generated, simulated), 1 illegal, 2 bad input.
inline constexpr int exit_ok = 0, exit_illegal = 1, exit_bad_input = 2;

/// How many violations `check` and `verify` print (and put in `--json`) before "and N more".
inline constexpr std::size_t violations_shown = 20;

/// `--cost F=..,B=..`: a rank's share of the model, in schedule units.
struct costs {
  double F = 1, B = 2, W = 1, FB = -1, A2A = 0, P2P = 0;
};

struct request {
  std::string command;  ///< generate, check, ..., plan-cp, search, plan

  // The pipeline (generate, check, simulate, compare, run).
  std::string schedule;                ///< --schedule
  std::vector<std::string> schedules;  ///< compare: --schedules
  int pp = 0, micro = 0, chunks = 2, layers = 1;
  bool moe = false, shared_expert = false, fb_overlap = false, transfers = false;
  std::string format = "text";  ///< generate
  int max_live = 0;             ///< check

  // AMPipe and pipe-experts (seed: ampipe), on MoE layers or the ampipe-16p preset.
  std::string ampipe_degree = "1";  ///< --ampipe-degree: 1..255, or auto (ampipe-16p)
  int multi_data = 1;               ///< --pipe-experts-multi-data
  bool multi_stream = false;        ///< --pipe-experts-multi-stream
  bool tp_sp_overlap = false;       ///< --ampipe-tp-sp-comm-overlap
  /// The AMPipe degree as a number (0 for auto). `parse` leaves the text in decimal, as the
  /// range check read it ("0x2" is 2, not "0").
  int degree() const { return ampipe_degree == "auto" ? 0 : std::stoi(ampipe_degree); }
  bool pipe_experts() const { return multi_data > 1 || multi_stream; }
  bool ampipe() const { return degree() != 1 || pipe_experts() || tp_sp_overlap; }

  // Pipeline transfers (seed: pp-cross-dc-comm-overlap).
  std::string p2p = "pytorch";       ///< --p2p: pytorch, megatron or blocking
  bool overlap_p2p = false;          ///< --overlap-p2p
  bool p2p_multi_stream = false;     ///< --multi-stream
  bool log_allreduce = false;        ///< --log-allreduce
  bool async_log_allreduce = false;  ///< --async-log-allreduce
  bool nanopipe = false;             ///< --nanopipe
  bool p2p_options() const {
    return p2p != "pytorch" || overlap_p2p || p2p_multi_stream || log_allreduce ||
           async_log_allreduce;
  }

  // simulate, compare
  costs cost;
  weft::contention_facts contention;  ///< --contention
  /// --contention on or links: a preset's scenario adds its own resources (a site's uplink).
  bool contention_scenario = false;
  std::string preset;  ///< "", deepseek-v3, ampipe-16p or llama2-70b-xdc
  bool barrier = false;

  // run
  int ep = 0;                        ///< expert-parallel replicas; 0: 2 with MoE layers
  std::string delay = "none";        ///< none, intra-node, inter-node or cross-dc[:KM[:RATIO]]
  bool delay_km_given = false;       ///< cross-dc:KM named the distance
  double delay_km = 1000;            ///< cross-dc: distance between the data centres
  double delay_ratio = 1;            ///< cross-dc: the interconnect's bandwidth convergence ratio
  bool delay_ratio_given = false;    ///< cross-dc:KM:RATIO named the ratio
  std::string backend = "inproc";    ///< inproc (ranks are threads) or mpi (one process per rank)
  std::string reduce = "member";     ///< mpi: sums in member order, or the MPI library's
  std::string mpi_threads = "auto";  ///< mpi: auto, multiple or progress
  int workers = 0;                   ///< compute threads; 0: 2 in-process, 1 per MPI process
  double timeout_s = 30;             ///< a run not finished by then stops, naming what it waits at
  /// --inject-fault KIND:RANK[:N]: before world rank RANK's N-th op (0 first), throw, exit, be
  /// killed, or stall (never send) — to see how a run fails.
  std::string fault;
  int fault_rank = 0;  ///< --inject-fault's RANK, as parsed
  long fault_op = 0;   ///< --inject-fault's N, as parsed

  // plan (docs/planning.md): a model's config.json, the job as Megatron's flags state it, a
  // cluster
  std::string model_file;  ///< --model
  std::string cluster;     ///< --cluster: a built-in name or a JSON file
  weft::plan::job job;     ///< --tp --pp --dp --cp --ep --micro-batch-size ...
  std::string recompute = "none";
  bool no_distributed_optimizer = false, no_flash_attention = false;
  std::string sharding = "optim";   ///< --data-parallel-sharding-strategy
  bool check_memory = false;        ///< plan --check: exit 1 when the job does not fit its devices
  double plan_search_budget_s = 0;  ///< plan --search-budget-s: 0, no schedule search
  std::string plan_preset;          ///< plan --preset: model, job and cluster from presets/NAME
  std::string job_file;             ///< plan --job FILE.json

  // output
  bool json = false;
  std::string trace, svg;

  // verify
  std::string file;

  // tp2d (seed: tp-2d): one attention + MLP layer on tp_x x tp_y in-process ranks and on its
  // 1D counterpart; or the llama3-405b preset, simulated.
  int tp_x = 0, tp_y = 0;
  int hidden = 192, heads = 24, ffn = 0, batch = 1;  ///< ffn 0: 4 x hidden; seq: `seq` below
  std::string overlap = "none";                      ///< none, ag-matmul, matmul-rs or fused
  bool ag_matmul = false, matmul_rs = false, coc_fused = false;  ///< the seed's switches

  // search: the pipeline's shape (--pp, --micro, --chunks, --layers, --moe, ...), costs
  // (--cost, --preset), the memory cap (--max-live) and:
  std::string placement = "loop";  ///< loop or vee (two chunks per rank, ZB-V / DualPipeV)
  double search_budget_s = 10;     ///< --budget-s
  long long evaluations = 0;       ///< --evaluations: a cap on plans judged (0: none)
  long long seed = 1;              ///< --seed
  std::string out;                 ///< --out FILE.csv: the best plan as PyTorch's CSV

  // run --schedule-file: a PyTorch schedule CSV instead of a generator
  std::string schedule_file;

  // plan-cp
  std::string mask, mask_file;
  int seq = 0, cp = 0, cap = 6, coarse = 1024;
  bool remap = true;
  double budget_s = 2;  ///< plan-cp: planning time budget
};

/// The outcome of parsing: a request to carry out, or an exit code with what to print.
struct parsed {
  bool run = false;  ///< true: carry out `q`; false: print `out`/`err`, exit with `exit_code`
  int exit_code = exit_ok;
  std::string out, err;
  request q;
};

/// Parses `argv` (argv[0] is the program). Never exits and never throws for bad input.
parsed parse(int argc, const char* const* argv);

/// The version `weft --version` prints.
const char* version();

}  // namespace weft::cli
