// Each subcommand's CLI11 definition (`define`: its options, typed and ranged, every choice
// read into its enum) and the rules CLI11 cannot express (`check`, refusing with `config_error`),
// one file per subcommand: commands/NAME_cli.cpp. The parser (cli.cpp) calls them in turn.
#pragma once

#include "commands/check.hpp"
#include "commands/compare.hpp"
#include "commands/cp_rounds.hpp"
#include "commands/generate.hpp"
#include "commands/plan.hpp"
#include "commands/run.hpp"
#include "commands/search.hpp"
#include "commands/simulate.hpp"
#include "commands/tp2d.hpp"
#include "commands/verify.hpp"

#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace weft::cli {

struct deferred;

void define(CLI::App& sub, generate_args& o, deferred& later);
void check(const generate_args& o);
void define(CLI::App& sub, check_args& o, deferred& later);
void check(const check_args& o);
void define(CLI::App& sub, verify_args& o, deferred& later);
void check(const verify_args& o);
void define(CLI::App& sub, simulate_args& o, deferred& later);
void check(const simulate_args& o);
void define(CLI::App& sub, compare_args& o, deferred& later);
void check(const compare_args& o);
void define(CLI::App& sub, run_args& o, deferred& later);
void check(const run_args& o);
void define(CLI::App& sub, tp2d_args& o, deferred& later);
void check(const tp2d_args& o);
void define(CLI::App& sub, plan_args& o, deferred& later);
void check(const plan_args& o);
/// `weft plan`'s flags for the model as Megatron's launch flags state it (plan_megatron_cli.cpp),
/// each setting `o.megatron` and naming itself in `o.megatron_given`.
std::vector<CLI::Option*> megatron_model_options(CLI::App& sub, plan_args& o);
/// Megatron's flags that change nothing of a step's time or memory, taken and left; and
/// --fp16 with --accumulate-allreduce-grads-in-fp32 (their gradients' bytes).
void megatron_inert_options(CLI::App& sub, plan_args& o);
void define(CLI::App& sub, search_args& o, deferred& later);
void check(search_args& o, const CLI::App& sub);
void define(CLI::App& sub, cp_rounds_args& o, deferred& later);
void check(const cp_rounds_args& o);

}  // namespace weft::cli
