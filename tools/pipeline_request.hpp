// A request's pipeline as a schedule: the one translation from the tool's options to the
// generators' parameters, shared by the tool and the fuzzer that drives its command line.
#pragma once

#include <ostream>
#include <string>

#include <weft/generators/ampipe.hpp>
#include <weft/generators/params.hpp>
#include <weft/schedule/schedule.hpp>
#include "cli.hpp"

namespace weft::cli {

/// AMPipe's switches laid out (weft::resolve, the seed's rules) for the demo MoE model `run`
/// trains: its tokens per micro-batch (0 for the other commands, which have no sequence) and its
/// experts over the expert-parallel replicas. Writes the seed's warning to `warnings` (when not
/// null) when pipe-experts does not apply.
ampipe_layout ampipe_of(const request& q, std::ostream* warnings);

/// The p2p options asked for (seed: pp-cross-dc-comm-overlap).
p2p_options p2p_of(const request& q);

/// Schedule `name` (one of --schedule's values) with the request's pipeline options. Throws
/// `config_error` for a configuration the generators refuse.
schedule schedule_of(const request& q, const std::string& name, std::ostream* warnings);

}  // namespace weft::cli
