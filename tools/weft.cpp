// The weft command-line tool. This version generates and checks built-in schedules; later
// versions add schedule files, simulation and runs.
//
//   weft show 1f1b --ranks 4 --micro 8 [--layers L] [--moe] [--transfers] [--max-live N]
//   weft check 1f1b ...        (exit 0 legal, 1 illegal, 2 bad arguments)
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <weft/io/format.hpp>
#include <weft/schedules/one_f_one_b.hpp>

namespace {

constexpr std::string_view usage =
    "usage: weft <show|check> 1f1b --ranks P --micro M [--layers L] [--moe] [--transfers]\n"
    "                              [--max-live N]\n"
    "  show    print each rank's slots and the legality report\n"
    "  check   print the legality report; exit 0 if legal, 1 if not\n"
    "  exit 2: bad arguments\n";

[[noreturn]] void bad_usage(const std::string& why) {
  std::cerr << "weft: " << why << "\n" << usage;
  std::exit(2);
}

int parse_int(std::string_view flag, std::string_view text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    bad_usage(std::string(flag) + " needs an integer, got '" + std::string(text) + "'");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  if (command != "show" && command != "check")
    bad_usage("unknown command '" + std::string(command) + "'");
  if (args.size() < 2 || args[1] != "1f1b") bad_usage("the only built-in schedule is '1f1b'");

  weft::one_f_one_b_params p;
  int max_live = 0;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const auto value = [&] {
      if (i + 1 >= args.size()) bad_usage(std::string(a) + " needs a value");
      return parse_int(a, args[++i]);
    };
    if (a == "--ranks")
      p.ranks = value();
    else if (a == "--micro")
      p.micro = value();
    else if (a == "--layers")
      p.layers = value();
    else if (a == "--max-live")
      max_live = value();
    else if (a == "--moe")
      p.stages = weft::stage_set::moe();
    else if (a == "--transfers")
      p.transfers = true;
    else
      bad_usage("unknown option '" + std::string(a) + "'");
  }

  weft::schedule s;
  try {
    s = weft::one_f_one_b(p);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  }
  s.model.max_live = max_live;
  if (command == "show") weft::print_slots(std::cout, s);
  const weft::report r = weft::check(s);
  std::cout << r;
  return r.ok() ? 0 : 1;
}
