// The option groups the subcommands share, defined once: the pipeline a generator builds
// (`pipeline_options`), what it is priced with (`cost_options`, `contention_option`), the
// emulated links (`delay_option`), how a run may fail (`failure_options`), the pictures
// (`output_options`), and the checks CLI11 cannot express that several subcommands need
// (`check_pipeline`). Each subcommand's own options and checks are its file's,
// commands/NAME_cli.cpp; what a generator takes is asked of the library's registry.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/sim/cost.hpp>
#include "options.hpp"

namespace weft::cli {

/// Refuses the command line: `config_error` with "weft: " and `why`.
[[noreturn]] void bad(const std::string& why);

/// The generators' names, from the library's registry.
extern const std::vector<std::string> schedule_names;
/// "a, b, c" from the registry, for --help.
extern const std::string schedule_list;
/// Whether schedule `name` takes a chunk count (`--chunks`), as the registry says.
bool takes_chunks(std::string_view name);
/// Whether `chunks` is schedule `name`'s own fixed count (zb-v's 2; 1f1b's 1; DualPipe's 2, or 1
/// as its distinct stages a rank, as `weft plan` states it): a command line may say it.
bool own_count(std::string_view name, int chunks);

/// A choice read into its enum: `names` spell the values; anything else is refused as CLI11's
/// IsMember refuses ("x not in {a,b}").
template <class E>
CLI::Validator one_of(std::vector<std::pair<std::string, E>> names) {
  std::string set;
  for (const auto& n : names) set += (set.empty() ? "" : ",") + n.first;
  set = "{" + set + "}";
  return CLI::Validator(
      [names = std::move(names), set](std::string& v) -> std::string {
        for (const auto& [text, value] : names)
          if (v == text) {
            v = std::to_string(static_cast<int>(value));
            return "";
          }
        return v + " not in " + set;
      },
      set);
}

/// CLI::Range for a count, telling what is not a whole number as such: "8.0" and "4096.5" are
/// not integers. Anything else as CLI::Range has it ("Value x not in range a to b").
CLI::Validator whole_in(long long lo, long long hi);

/// The choices of an enum whose values the library already spells (plan's recompute, sharding).
template <class E, std::size_t N>
std::vector<std::pair<std::string, E>> spelled(const std::array<std::string_view, N>& names) {
  std::vector<std::pair<std::string, E>> out;
  for (std::size_t i = 0; i < N; ++i) out.emplace_back(std::string(names[i]), static_cast<E>(i));
  return out;
}

/// Text options read into typed values once CLI11 has parsed (their errors then name the
/// option, after any option the subcommand does not take).
struct deferred {
  std::string cost, contention, delay, fault;
  cost_args* costs = nullptr;
  delay_args* links = nullptr;
  fault_spec* faults = nullptr;
  weft::contention_facts* facts = nullptr;  ///< tp2d's (it has no cost_args)
  CLI::Option* delay_option = nullptr;      ///< given, even empty, it must name a link

  /// Reads the text options into their typed values; `config_error` naming the option.
  void finish();
};

/// The pipeline's options (generate, check, simulate, compare, run). `scenario`: a preset may
/// stand for the whole pipeline (simulate's ampipe-16p), so --schedule, --pp and --micro are
/// required only without it (the subcommand's check).
void pipeline_options(CLI::App& sub, pipeline_args& p, bool scenario);
/// A chunk's layers and what they are made of (the pipeline's, and the search's):
/// --layers, --moe, --shared-expert, --fb-overlap.
void layer_options(CLI::App& sub, int& layers, bool& moe, bool& shared_expert, bool& fb_overlap);
/// The schedule search's walk (search, and plan's --search-budget-s): --evaluations caps the
/// `what` it judges, --seed picks the walk.
void search_walk_options(CLI::App& sub, long long& evaluations, long long& seed,
                         const std::string& what);
/// --schedule, for the subcommands that take one.
void schedule_option(CLI::App& sub, pipeline_args& p, bool scenario);
/// --contention.
void contention_option(CLI::App& sub, deferred& later);
/// A preset's spelling.
std::pair<std::string, preset_name> preset(preset_name p);
/// --cost, --preset (one of `presets`), --contention, and with `barrier` --barrier.
void cost_options(CLI::App& sub, cost_args& c, deferred& later,
                  std::vector<std::pair<std::string, preset_name>> presets,
                  const std::string& preset_help, bool barrier);
/// --delay-model, described by `help`.
void delay_option(CLI::App& sub, delay_args& d, deferred& later, const std::string& help);
/// --delay-model's help where it prices the llama2-70b-xdc scenario.
inline constexpr const char* xdc_delay_help =
    "with --preset llama2-70b-xdc, the link between the data centres: cross-dc[:KM[:RATIO]] "
    "(default the cross-DC note's 960 km, ratio 128), or inter-node (one data centre)";
/// --timeout and --inject-fault (run, tp2d): how long a run may take, and a fault to see how
/// one ends.
void failure_options(CLI::App& sub, failure_args& f, deferred& later, const std::string& help);
/// A fault that ends its process (exit, kill): only a world of processes survives it.
bool ends_process(const fault_spec& f);
/// --json, and with `pictures` --trace and --svg.
void output_options(CLI::App& sub, output_args& o, bool pictures);

/// The pipeline's own combinations: `chunks_taken` when a schedule asked for takes --chunks,
/// `scenario` when a preset stands for the pipeline, `chunks_elsewhere` when something else
/// reads --chunks (the llama2-70b-xdc scenario).
void check_pipeline(const pipeline_args& p, bool chunks_taken, bool scenario,
                    bool chunks_elsewhere);
/// --schedule, --pp and --micro, unless a scenario or a file stands for them.
void require_shape(const pipeline_args& p, bool schedule_file = false);
/// A preset that is a whole scenario was given where the command does not run it.
void scenario_is_simulates(preset_name p);

}  // namespace weft::cli
