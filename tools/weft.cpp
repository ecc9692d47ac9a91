// The weft command-line tool: generate schedules, read PyTorch schedule files, check legality.
//
//   weft generate --schedule NAME --pp P --micro M [--chunks V] [options] [--format csv|text]
//   weft check    --schedule NAME --pp P --micro M [--chunks V] [options] [--max-live N]
//   weft verify   FILE.csv
//
// Exit codes: 0 legal (or generated), 1 illegal, 2 bad arguments or unreadable input.
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedules/dualpipe.hpp>
#include <weft/schedules/interleaved.hpp>
#include <weft/schedules/one_f_one_b.hpp>
#include <weft/schedules/zero_bubble_v.hpp>

namespace {

constexpr std::string_view usage =
    "usage: weft generate --schedule NAME --pp P --micro M [--chunks V] [--layers L] [--moe]\n"
    "                     [--fb-overlap] [--transfers] [--format csv|text]\n"
    "       weft check    --schedule NAME --pp P --micro M [...] [--max-live N]\n"
    "       weft verify   FILE.csv\n"
    "  NAME: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe, dualpipev\n"
    "  --pp P        pipeline ranks (devices); zb-v, dualpipe(v) put 2 chunks on each\n"
    "  --chunks V    model chunks per rank, for interleaved (default 2)\n"
    "  --layers L    layers per model chunk (default 1)\n"
    "  --moe         layers of MoE sub-stages: attn, dispatch, mlp, combine\n"
    "  --fb-overlap  MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek);\n"
    "                with --format csv, the pipeline-level view (OVERLAP_F_B cells)\n"
    "  --transfers   explicit send/recv ops, placed as PyTorch places them\n"
    "  --format      csv: PyTorch's schedule CSV (whole chunks only); text: slots (default)\n"
    "  generate  print the schedule\n"
    "  check     print the legality report; exit 0 if legal, 1 if not\n"
    "  verify    read a PyTorch schedule CSV and check it; exit 0 legal, 1 illegal, 2 unreadable\n";

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

struct request {
  std::string name;
  int pp = 0, micro = 0, chunks = 2, layers = 1, max_live = 0;
  bool moe = false, fb_overlap = false, transfers = false;
  std::string format = "text";
};

request parse_request(const std::vector<std::string_view>& args) {
  request q;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const auto text = [&]() -> std::string_view {
      if (i + 1 >= args.size()) bad_usage(std::string(a) + " needs a value");
      return args[++i];
    };
    const auto number = [&] {
      const std::string_view t = text();
      return parse_int(a, t);
    };
    if (a == "--schedule")
      q.name = text();
    else if (a == "--pp")
      q.pp = number();
    else if (a == "--micro")
      q.micro = number();
    else if (a == "--chunks")
      q.chunks = number();
    else if (a == "--layers")
      q.layers = number();
    else if (a == "--max-live")
      q.max_live = number();
    else if (a == "--format")
      q.format = text();
    else if (a == "--moe")
      q.moe = true;
    else if (a == "--fb-overlap")
      q.fb_overlap = true;
    else if (a == "--transfers")
      q.transfers = true;
    else
      bad_usage("unknown option '" + std::string(a) + "'");
  }
  if (q.name.empty()) bad_usage("--schedule NAME is required");
  if (q.pp == 0) bad_usage("--pp P is required");
  if (q.micro == 0) bad_usage("--micro M is required");
  if (q.format != "csv" && q.format != "text")
    bad_usage("--format is csv or text, not '" + q.format + "'");
  return q;
}

weft::schedule generate(const request& q) {
  // PyTorch's CSV is the pipeline-level view: there fb-overlap shows as OVERLAP_F_B cells, each
  // expanded per layer when the schedule runs with MoE sub-stages.
  const bool sub_stages = q.moe || (q.fb_overlap && q.format != "csv");
  const weft::stage_set stages =
      sub_stages ? weft::stage_set::moe() : weft::stage_set::whole_block();
  const weft::overlap_options overlap =
      q.fb_overlap ? weft::overlap_options{} : weft::overlap_options::none();
  const weft::pipeline_params p{.ranks = q.pp,
                                .micro = q.micro,
                                .layers = q.layers,
                                .stages = stages,
                                .transfers = q.transfers,
                                .overlap = overlap};
  if (q.name == "gpipe") return weft::gpipe(p);
  if (q.name == "1f1b") return weft::one_f_one_b(p);
  if (q.name == "zb-h1") return weft::zb_h1(p);
  if (q.name == "zb-v") return weft::zb_v(p);
  if (q.name == "dualpipe") return weft::dualpipe(p);
  if (q.name == "dualpipev") return weft::dualpipev(p);
  if (q.name == "interleaved")
    return weft::interleaved({.ranks = q.pp,
                              .micro = q.micro,
                              .chunks = q.chunks,
                              .layers = q.layers,
                              .stages = stages,
                              .transfers = q.transfers,
                              .overlap = overlap,
                              .extra_warmup = q.fb_overlap});
  bad_usage("unknown schedule '" + q.name + "'");
}

int verify_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "weft: cannot open '" << path << "'\n";
    return 2;
  }
  weft::schedule s;
  try {
    s = weft::read_pytorch_csv(in);
  } catch (const weft::csv_error& e) {
    std::cerr << path << ": " << e.what() << "\n";
    return 2;
  }
  const weft::report r = weft::check(s);
  std::cout << r;
  return r.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  if (command == "verify") {
    if (args.size() != 2) bad_usage("verify takes one file");
    return verify_file(std::string(args[1]));
  }
  if (command != "generate" && command != "check")
    bad_usage("unknown command '" + std::string(command) + "'");

  const request q = parse_request(args);
  weft::schedule s;
  try {
    s = generate(q);
  } catch (const weft::config_error& e) {
    bad_usage(e.what());
  }
  if (command == "generate") {
    if (q.format == "csv") {
      try {
        weft::write_pytorch_csv(std::cout, s);
      } catch (const weft::config_error& e) {
        bad_usage(std::string(e.what()) + " (use --format text)");
      }
    } else {
      weft::print_slots(std::cout, s);
    }
    return 0;
  }
  s.model.max_live = q.max_live;
  const weft::report r = weft::check(s);
  std::cout << r;
  return r.ok() ? 0 : 1;
}
