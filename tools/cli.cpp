// The weft tool's command line on CLI11: one subcommand per task, each with its own options
// and --help; typed, ranged values; a flag a subcommand does not take is an error.
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/transform.hpp>
#include <string>
#include <string_view>
#include <system_error>

#include <weft/core/error.hpp>
#include <weft/core/key_values.hpp>
#include <weft/core/op.hpp>
#include <weft/cp/mask.hpp>
#include <weft/generators/registry.hpp>

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

namespace weft::cli {

const char* version() { return WEFT_VERSION; }

namespace {

/// The generators' names, from the library's registry.
const std::vector<std::string> schedule_names = [] {
  std::vector<std::string> out;
  for (const weft::generator_info& g : weft::generators) out.emplace_back(g.name);
  return out;
}();

/// --cost F=1,B=2,W=1,FB=2.5,A2A=0.5,P2P=0.1: finite, non-negative, W within B.
costs parse_costs(const std::string& text) {
  key_values kv(text, "--cost");
  constexpr double most = 1e12;
  costs c;
  c.F = kv.number("F", c.F, 0, most);
  c.B = kv.number("B", c.B, 0, most);
  c.W = kv.number("W", c.W, 0, most);
  c.FB = kv.number("FB", c.FB, 0, most);
  c.A2A = kv.number("A2A", c.A2A, 0, most);
  c.P2P = kv.number("P2P", c.P2P, 0, most);
  kv.finish("F, B, W, FB, A2A, P2P");
  if (c.W > c.B) kv.fail("W (the dW part of B) cannot exceed B");
  // Two ops overlapped end no sooner than the longer alone (the search's bounds rely on it).
  if (c.FB >= 0 && c.FB < std::max(c.F, c.B))
    kv.fail("FB (F and B overlapped) cannot be shorter than the longer of F and B");
  return c;
}

/// A number of `--delay-model cross-dc:KM:RATIO`: all of `text`, finite, in [lo, hi].
double delay_number(const std::string& text, const char* what, double lo, double hi,
                    const char* range) {
  const auto bad = [&] {
    throw config_error("weft: --delay-model: the " + std::string(what) + " must be a number in " +
                       range + ", not '" + text + "'");
  };
  if (text.empty()) bad();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < lo || v > hi) bad();
  return v;
}

/// --delay-model: a link class, cross-dc with its distance and convergence ratio.
void parse_delay(request& q) {
  const std::string& d = q.delay;
  if (d == "none" || d == "intra-node" || d == "inter-node" || d == "cross-dc") return;
  if (d.rfind("cross-dc:", 0) != 0)
    throw config_error("weft: --delay-model: '" + d +
                       "' is not none, intra-node, inter-node or cross-dc[:KM[:RATIO]]");
  const std::string rest = d.substr(9);
  const std::size_t colon = rest.find(':');
  q.delay_km = delay_number(rest.substr(0, colon), "distance (km)", 0, 40075, "[0, 40075]");
  q.delay_km_given = true;
  if (colon != std::string::npos) {
    q.delay_ratio = delay_number(rest.substr(colon + 1), "convergence ratio", 1, 1e6, "[1, 1e6]");
    q.delay_ratio_given = true;
  }
  q.delay = "cross-dc";
}

/// The options every pipeline subcommand takes; `one_schedule` false for compare. `scenario`:
/// a preset may stand for the whole pipeline (simulate's ampipe-16p), so --schedule, --pp and
/// --micro are required only without it (check_combinations).
void pipeline_options(CLI::App& sub, request& q, bool one_schedule, bool scenario = false) {
  const auto required = [&](CLI::Option* o) { return scenario ? o : o->required(); };
  if (one_schedule)
    required(sub.add_option("--schedule", q.schedule,
                            "gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe, dualpipev"))
        ->check(CLI::IsMember(schedule_names));
  else
    sub.add_option("--schedules", q.schedules, "schedules to compare, comma-separated")
        ->required()
        ->delimiter(',')
        ->check(CLI::IsMember(schedule_names));
  required(sub.add_option("--pp", q.pp,
                          "pipeline ranks (devices); zb-v, dualpipe(v) put 2 chunks on each"))
      ->check(CLI::Range(1, weft::limits::ranks));
  required(sub.add_option("--micro", q.micro, "micro-batches per step"))
      ->check(CLI::Range(1, weft::limits::micro));
  sub.add_option("--chunks", q.chunks, "model chunks per rank, for interleaved (default 2)")
      ->check(CLI::Range(1, weft::limits::chunks));
  sub.add_option("--layers", q.layers, "layers per model chunk (default 1)")
      ->check(CLI::Range(1, weft::limits::layers));
  sub.add_flag("--moe", q.moe, "layers of MoE sub-stages: attn, dispatch, mlp, combine");
  sub.add_flag("--shared-expert", q.shared_expert,
               "MoE layers with a shared expert beside the routed ones");
  sub.add_flag("--fb-overlap", q.fb_overlap,
               "MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek)");
  sub.add_flag("--transfers", q.transfers, "explicit send/recv ops, placed as PyTorch places them");
  sub.add_option("--ampipe-degree", q.ampipe_degree,
                 "AMPipe: each micro-batch's sequence in D chunks, their attention and experts "
                 "pipelined so all-to-alls hide (docs/ampipe.md); auto: the best degree "
                 "(ampipe-16p)")
      ->check(CLI::Range(1, weft::limits::parts) | CLI::IsMember({"auto"}));
  sub.add_option("--pipe-experts-multi-data", q.multi_data,
                 "pipe-experts: the routed experts' inputs in N pieces (N / D per chunk), "
                 "all-to-alls pipelined with expert compute")
      ->check(CLI::Range(1, weft::limits::parts));
  sub.add_flag("--pipe-experts-multi-stream", q.multi_stream,
               "pipe-experts: each layer's second all-to-all on a second comm stream");
  sub.add_flag("--ampipe-tp-sp-comm-overlap", q.tp_sp_overlap,
               "AMPipe: all-to-alls per chunk and local expert, the experts' all-gather and "
               "reduce-scatter pipelined with their compute");
  sub.add_option("--p2p", q.p2p,
                 "how transfers are issued: pytorch (default; a stream per peer), megatron "
                 "(Megatron's interleaved code with overlap_p2p_comm: one stream, receives after "
                 "the previous step of their direction; for 1f1b the same as blocking), blocking "
                 "(Megatron without overlap_p2p_comm: batched calls, each waited by the host); "
                 "docs/cross-dc.md")
      ->check(CLI::IsMember({"pytorch", "megatron", "blocking"}));
  sub.add_flag("--overlap-p2p,--overlap-warmup-cooldown-communication", q.overlap_p2p,
               "cross-DC: receives posted a step early in warm-up and cool-down (Megatron's "
               "lowering)");
  sub.add_flag("--multi-stream,--use-multi-stream", q.p2p_multi_stream,
               "cross-DC: sends and receives on ping/pong streams by rank parity (needs "
               "--overlap-p2p)");
  sub.add_flag("--log-allreduce", q.log_allreduce,
               "each micro-batch's loss all-reduced for logging on the last stage, awaited by its "
               "backward");
  sub.add_flag("--async-log-allreduce", q.async_log_allreduce,
               "the logging all-reduce awaited only at the end of the step");
  sub.add_flag("--nanopipe,--use-nanopipe", q.nanopipe,
               "interleaved: MindSpeed's NanoPipe, rank r's first 2r steady-phase backwards "
               "split, their dW run after the cool-down (docs/cross-dc.md)");
}

/// --contention off|on|links|interference, or
/// links=1,compute=0.189,comm=0,uplink=4,a2a=inter,p2p=inter,collectives=intra,
/// reduce_scatters=intra
weft::contention_facts parse_contention(const std::string& text, bool& scenario) {
  const weft::contention_facts published = weft::contention_facts::published();
  scenario = text == "on" || text == "links";
  if (text == "off") return {};
  if (text == "on") return published;
  if (text == "links") return {.shared_links = published.shared_links};
  if (text == "interference") return {.compute_slowdown = published.compute_slowdown};
  key_values kv(text, "--contention");
  weft::contention_facts f;
  f.shared_links = kv.whole("links", 0, 0, 1) == 1;
  f.compute_slowdown = kv.number("compute", 0, 0, 10);
  f.comm_slowdown = kv.number("comm", 0, 0, 10);
  f.uplink_ports = kv.number("uplink", 0, 0, 1e6);
  const auto cls = [&](std::string_view key, weft::link_class fallback) {
    return static_cast<weft::link_class>(
        kv.choice(key, static_cast<int>(fallback), {"intra", "inter"}));
  };
  f.a2a = cls("a2a", f.a2a);
  f.p2p = cls("p2p", f.p2p);
  f.collectives = cls("collectives", f.collectives);
  f.reduce_scatters = cls("reduce_scatters", f.reduce_scatters);
  kv.finish("links, compute, comm, uplink, a2a, p2p, collectives, reduce_scatters");
  return f;
}

void contention_option(CLI::App& sub, std::string& contention_text) {
  sub.add_option(
      "--contention", contention_text,
      "what overlap costs (docs/metrics.md): off (the default), on (the published "
      "facts: links shared, compute 18.9% slower while its device communicates, arXiv "
      "2507.03114; a preset adds its scenario's resources), links or interference "
      "(one of the two), or key=values: links=1 shares links max-min fairly, compute=X "
      "slows compute by 1+X while its device communicates, comm=X the reverse, "
      "uplink=N a site uplink N ports wide, a2a/p2p/collectives/reduce_scatters=intra|inter "
      "their link class");
}

void cost_options(CLI::App& sub, request& q, std::string& cost_text, std::string& contention_text) {
  auto* cost = sub.add_option(
      "--cost", cost_text,
      "a rank's share of the model: F forward, B full backward, W its dW part, FB an overlapped F "
      "and B, A2A one all-to-all, P2P one pipeline transfer (default F=1,B=2,W=1)");
  sub.add_option("--preset", q.preset,
                 "deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its "
                 "compute partner; ampipe-16p (simulate): the AMPipe seed's 16-device 128k run, "
                 "a whole scenario (docs/ampipe.md); llama2-70b-xdc (simulate): llama2-70B over "
                 "two data centres, tp 8 pp 8, --chunks V (docs/cross-dc.md)")
      ->check(CLI::IsMember({"deepseek-v3", "ampipe-16p", "llama2-70b-xdc"}))
      ->excludes(cost);
  sub.add_flag("--barrier", q.barrier, "each rank waits for a slot before the next");
  contention_option(sub, contention_text);
}

void output_options(CLI::App& sub, request& q, bool pictures) {
  sub.add_flag("--json", q.json, "print the result as JSON");
  if (!pictures) return;
  sub.add_option("--trace", q.trace, "write a Chrome trace (Perfetto) of the step");
  sub.add_option("--svg", q.svg, "write an SVG timeline");
}

/// Checks CLI11 cannot express: options that apply to some values of another only; fills the
/// numbers read from text options (--inject-fault).
void check_combinations(request& q) {
  const auto bad = [](const std::string& why) { throw config_error("weft: " + why); };
  const bool interleaved_asked =
      q.schedule == "interleaved" ||
      std::find(q.schedules.begin(), q.schedules.end(), "interleaved") != q.schedules.end();
  if (q.command == "plan" && q.plan_preset.empty() && (q.model_file.empty() || q.cluster.empty()))
    bad("plan needs --model and --cluster (or --preset NAME)");
  if (q.command == "search") {
    const bool xdc_search = q.preset == "llama2-70b-xdc";
    if (!xdc_search && (q.pp == 0 || q.micro == 0))
      bad("search needs --pp and --micro (or --preset llama2-70b-xdc)");
    if (xdc_search && (q.pp != 0 || q.layers != 1 || q.moe || q.shared_expert || q.fb_overlap ||
                       q.placement != "loop"))
      bad("--preset llama2-70b-xdc is a whole scenario (pp 8, tp 8, loop placement); with search "
          "it takes --chunks, --micro, --delay-model, --max-live and the search's options");
    if (q.delay != "none" && !xdc_search)
      bad("--delay-model in search prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
          "is unit-free)");
    if (q.delay == "intra-node")
      bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different "
          "machines; use inter-node or cross-dc[:KM[:RATIO]]");
    if (q.placement == "vee" && q.chunks != 2)
      bad("--placement vee puts 2 chunks on each rank: leave --chunks out");
    if (q.preset == "deepseek-v3" && !(q.moe || q.shared_expert || q.fb_overlap))
      bad("--preset deepseek-v3 prices MoE sub-stages: add --moe (or --fb-overlap)");
    if (!q.out.empty() && xdc_search)
      bad("--out writes PyTorch's CSV of unit-free schedules; the llama2-70b-xdc scenario has "
          "none (use --svg)");
    return;
  }
  if (q.command == "run" && q.schedule_file.empty()) {
    if (q.schedule.empty()) throw CLI::RequiredError("--schedule (or --schedule-file)");
    if (q.pp == 0) throw CLI::RequiredError("--pp");
    if (q.micro == 0) throw CLI::RequiredError("--micro");
  }
  if (q.command == "run" && !q.schedule_file.empty() &&
      (!q.schedule.empty() || q.pp != 0 || q.micro != 0 || q.chunks != 2 || q.layers != 1 ||
       q.moe || q.shared_expert || q.fb_overlap || q.transfers || q.ampipe() || q.p2p_options() ||
       q.ep != 0))
    bad("--schedule-file holds the whole schedule (ranks, micro-batches, chunks; whole blocks on "
        "the tiny dense model): it takes no --schedule, --pp, --micro, --chunks, --layers, --moe, "
        "--shared-expert, --fb-overlap, --transfers, --ep, AMPipe or p2p options");
  if (q.chunks != 2 && !interleaved_asked && q.preset != "llama2-70b-xdc")
    bad("--chunks applies to the interleaved schedule (and --preset llama2-70b-xdc) only");
  if (q.command == "generate" && q.format == "csv" && (q.moe || q.shared_expert))
    bad("PyTorch's CSV holds whole-chunk actions; --moe and --shared-expert need --format text");
  if (q.command == "run" && q.ep > 1 && !(q.moe || q.shared_expert || q.fb_overlap))
    bad("--ep needs MoE layers (--moe or --fb-overlap)");
  const bool xdc = q.preset == "llama2-70b-xdc";
  if (xdc && q.command != "simulate") bad("--preset llama2-70b-xdc is simulate's");
  if (xdc && (!q.schedule.empty() || q.pp != 0 || q.layers != 1 || q.moe || q.shared_expert ||
              q.fb_overlap || q.transfers || q.barrier || q.ampipe() || q.p2p != "pytorch"))
    bad("--preset llama2-70b-xdc is a whole scenario (Megatron's interleaved schedule on pp 8, "
        "tp 8); it takes --chunks, --micro, --delay-model and the seed's switches "
        "(--overlap-p2p, --multi-stream, --log-allreduce, --async-log-allreduce, --nanopipe) "
        "only");
  if (q.command == "simulate" && xdc && (q.delay == "intra-node"))
    bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different machines; "
        "use inter-node or cross-dc[:KM[:RATIO]]");
  if (q.command == "simulate" && q.delay != "none" && !xdc)
    bad("--delay-model in simulate prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
        "is unit-free)");
  if (q.p2p_multi_stream && !q.overlap_p2p)
    bad("--use-multi-stream option must be enabled together with "
        "--overlap-warmup-cooldown-communication (--multi-stream needs --overlap-p2p)");
  if (q.p2p == "blocking" && q.overlap_p2p)
    bad("--p2p blocking and --overlap-p2p contradict each other: a receive posted early is one "
        "the host does not wait for");
  if (q.log_allreduce && q.async_log_allreduce)
    bad("--log-allreduce and --async-log-allreduce: give one (the second makes the first "
        "asynchronous)");
  const bool scenario = q.preset == "ampipe-16p" || xdc;
  if (q.preset == "ampipe-16p" && q.command != "simulate") bad("--preset ampipe-16p is simulate's");
  if (q.command == "simulate" && !scenario) {
    if (q.schedule.empty()) throw CLI::RequiredError("--schedule");
    if (q.pp == 0) throw CLI::RequiredError("--pp");
    if (q.micro == 0) throw CLI::RequiredError("--micro");
  }
  if (q.preset == "ampipe-16p" &&
      (!q.schedule.empty() || q.pp != 0 || q.micro != 0 || q.layers != 1 || q.moe ||
       q.shared_expert || q.fb_overlap || q.transfers || q.barrier || q.p2p_options()))
    bad("--preset ampipe-16p is a whole scenario (pp 1, 2 MoE layers, its own schedule); it takes "
        "no --schedule, --pp, --micro, --layers, --moe, --shared-expert, --fb-overlap, "
        "--transfers, --barrier or p2p options");
  if (q.ampipe() && !scenario && !(q.moe || q.shared_expert || q.fb_overlap))
    bad("AMPipe and pipe-experts split MoE layers: add --moe (or --shared-expert)");
  if (q.ampipe_degree == "auto" && !scenario)
    bad("--ampipe-degree auto needs a cost model of the sequence: --preset ampipe-16p");
  if (q.command == "generate" && q.format == "csv" && q.ampipe())
    bad("PyTorch's CSV holds whole-chunk actions; AMPipe's splits need --format text");
  if (q.command == "tp2d") {
    if (q.preset.empty() && (q.tp_x == 0 || q.tp_y == 0))
      bad("tp2d needs --tp-x and --tp-y (both > 1), or --preset llama3-405b");
    const bool sized = q.tp_x != 0 || q.tp_y != 0 || q.hidden != 192 || q.heads != 24 ||
                       q.ffn != 0 || q.seq != 0 || q.batch != 1 || q.overlap != "none" ||
                       q.ag_matmul || q.matmul_rs || q.coc_fused || q.delay != "none";
    if (!q.preset.empty() && sized)
      bad("--preset llama3-405b is a whole scenario (tp 16: 8 x 2 against 16 x 1, every "
          "overlap); it takes --json and --contention only");
    if (q.delay == "cross-dc") bad("tp2d's --delay-model is none, intra-node or inter-node");
    if (q.preset.empty() && q.contention.active())
      bad("tp2d prices overlap in the simulated scenario only: --contention needs --preset "
          "llama3-405b (a run measures what overlap costs)");
  }
  if (q.command == "run" && q.backend == "mpi" && q.delay != "none")
    bad("--delay-model emulates links between in-process ranks; over MPI the links are real: "
        "leave it out with --backend mpi");
  if (q.command == "run" && q.backend != "mpi" && (q.reduce != "member" || q.mpi_threads != "auto"))
    bad("--reduce and --mpi-threads apply to --backend mpi");
  if (q.command == "run" && !q.fault.empty()) {
    const auto colon = q.fault.find(':');
    const std::string kind = q.fault.substr(0, colon);
    if (kind != "throw" && kind != "exit" && kind != "kill" && kind != "stall")
      bad("--inject-fault " + q.fault + ": the kind is throw, exit, kill or stall");
    const std::string rest = colon == std::string::npos ? "" : q.fault.substr(colon + 1);
    const bool digits_ok =
        !rest.empty() && rest.find_first_not_of("0123456789:") == std::string::npos &&
        rest.front() != ':' && rest.back() != ':' && std::count(rest.begin(), rest.end(), ':') <= 1;
    if (!digits_ok) bad("--inject-fault " + q.fault + ": give KIND:RANK[:N], RANK and N numbers");
    // Each number in full, or refused by name: a prefix read ("99999999999" as a stoi that
    // throws, or as 0) would aim the fault elsewhere.
    const auto number = [&](std::string_view text, long most, const char* what) {
      long v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc{} || end != text.data() + text.size() || v > most)
        bad("--inject-fault " + q.fault + ": " + what + " must be at most " + std::to_string(most));
      return v;
    };
    const std::string_view digits = rest;
    const auto second = digits.find(':');
    q.fault_rank = static_cast<int>(number(digits.substr(0, second), 65535L * 255, "RANK"));
    q.fault_op =
        second == std::string_view::npos
            ? 0
            : number(digits.substr(second + 1), std::numeric_limits<std::int32_t>::max(), "N");
    if ((kind == "exit" || kind == "kill") && q.backend != "mpi")
      bad("--inject-fault " + kind +
          " ends a process: it needs --backend mpi (in-process, every "
          "rank would go)");
  }
  if (q.command == "plan-cp") {
    if (q.mask.empty() == q.mask_file.empty()) bad("give one of --mask and --mask-file");
    if (!q.mask.empty() && q.seq == 0) bad("--seq S is required with --mask");
  }
}

}  // namespace

parsed parse(int argc, const char* const* argv) {
  parsed r;
  request& q = r.q;
  CLI::App app{"weft: verify, simulate and run compute/communication overlap schedules", "weft"};
  app.set_version_flag("--version", std::string("weft ") + version());
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.footer("Exit codes: 0 done (legal), 1 illegal, 2 bad input. Each subcommand has --help.");

  std::string cost_text, contention_text;
  auto* generate = app.add_subcommand("generate", "print a schedule");
  pipeline_options(*generate, q, true);
  generate
      ->add_option("--format", q.format,
                   "text: slots (default); csv: PyTorch's schedule CSV (whole chunks only; with "
                   "--fb-overlap, OVERLAP_F_B cells)")
      ->check(CLI::IsMember({"text", "csv"}));

  auto* check = app.add_subcommand("check", "check a generated schedule: exit 0 legal, 1 illegal");
  pipeline_options(*check, q, true);
  check->add_option("--max-live", q.max_live, "rule 5: live activations per rank (0: no bound)")
      ->check(CLI::Range(0, 1 << 30));
  output_options(*check, q, false);

  auto* verify = app.add_subcommand(
      "verify", "read a PyTorch schedule CSV and check it: exit 0 legal, 1 illegal, 2 unreadable");
  verify->add_option("file", q.file, "the CSV file")->required();
  output_options(*verify, q, false);

  auto* simulate = app.add_subcommand(
      "simulate", "run a schedule over simulated time: makespan, bubble, exposed communication");
  pipeline_options(*simulate, q, true, true);
  cost_options(*simulate, q, cost_text, contention_text);
  simulate->add_option("--delay-model", q.delay,
                       "with --preset llama2-70b-xdc, the link between the data centres: "
                       "cross-dc[:KM[:RATIO]] (default the seed's 960 km, ratio 128), or "
                       "inter-node (one data centre)");
  output_options(*simulate, q, true);

  auto* compare = app.add_subcommand("compare", "simulate several schedules side by side");
  pipeline_options(*compare, q, false);
  cost_options(*compare, q, cost_text, contention_text);
  output_options(*compare, q, false);

  auto* run = app.add_subcommand(
      "run",
      "train a tiny model one step on in-process ranks (dense for whole blocks, MoE for "
      "sub-stages): measured metrics, the prediction, loss and gradient error against serial");
  pipeline_options(*run, q, true, true);
  run->add_option("--schedule-file", q.schedule_file,
                  "a PyTorch schedule CSV (whole chunks; e.g. weft search --out) instead of "
                  "--schedule, --pp and --micro: run on the tiny dense model");
  run->add_option("--ep", q.ep,
                  "expert-parallel replicas of each pipeline rank (default 2 with MoE layers)")
      ->check(CLI::Range(1, 64));
  run->add_option("--delay-model", q.delay,
                  "the emulated link for transfers and all-to-alls: none, intra-node, inter-node, "
                  "or cross-dc[:KM[:RATIO]] (data centres KM apart, 1000 by default; bandwidth / "
                  "RATIO, 1 by default)");
  run->add_option("--backend", q.backend,
                  "inproc: every rank a thread of this process; mpi: one process per rank, "
                  "started by mpirun (docs/mpi.md)")
      ->check(CLI::IsMember({"inproc", "mpi"}));
  run->add_option("--reduce", q.reduce,
                  "mpi: sums in member order (equal to inproc bit for bit) or the MPI library's "
                  "own (MPI_Iallreduce, MPI_Ireduce_scatter_block)")
      ->check(CLI::IsMember({"member", "library"}));
  run->add_option("--mpi-threads", q.mpi_threads,
                  "mpi: callers issue MPI calls (multiple, needs MPI_THREAD_MULTIPLE) or one "
                  "progress thread owns them (progress); auto: multiple when MPI provides it")
      ->check(CLI::IsMember({"auto", "multiple", "progress"}));
  run->add_option("--workers", q.workers,
                  "threads that run compute (default: 2 for all in-process ranks, 1 per MPI "
                  "process)")
      ->check(CLI::Range(1, 256));
  run->add_option("--timeout", q.timeout_s,
                  "seconds; a run not finished by then stops on every rank, naming the op each "
                  "waits at (default 30)")
      ->check(CLI::Range(0.01, 86400.0));
  run->add_option("--inject-fault", q.fault,
                  "KIND:RANK[:N] with KIND throw, exit, kill or stall: world rank RANK fails "
                  "before its N-th op (0 first, the default), to see how a run ends");
  output_options(*run, q, true);

  auto* tp2d = app.add_subcommand(
      "tp2d",
      "2D tensor parallelism (docs/tp-2d.md): one attention + MLP layer on tp_x x tp_y in-process "
      "ranks and on tp_x * tp_y ranks of 1D tensor parallelism, each linear a schedule: error "
      "against the unsharded layer, measured and predicted step time, bytes moved; or "
      "--preset llama3-405b, simulated");
  tp2d->add_option("--tp-x", q.tp_x, "the grid's x size (TP-X groups: contiguous ranks)")
      ->check(CLI::Range(2, 16));
  tp2d->add_option("--tp-y", q.tp_y, "the grid's y size (TP-Y groups: ranks tp_x apart)")
      ->check(CLI::Range(2, 16));
  tp2d->add_option("--hidden", q.hidden, "hidden size (default 192)")->check(CLI::Range(1, 4096));
  tp2d->add_option("--heads", q.heads, "attention heads (default 24)")->check(CLI::Range(1, 4096));
  tp2d->add_option("--ffn", q.ffn, "MLP inner width (default 4 x hidden)")
      ->check(CLI::Range(1, 16384));
  tp2d->add_option("--seq", q.seq, "tokens per sequence (default 256)")->check(CLI::Range(1, 4096));
  tp2d->add_option("--batch", q.batch, "sequences (default 1)")->check(CLI::Range(1, 64));
  auto* overlap =
      tp2d->add_option("--overlap", q.overlap,
                       "the forward overlap of every linear: none (default), ag-matmul (the "
                       "all-gather as a ring of steps under the matmul's pieces), matmul-rs "
                       "(pieces of the output reduce-scattered under the next piece), fused "
                       "(both)")
          ->check(CLI::IsMember({"none", "ag-matmul", "matmul-rs", "fused"}));
  tp2d->add_flag("--enable-overlap-ag-with-matmul", q.ag_matmul, "the seed's name for ag-matmul")
      ->excludes(overlap);
  tp2d->add_flag("--enable-overlap-matmul-with-rs", q.matmul_rs, "the seed's name for matmul-rs")
      ->excludes(overlap);
  tp2d->add_flag("--coc-fused-kernel", q.coc_fused, "the seed's name for fused")->excludes(overlap);
  tp2d->add_option("--delay-model", q.delay,
                   "the emulated link of every collective: none, intra-node or inter-node");
  tp2d->add_option("--preset", q.preset,
                   "llama3-405b: simulate a llama3-405B layer at tp 16, 1D against 8 x 2 under "
                   "every overlap, from device and link facts (no run)")
      ->check(CLI::IsMember({"llama3-405b"}));
  contention_option(*tp2d, contention_text);
  output_options(*tp2d, q, false);

  auto* job = app.add_subcommand(
      "plan",
      "plan a real training job (docs/planning.md): a model's Hugging Face config.json, the job "
      "as Megatron's flags state it and a cluster in; step time, tokens/s, MFU, memory per stage "
      "against the device's, and every schedule that applies, out");
  // The model, the job and the cluster: flags, files, or a preset's three files.
  auto* preset = job->add_option("--preset", q.plan_preset,
                                 "a preset's folder of config.json, job.json and cluster.json "
                                 "(presets/: llama2-70b-xdc, ampipe-16p, llama3-405b, "
                                 "deepseek-v3, or one's own under $WEFT_PRESETS)")
                     ->check(
                         [](const std::string& v) -> std::string {
                           const bool plain =
                               !v.empty() && v.size() <= 64 &&
                               v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") ==
                                   std::string::npos &&
                               v.front() != '.';
                           return plain ? "" : v + " is not a preset's name (a-z, 0-9, . - _)";
                         },
                         "NAME");
  job->add_option("--model", q.model_file, "the model's config.json")->excludes(preset);
  job->add_option("--cluster", q.cluster,
                  "a100-80g, h100-sxm, h800, ascend-910b, or FILE.json for one's own "
                  "(docs/planning.md has the schema)")
      ->excludes(preset)
      ->check(
          [](const std::string& v) -> std::string {
            for (const char* n : {"a100-80g", "h100-sxm", "h800", "ascend-910b"})
              if (v == n) return "";
            if (v.size() > 5 && v.ends_with(".json")) return "";
            return v + " is not a100-80g, h100-sxm, h800, ascend-910b or a FILE.json";
          },
          "CLUSTER");
  auto* job_file = job->add_option("--job", q.job_file,
                                   "the job as a JSON file keyed by these flags without their "
                                   "dashes (docs/planning.md)")
                       ->excludes(preset);
  // A job's flags say what a job file or a preset's says: one or the other.
  std::vector<CLI::Option*> job_flags{
      job->add_option("--tp", q.job.tp, "tensor-parallel size")->check(CLI::Range(1, 1 << 16)),
      job->add_option("--pp", q.job.pp, "pipeline-parallel size")->check(CLI::Range(1, 1 << 16)),
      job->add_option("--dp", q.job.dp, "data-parallel size")->check(CLI::Range(1, 1 << 20)),
      job->add_option("--cp", q.job.cp, "context-parallel size")->check(CLI::Range(1, 1 << 16)),
      job->add_option("--ep", q.job.ep, "expert-parallel size (carved from dp x cp)")
          ->check(CLI::Range(1, 1 << 16)),
      job->add_option("--micro-batch-size", q.job.micro_batch_size, "sequences per micro-batch")
          ->check(CLI::Range(1, 1 << 16)),
      job->add_option("--global-batch-size", q.job.global_batch_size,
                      "sequences per optimizer step (default: one micro-batch per dp rank)")
          ->check(CLI::Range(1, 1 << 30)),
      job->add_option("--seq-length", q.job.seq, "tokens per sequence (default 4096)")
          ->check(CLI::Range(1.0, 16777216.0)),
      job->add_option("--recompute", q.recompute, "none, selective or full (default none)")
          ->check(CLI::IsMember(std::vector<std::string>(weft::plan::recompute_names.begin(),
                                                         weft::plan::recompute_names.end()))),
      job->add_flag("--sequence-parallel", q.job.sequence_parallel,
                    "shard what tensor parallelism replicates over its ranks too"),
      job->add_option("--schedule", q.job.schedule, "the pipeline schedule (default 1f1b)")
          ->check(CLI::IsMember(schedule_names)),
      job->add_option("--chunks", q.job.chunks, "model chunks per rank (interleaved; default 1)")
          ->check(CLI::Range(1, weft::limits::chunks)),
      job->add_option("--pipeline-layout", q.job.layout,
                      "the layers of each stage in Megatron's grammar, e.g. \"Et*3|(tt|)*29,m|L\""),
      job->add_flag("--overlap-grad-reduce", q.job.overlap_grad_reduce,
                    "the gradient reduction overlapped with the backward")};
  auto* whole = job->add_flag("--no-distributed-optimizer", q.no_distributed_optimizer,
                              "keep the optimizer states whole on every data-parallel rank");
  job_flags.push_back(whole);
  job_flags.push_back(
      job->add_option("--data-parallel-sharding-strategy", q.sharding,
                      "what the data-parallel ranks shard (Megatron-FSDP's names): no_shard, optim "
                      "(the distributed optimizer, ZeRO-1; the default), optim_grads (ZeRO-2) or "
                      "optim_grads_params (FSDP, ZeRO-3)")
          ->check(CLI::IsMember(std::vector<std::string>(weft::plan::dp_sharding_names.begin(),
                                                         weft::plan::dp_sharding_names.end())))
          ->excludes(whole));
  job_flags.push_back(job->add_flag(
      "--no-flash-attention", q.no_flash_attention,
      "attention's scores as whole matmuls, kept for the backward (2022's Megatron)"));
  for (CLI::Option* o : job_flags) o->excludes(job_file)->excludes(preset);
  job->add_option("--search-budget-s", q.plan_search_budget_s,
                  "also run the schedule search (weft search) on the best plan's costs for this "
                  "long (default 0: not at all)")
      ->check(CLI::Range(0.0, 86400.0));
  job->add_option("--evaluations", q.evaluations,
                  "stop the search after judging this many orders (0: no cap)")
      ->check(CLI::Range(0LL, 1LL << 40));
  job->add_option("--seed", q.seed, "the search's seed (default 1)")
      ->check(CLI::Range(0LL, 1LL << 62));
  job->add_option("--out", q.out,
                  "write the fastest order found as PyTorch's schedule CSV (weft run "
                  "--schedule-file runs it)");
  job->add_flag("--check", q.check_memory,
                "rule 5 in bytes: exit 1 (illegal) when a rank's model states and live "
                "activations exceed its device's memory, naming the op where it first does");
  output_options(*job, q, true);

  auto* search = app.add_subcommand(
      "search",
      "search for the fastest legal schedule for given costs and a memory cap: the best found, "
      "every generator's and the lower bounds (docs/search.md)");
  search->add_option("--pp", q.pp, "pipeline ranks (devices)")
      ->check(CLI::Range(1, weft::limits::ranks));
  search->add_option("--micro", q.micro, "micro-batches per step")
      ->check(CLI::Range(1, weft::limits::micro));
  CLI::Option* search_chunks = search->add_option(
      "--chunks", q.chunks, "model chunks per rank with --placement loop (default 1; vee has 2)");
  search_chunks->check(CLI::Range(1, weft::limits::chunks));
  search
      ->add_option("--placement", q.placement,
                   "loop: chunk c on rank c % pp (1F1B, ZB-H1, interleaved); vee: rank r holds "
                   "chunks r and 2 pp - 1 - r (ZB-V, DualPipeV)")
      ->check(CLI::IsMember({"loop", "vee"}));
  search->add_option("--layers", q.layers, "layers per model chunk (default 1)")
      ->check(CLI::Range(1, weft::limits::layers));
  search->add_flag("--moe", q.moe, "layers of MoE sub-stages: attn, dispatch, mlp, combine");
  search->add_flag("--shared-expert", q.shared_expert,
                   "MoE layers with a shared expert beside the routed ones");
  search->add_flag("--fb-overlap", q.fb_overlap,
                   "MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek)");
  {
    auto* cost = search->add_option(
        "--cost", cost_text,
        "a rank's share of the model: F forward, B full backward, W its dW part, FB an "
        "overlapped F and B, A2A one all-to-all, P2P one pipeline transfer (default F=1,B=2,W=1)");
    search
        ->add_option("--preset", q.preset,
                     "deepseek-v3: MoE costs per chunk layer; llama2-70b-xdc: llama2-70B over "
                     "two data centres, tp 8 pp 8, in seconds (docs/cross-dc.md)")
        ->check(CLI::IsMember({"deepseek-v3", "llama2-70b-xdc"}))
        ->excludes(cost);
  }
  contention_option(*search, contention_text);
  search->add_option("--delay-model", q.delay,
                     "with --preset llama2-70b-xdc, the link between the data centres: "
                     "cross-dc[:KM[:RATIO]] (default the seed's 960 km, ratio 128), or "
                     "inter-node (one data centre)");
  search
      ->add_option("--max-live", q.max_live,
                   "the memory cap: live activation units per rank, as rule 5 counts them (0: "
                   "none)")
      ->check(CLI::Range(0, 1 << 30));
  search
      ->add_option("--budget-s", q.search_budget_s,
                   "search time in seconds (default 10): the best plan found by then")
      ->check(CLI::Range(0.0, 86400.0));
  search
      ->add_option("--evaluations", q.evaluations,
                   "stop after judging this many plans (0: no cap); reached before the budget, "
                   "the result depends only on --seed")
      ->check(CLI::Range(0LL, 1LL << 40));
  search->add_option("--seed", q.seed, "the local search's seed (default 1)")
      ->check(CLI::Range(0LL, 1LL << 62));
  search->add_flag("--json", q.json, "print the result as JSON");
  search->add_option("--out", q.out,
                     "write the best plan as PyTorch's schedule CSV (runs with weft run "
                     "--schedule-file, or torchtitan's custom CSV path)");
  search->add_option("--svg", q.svg, "write an SVG timeline of the best plan, simulated");

  auto* plan = app.add_subcommand(
      "plan-cp",
      "plan adaptive context parallelism for a mask: re-map the sequence, schedule its (query, "
      "key/value) blocks in rounds under a cap per rank and round (docs/adaptive-cp.md)");
  auto* mask = plan->add_option(
      "--mask", q.mask,
      "FAMILY[:K=V,...]: full, causal, window, bidir-window, global-window, documents, "
      "causal-documents, interleaved-documents, shared-question, causal-blockwise, prefix-lm, "
      "random");
  plan->add_option("--mask-file", q.mask_file, "a mask in weft's text form")->excludes(mask);
  plan->add_option("--seq", q.seq, "sequence length in tokens")
      ->check(CLI::Range(1, cp::max_tokens));
  plan->add_option("--cp", q.cp, "context-parallel ranks")->required()->check(CLI::Range(1, 4096));
  plan->add_option("--cap", q.cap, "communication units per rank and round (default 6)")
      ->check(CLI::Range(0, 1 << 20));
  plan->add_option("--coarse", q.coarse,
                   "plan on a C x C coarse mask (default 1024; 0: the full mask)")
      ->check(CLI::Range(0, 8192));
  plan->add_flag(
      "--no-remap", [&q](std::int64_t) { q.remap = false; },
      "keep the original order (a mask already local, e.g. windows)");
  plan->add_option("--budget-s", q.budget_s,
                   "planning time budget in seconds (default 2): the best plan found by then")
      ->check(CLI::Range(0.001, 3600.0));
  output_options(*plan, q, false);
  plan->add_option("--svg", q.svg, "write the re-mapped mask as SVG");

  try {
    if (argc <= 1) {
      r.err = app.help();
      r.exit_code = exit_bad_input;
      return r;
    }
    if (const std::string_view first = argv[1]; !first.empty() && first[0] != '-') {
      bool known = false;
      for (const CLI::App* s : app.get_subcommands({})) known = known || s->get_name() == first;
      if (!known) {
        r.err =
            "weft: unknown subcommand '" + std::string(first) +
            "' (generate, check, verify, simulate, compare, run, tp2d, plan-cp, search, plan)\nrun "
            "'weft --help' "
            "for the options\n";
        r.exit_code = exit_bad_input;
        return r;
      }
    }
    app.parse(argc, argv);
    for (const CLI::App* sub : app.get_subcommands()) q.command = sub->get_name();
    if (!cost_text.empty()) q.cost = parse_costs(cost_text);
    if (!contention_text.empty())
      q.contention = parse_contention(contention_text, q.contention_scenario);
    if (q.command == "search" && search_chunks->count() == 0)
      q.chunks = q.placement == "vee" ? 2 : 1;
    parse_delay(q);
    if (q.ampipe_degree != "auto") {  // in decimal, as the range check read it
      int d = 0;
      CLI::detail::lexical_cast(q.ampipe_degree, d);
      q.ampipe_degree = std::to_string(d);
    }
    if (q.command == "plan") {
      namespace plan = weft::plan;
      q.job.policy = plan::named<plan::recompute>(plan::recompute_names, q.recompute)
                         .value_or(plan::recompute::none);  // the flag's check named them
      q.job.sharding = q.no_distributed_optimizer
                           ? plan::dp_sharding::no_shard
                           : plan::named<plan::dp_sharding>(plan::dp_sharding_names, q.sharding)
                                 .value_or(plan::dp_sharding::optim);
      q.job.flash_attention = !q.no_flash_attention;
    }
    check_combinations(q);
    r.run = true;
    return r;
  } catch (const CLI::CallForHelp&) {
    r.out = app.help();
  } catch (const CLI::CallForAllHelp&) {
    r.out = app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::CallForVersion&) {
    r.out = std::string("weft ") + version() + "\n";
  } catch (const std::exception& e) {
    std::string sub = "weft";
    const CLI::App* where = &app;
    for (const CLI::App* s : app.get_subcommands()) {
      sub += " " + s->get_name();
      where = s;
    }
    // Options the subcommand does not take come first: they may be why a required one is
    // missing. Named in the order given.
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
    if (!extras.empty())
      why = sub + " does not take " + extras;
    else if (why.rfind("weft: ", 0) != 0)
      why = sub + ": " + why;
    r.err = why + "\nrun '" + sub + " --help' for the options\n";
    r.exit_code = exit_bad_input;
  }
  return r;
}

}  // namespace weft::cli
