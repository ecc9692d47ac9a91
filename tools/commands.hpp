// Subcommands compiled on their own, so that a change to one (and the heavy headers it needs)
// does not rebuild the others.
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <weft/sim/cost.hpp>
#include <weft/sim/xdc_preset.hpp>
#include "cli.hpp"

namespace weft::cli {

/// An error that ends the command with `code` after printing `what()` (one line).
struct stop : std::runtime_error {
  int code;
  stop(int c, const std::string& why) : std::runtime_error(why), code(c) {}
};

/// A file to write, or `stop` with exit_bad_input naming it.
std::ofstream open_for_writing(const std::string& path);

/// The unit-free costs asked for: `--cost` (a rank's share of the model) or `--preset
/// deepseek-v3` (per chunk layer).
unit_cost_model unit_costs(const request& q);

/// The folder of preset `name` (presets/<name>/ with config.json, job.json, cluster.json):
/// under $WEFT_PRESETS, installed beside the tool, or in the source tree; `config_error` naming
/// where it looked otherwise.
std::filesystem::path preset_dir(const std::string& name);

/// The llama2-70b-xdc scenario asked for: presets/llama2-70b-xdc's facts with --chunks, --micro,
/// --delay-model (throws
/// `config_error` for a chunk count that does not divide a rank's layers).
xdc_facts xdc_facts_of(const request& q);

/// `weft search`; returns the exit code, throws as the other commands do.
int search_command(const request& q);

/// `weft plan` (docs/planning.md); returns the exit code, throws as the other commands do.
int plan_command(const request& q);

/// `weft tp2d` (seed: tp-2d); returns the exit code, throws as the other commands do.
int tp2d_command(const request& q);

}  // namespace weft::cli
