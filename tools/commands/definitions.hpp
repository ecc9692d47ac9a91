// Each subcommand's CLI11 definition (`define`: its options, typed and ranged, every choice
// read into its enum) and the rules CLI11 cannot express (`check`, refusing with `config_error`),
// one file per subcommand: commands/NAME_cli.cpp. The parser (cli.cpp) calls them in turn.
#pragma once

#include "commands/check.hpp"
#include "commands/compare.hpp"
#include "commands/generate.hpp"
#include "commands/plan.hpp"
#include "commands/plan_cp.hpp"
#include "commands/run.hpp"
#include "commands/search.hpp"
#include "commands/simulate.hpp"
#include "commands/tp2d.hpp"
#include "commands/verify.hpp"

namespace CLI {
class App;
}

namespace weft::cli {

struct deferred;

void define(CLI::App& sub, generate_options& o, deferred& later);
void check(const generate_options& o);
void define(CLI::App& sub, check_options& o, deferred& later);
void check(const check_options& o);
void define(CLI::App& sub, verify_options& o, deferred& later);
void check(const verify_options& o);
void define(CLI::App& sub, simulate_options& o, deferred& later);
void check(const simulate_options& o);
void define(CLI::App& sub, compare_options& o, deferred& later);
void check(const compare_options& o);
void define(CLI::App& sub, run_options& o, deferred& later);
void check(const run_options& o);
void define(CLI::App& sub, tp2d_options& o, deferred& later);
void check(const tp2d_options& o);
void define(CLI::App& sub, plan_options& o, deferred& later);
void check(const plan_options& o);
void define(CLI::App& sub, search_options& o, deferred& later);
void check(search_options& o, const CLI::App& sub);
void define(CLI::App& sub, plan_cp_options& o, deferred& later);
void check(const plan_cp_options& o);

}  // namespace weft::cli
