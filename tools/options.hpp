// The option groups several subcommands share — the pipeline a generator builds, the costs it is
// priced with, the emulated links, the pictures — as typed values: the parser (cli.cpp) reads
// every choice into its enum once, and a command reads fields, never text.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/time.hpp>
#include <weft/sim/cost.hpp>
#include "failure.hpp"

namespace weft::cli {

/// How transfers are issued (MindSpeed's pp-cross-dc-comm-overlap note): `--p2p`.
enum class p2p_mode { pytorch, megatron, blocking };

/// The pipeline a generator builds (generate, check, simulate, compare, run): `--schedule`,
/// its shape and the MindSpeed notes' switches.
struct pipeline_args {
  std::string schedule;  ///< --schedule: a generator's name (compare: each of --schedules)
  int pp = 0, micro = 0, chunks = 2, layers = 1;
  bool moe = false, shared_expert = false, fb_overlap = false, transfers = false;

  // AMPipe and pipe-experts (MindSpeed's ampipe note), on MoE layers or the ampipe-16p preset.
  int ampipe_degree = 1;       ///< --ampipe-degree: 1..255, or 0 for auto (ampipe-16p)
  int multi_data = 1;          ///< --pipe-experts-multi-data
  bool multi_stream = false;   ///< --pipe-experts-multi-stream
  bool tp_sp_overlap = false;  ///< --ampipe-tp-sp-comm-overlap
  bool pipe_experts() const { return multi_data > 1 || multi_stream; }
  bool ampipe() const { return ampipe_degree != 1 || pipe_experts() || tp_sp_overlap; }

  // Pipeline transfers (MindSpeed's pp-cross-dc-comm-overlap note).
  p2p_mode p2p = p2p_mode::pytorch;  ///< --p2p
  bool overlap_p2p = false;          ///< --overlap-p2p
  bool p2p_multi_stream = false;     ///< --multi-stream
  bool log_allreduce = false;        ///< --log-allreduce
  bool async_log_allreduce = false;  ///< --async-log-allreduce
  bool nanopipe = false;             ///< --nanopipe
  bool p2p_options() const {
    return p2p != p2p_mode::pytorch || overlap_p2p || p2p_multi_stream || log_allreduce ||
           async_log_allreduce;
  }

  /// MoE sub-stages (--moe, --shared-expert or --fb-overlap).
  bool sub_stages() const { return moe || shared_expert || fb_overlap; }
  /// Anything but the defaults of the pipeline's shape and switches (a scenario takes none).
  bool shaped() const {
    return !schedule.empty() || pp != 0 || micro != 0 || layers != 1 || sub_stages() || transfers ||
           ampipe() || p2p_options();
  }
};

/// `--cost F=..,B=..`: a rank's share of the model, in schedule units.
struct costs {
  double F = 1, B = 2, W = 1, FB = -1, A2A = 0, P2P = 0;
};

/// `--preset`: costs per chunk layer (deepseek-v3), or a whole scenario.
enum class preset_name { none, deepseek_v3, ampipe_16p, llama2_70b_xdc, llama3_405b };

/// What the pipeline is priced with (simulate, compare, search).
struct cost_args {
  costs unit;                              ///< --cost
  preset_name preset = preset_name::none;  ///< --preset
  weft::contention_facts contention;       ///< --contention
  /// --contention on or links: a preset's scenario adds its own resources (a site's uplink).
  bool contention_scenario = false;
  bool barrier = false;  ///< --barrier
};

/// `--delay-model`: the class of the links, between data centres KM apart at bandwidth / RATIO.
enum class link_choice { none, intra_node, inter_node, cross_dc };
struct delay_args {
  link_choice link = link_choice::none;
  double km = 1000;          ///< cross-dc: distance between the data centres
  bool km_given = false;     ///< cross-dc:KM named the distance
  double ratio = 1;          ///< cross-dc: the interconnect's bandwidth convergence ratio
  bool ratio_given = false;  ///< cross-dc:KM:RATIO named the ratio
};

/// The option's own spelling of `l` (none, intra-node, inter-node, cross-dc).
std::string_view name_of(link_choice l);

/// `--inject-fault KIND:RANK[:N]`: before world rank `rank`'s `op`-th op (0 first), throw,
/// exit, be killed, or stall (never send) — to see how a run fails.
enum class fault_kind { none, throw_error, exit, kill, stall };
struct fault_spec {
  fault_kind kind = fault_kind::none;
  std::string text;  ///< as given, for messages
  int rank = 0;
  long op = 0;
};

/// How a run may be made to fail and how long it may take (run, tp2d): --inject-fault, --timeout.
struct failure_args {
  fault_spec fault;
  weft::seconds timeout{30};  ///< a run not finished by then stops, naming what it waits at
};

/// --json, --trace, --svg.
struct output_args {
  bool json = false;
  std::string trace, svg;
  bool pictures() const { return !trace.empty() || !svg.empty(); }
};

}  // namespace weft::cli
