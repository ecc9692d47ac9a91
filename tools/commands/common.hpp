// What the subcommands share: the files they write, the presets' folders, and the costs and
// scenarios the option groups stand for.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include <weft/core/op.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "options.hpp"

namespace weft::cli {

/// A file to write, or `config_error` naming it.
std::ofstream open_for_writing(const std::string& path);

/// The exit code of a process an injected `exit` fault ends: none of the tool's own.
inline constexpr int injected_exit = 9;

/// `--inject-fault KIND:RANK[:N]` as a hook the runtime calls before each op (`before_op`):
/// world rank RANK throws, exits, is killed or stalls (twice `f.timeout`, so the peers' watchdogs
/// go first) before its N-th op. Empty for no fault.
std::function<void(int, const op&)> fault_injection(const failure_args& f);

/// The unit-free costs asked for: `--cost` (a rank's share of the model) or `--preset
/// deepseek-v3` (per chunk layer), with `--contention`.
unit_cost_model unit_costs(const cost_args& c);

/// The folder of preset `name` (presets/<name>/ with config.json, job.json, cluster.json):
/// under $WEFT_PRESETS, installed beside the tool, or in the source tree; `config_error` naming
/// where it looked otherwise.
std::filesystem::path preset_dir(const std::string& name);

/// The llama2-70b-xdc scenario asked for: presets/llama2-70b-xdc's facts with `chunks` per
/// rank, `micro` micro-batches (0: the preset's), NanoPipe and the link between the data
/// centres. Throws `config_error` for a chunk count that does not divide a rank's layers.
xdc_facts xdc_facts_of(int chunks, int micro, bool nanopipe, const delay_args& delay);

/// The contention asked for, with a scenario's own resources (the sites' uplink) when
/// `--contention on|links` asked for them.
contention_facts xdc_contention_of(const xdc_facts& f, const cost_args& c);

}  // namespace weft::cli
