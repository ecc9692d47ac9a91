// The weft tool's command line on CLI11: one subcommand per task, each with its own options
// struct (commands/NAME.hpp), its definition and checks (commands/NAME_cli.cpp) and --help; the
// groups several share are option_groups.hpp's. A flag a subcommand does not take is an error.
// This file lists the subcommands, parses, and explains a refusal in one line.
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/transform.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <weft/plan/megatron_flags.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

namespace weft::cli {

const char* version() { return WEFT_VERSION; }

std::string_view name_of(link_choice l) {
  constexpr std::string_view names[] = {"none", "intra-node", "inter-node", "cross-dc"};
  return names[static_cast<int>(l)];
}

namespace {

/// Every subcommand, in the order `weft --help` lists them, with its one-line description.
struct subcommand_info {
  command options;
  const char* description;
  const char* former = nullptr;  ///< its name until the last release, still accepted
};

std::vector<subcommand_info> subcommands() {
  return {
      {generate_args{}, "print a schedule"},
      {check_args{}, "check a generated schedule: exit 0 legal, 1 illegal"},
      {verify_args{},
       "read a PyTorch schedule CSV and check it: exit 0 legal, 1 illegal, 2 unreadable"},
      {simulate_args{},
       "run a schedule over simulated time: makespan, bubble, exposed communication"},
      {compare_args{}, "simulate several schedules side by side"},
      {run_args{},
       "train a tiny model one step on in-process ranks (dense for whole blocks, MoE for "
       "sub-stages): measured metrics, the prediction, loss and gradient error against serial"},
      {tp2d_args{},
       "2D tensor parallelism (docs/tp-2d.md): one attention + MLP layer on tp_x x tp_y "
       "in-process ranks and on tp_x * tp_y ranks of 1D tensor parallelism, each linear a "
       "schedule: error against the unsharded layer, measured and predicted step time, bytes "
       "moved; or --preset llama3-405b, simulated"},
      {plan_args{},
       "plan a real training job (docs/planning.md): a model's Hugging Face config.json, the job "
       "as Megatron's flags state it and a cluster in; step time, tokens/s, MFU, memory per stage "
       "against the device's, and every schedule that applies, out"},
      {search_args{},
       "search for the fastest legal schedule for given costs and a memory cap: the best found, "
       "every generator's and the lower bounds (docs/search.md)"},
      {cp_rounds_args{},
       "plan adaptive context parallelism for a mask: re-map the sequence, schedule its (query, "
       "key/value) blocks in rounds under a cap per rank and round (docs/adaptive-cp.md)",
       "plan-cp"},
  };
}

/// What to say of an option `sub` does not take: Megatron's reason, or — unless another
/// subcommand of `app` takes it — the nearest one `sub` does take.
std::string about(const CLI::App& app, const CLI::App& sub, const std::string& given) {
  const std::string flag = given.substr(0, given.find('='));
  if (const auto why = plan::megatron_unpriced_reason(flag))
    return " (" + flag + ", Megatron's: weft does not price " + std::string(*why) + ")";
  for (const CLI::App* other : app.get_subcommands({}))
    for (const CLI::Option* o : other->get_options())
      for (const std::string& l : o->get_lnames())
        if (flag == "--" + l) return "";  // a flag of another subcommand, not a misspelling
  std::vector<std::string> known;
  for (const CLI::Option* o : sub.get_options())
    for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
  const std::string_view best = plan::nearest_name(flag, known);
  return best.empty() ? "" : " (did you mean " + std::string(best) + "?)";
}

/// The error's one line and the hint, naming first the options the subcommand does not take:
/// they may be why a required one is missing.
std::string explain(const CLI::App& app, const std::exception& e) {
  std::string sub = "weft";
  const CLI::App* where = &app;
  for (const CLI::App* s : app.get_subcommands()) {
    sub += " " + s->get_name();
    where = s;
  }
  namespace rv = ranges::views;
  const std::vector<std::string> rest = where->remaining();
  const auto is_option = [](const std::string& a) { return a.rfind("-", 0) == 0; };
  const auto quoted = [](const std::string& a) { return "'" + a + "'"; };
  const auto listed = [](auto&& words) {
    return words | rv::join(std::string(", ")) | ranges::to<std::string>();
  };
  // Options first; bare words only when there are none (else they are those options' values).
  std::string extras = listed(rest | rv::filter(is_option));
  if (extras.empty()) extras = listed(rest | rv::transform(quoted));
  std::string why = e.what();
  if (!extras.empty()) {
    why = sub + " does not take " + extras;
    for (const std::string& a : rest | rv::filter(is_option) | ranges::to<std::vector>())
      why += about(app, *where, a);
  } else if (why.rfind("weft: ", 0) != 0)
    why = sub + ": " + why;
  return why + "\n" + help_hint(sub) + "\n";
}

}  // namespace

parsed parse(int argc, const char* const* argv) {
  parsed r;
  CLI::App app{"weft: verify, simulate and run compute/communication overlap schedules", "weft"};
  app.set_version_flag("--version", std::string("weft ") + version());
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.footer(
      "Exit codes: 0 done (legal), 1 illegal or a run that stopped, 2 bad input, 3 a fault in "
      "weft. Each subcommand has --help.");

  // Each subcommand parses into its own options; the one given is the command.
  std::vector<subcommand_info> all = subcommands();
  std::vector<deferred> later(all.size());
  std::vector<CLI::App*> apps;
  std::string names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::visit(
        [&](auto& o) {
          CLI::App* sub = app.add_subcommand(std::string(o.name), all[i].description);
          if (all[i].former != nullptr) sub->alias(all[i].former);
          define(*sub, o, later[i]);
          apps.push_back(sub);
          names += (names.empty() ? "" : ", ") + std::string(o.name);
        },
        all[i].options);
  }
  try {
    if (argc <= 1) {
      r.err = app.help();
      r.exit_code = exit_bad_input;
      return r;
    }
    if (const std::string_view first = argv[1]; !first.empty() && first[0] != '-') {
      bool known = false;
      for (const CLI::App* s : apps) known = known || s->check_name(std::string(first));
      if (!known) {
        r.err = "weft: unknown subcommand '" + std::string(first) + "' (" + names + ")\n" +
                help_hint("weft") + "\n";
        r.exit_code = exit_bad_input;
        return r;
      }
    }
    app.parse(argc, argv);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (apps[i]->parsed() == 0) continue;
      later[i].finish();
      std::visit(
          [&](auto& o) {
            if constexpr (std::is_same_v<std::decay_t<decltype(o)>, search_args>)
              check(o, *apps[i]);
            else
              check(o);
          },
          all[i].options);
      r.what = std::move(all[i].options);
      if (all[i].former != nullptr && argv[1] == std::string_view(all[i].former))
        r.note = "weft: note: '" + std::string(all[i].former) + "' is now '" +
                 std::string(name_of(r.what)) + "'; the old name goes in the next release\n";
    }
    r.run = true;
    return r;
  } catch (const CLI::CallForHelp&) {
    r.out = app.help();
  } catch (const CLI::CallForAllHelp&) {
    r.out = app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::CallForVersion&) {
    r.out = std::string("weft ") + version() + "\n";
  } catch (const std::exception& e) {
    r.err = explain(app, e);
    r.exit_code = exit_bad_input;
  }
  return r;
}

}  // namespace weft::cli
