// A pipeline's options as a schedule: the one translation from the tool's options to the
// generators' parameters, shared by the tool and the fuzzer that drives its command line.
#pragma once

#include <ostream>
#include <string>

#include <weft/generators/ampipe.hpp>
#include <weft/generators/params.hpp>
#include <weft/schedule/schedule.hpp>
#include "options.hpp"

namespace weft::cli {

/// Where the pipeline is built for: PyTorch's CSV (the pipeline-level view, fb-overlap as
/// OVERLAP_F_B cells), and `run`'s demo MoE model (its tokens per micro-batch and
/// expert-parallel replicas; the other commands have no sequence).
struct pipeline_use {
  bool csv = false;
  bool demo_model = false;
  int ep = 0;  ///< 0: 2
};

/// AMPipe's switches laid out (weft::resolve, the AMPipe note's rules) for the pipeline's use.
/// Writes MindSpeed's warning to `warnings` (when not null) when pipe-experts does not apply.
ampipe_layout ampipe_of(const pipeline_args& p, pipeline_use use, std::ostream* warnings);

/// The p2p options asked for (MindSpeed's pp-cross-dc-comm-overlap note).
p2p_options p2p_of(const pipeline_args& p);

/// Schedule `name` (a generator's) with the pipeline's options. Throws `config_error` for a
/// configuration the generators refuse.
schedule schedule_of(const pipeline_args& p, const std::string& name, pipeline_use use,
                     std::ostream* warnings);

}  // namespace weft::cli
