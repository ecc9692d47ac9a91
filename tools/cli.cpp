// The weft tool's command line on CLI11: one subcommand per task, each with its own options
// struct (commands/NAME.hpp) and --help; typed, ranged values, every choice read into its enum
// here; a flag a subcommand does not take is an error. What CLI11 cannot express — options that
// apply to some values of another only — is each subcommand's `check`.
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
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/key_values.hpp>
#include <weft/core/op.hpp>
#include <weft/cp/mask.hpp>
#include <weft/generators/registry.hpp>
#include <weft/plan/cluster.hpp>
#include <weft/plan/job.hpp>
#include <weft/plan/memory.hpp>

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

[[noreturn]] void bad(const std::string& why) { throw config_error("weft: " + why); }

/// The generators' names, from the library's registry.
const std::vector<std::string> schedule_names = [] {
  std::vector<std::string> out;
  for (const weft::generator_info& g : weft::generators) out.emplace_back(g.name);
  return out;
}();

/// Whether schedule `name` takes a chunk count (`--chunks`), as the registry says.
bool takes_chunks(std::string_view name) {
  const weft::generator_info* g = weft::find_generator(name);
  return g && g->takes_chunk_count();
}

/// The schedules that take one, "a, b" from the registry, for messages.
const std::string chunked_list = [] {
  std::string out;
  for (const weft::generator_info& g : weft::generators)
    if (g.takes_chunk_count()) out += (out.empty() ? "" : ", ") + std::string(g.name);
  return out;
}();

/// "a, b, c" from the registry, for --help.
const std::string schedule_list = [] {
  std::string out;
  for (const std::string& n : schedule_names) out += (out.empty() ? "" : ", ") + n;
  return out;
}();

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
/// not integers (where CLI::Range would call 8.0 out of range, and a floating option would take
/// 4096.5 and print 4096). Anything else as CLI::Range has it ("Value x not in range a to b").
CLI::Validator whole_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        double x = 0;
        const char* end = v.data() + v.size();
        const auto [at, ec] = std::from_chars(v.data(), end, x);
        if (ec == std::errc() && at == end && v.find_first_of(".eE") != std::string::npos) {
          if (x != std::floor(x) || !std::isfinite(x)) return v + " is not a whole number";
          if (x >= -9e18 && x <= 9e18)
            return v + " is not an integer (write " + std::to_string(static_cast<long long>(x)) +
                   ")";
        }
        return CLI::Range(lo, hi)(v);
      },
      "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

/// The choices of an enum whose values the library already spells (plan's recompute, sharding).
template <class E, std::size_t N>
std::vector<std::pair<std::string, E>> spelled(const std::array<std::string_view, N>& names) {
  std::vector<std::pair<std::string, E>> out;
  for (std::size_t i = 0; i < N; ++i) out.emplace_back(std::string(names[i]), static_cast<E>(i));
  return out;
}

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
/// A number of --delay-model's cross-dc part within `range` (a cluster file's, one home).
double delay_number(const std::string& text, const char* what,
                    const weft::plan::fact_range& range) {
  const auto refuse = [&] {
    bad("--delay-model: the " + std::string(what) + " must be a number in [" + shown(range.lo) +
        ", " + shown(range.hi) + "], not '" + excerpt(text) + "'");
  };
  if (text.empty()) refuse();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || !range.holds(v)) refuse();
  return v;
}

/// --delay-model: a link class, cross-dc with its distance and convergence ratio.
delay_args parse_delay(const std::string& d) {
  delay_args out;
  for (const link_choice l :
       {link_choice::none, link_choice::intra_node, link_choice::inter_node, link_choice::cross_dc})
    if (d == name_of(l)) {
      out.link = l;
      return out;
    }
  if (d.rfind("cross-dc:", 0) != 0)
    bad("--delay-model: '" + d + "' is not none, intra-node, inter-node or cross-dc[:KM[:RATIO]]");
  const std::string rest = d.substr(9);
  const std::size_t colon = rest.find(':');
  out.link = link_choice::cross_dc;
  out.km = delay_number(rest.substr(0, colon), "distance (km)", weft::plan::cluster_ranges::km);
  out.km_given = true;
  if (colon != std::string::npos) {
    out.ratio = delay_number(rest.substr(colon + 1), "convergence ratio",
                             weft::plan::cluster_ranges::convergence_ratio);
    out.ratio_given = true;
  }
  return out;
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

/// `--inject-fault KIND:RANK[:N]`, each number in full or refused by name: a prefix read
/// ("99999999999" as a stoi that throws, or as 0) would aim the fault elsewhere.
fault_spec parse_fault(const std::string& text) {
  fault_spec f{.text = text};
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  constexpr std::pair<std::string_view, fault_kind> kinds[] = {{"throw", fault_kind::throw_error},
                                                               {"exit", fault_kind::exit},
                                                               {"kill", fault_kind::kill},
                                                               {"stall", fault_kind::stall}};
  for (const auto& [name, k] : kinds)
    if (kind == name) f.kind = k;
  if (f.kind == fault_kind::none)
    bad("--inject-fault " + text + ": the kind is throw, exit, kill or stall");
  const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits_ok =
      !rest.empty() && rest.find_first_not_of("0123456789:") == std::string::npos &&
      rest.front() != ':' && rest.back() != ':' && std::count(rest.begin(), rest.end(), ':') <= 1;
  if (!digits_ok) bad("--inject-fault " + text + ": give KIND:RANK[:N], RANK and N numbers");
  const auto number = [&](std::string_view digits, long most, const char* what) {
    long v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc{} || end != digits.data() + digits.size() || v > most)
      bad("--inject-fault " + text + ": " + what + " must be at most " + std::to_string(most));
    return v;
  };
  const std::string_view digits = rest;
  const auto second = digits.find(':');
  f.rank = static_cast<int>(number(digits.substr(0, second), 65535L * 255, "RANK"));
  f.op = second == std::string_view::npos
             ? 0
             : number(digits.substr(second + 1), std::numeric_limits<std::int32_t>::max(), "N");
  return f;
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

  void finish() {
    if (costs && !cost.empty()) costs->unit = parse_costs(cost);
    if (!contention.empty()) {
      bool scenario = false;
      weft::contention_facts f = parse_contention(contention, scenario);
      if (costs) {
        costs->contention = f;
        costs->contention_scenario = scenario;
      }
      if (facts) *facts = f;
    }
    if (links && delay_option && delay_option->count() > 0) *links = parse_delay(delay);
    if (faults && !fault.empty()) *faults = parse_fault(fault);
  }
};

// ---- option groups --------------------------------------------------------------------------

/// The pipeline's options (generate, check, simulate, compare, run). `scenario`: a preset may
/// stand for the whole pipeline (simulate's ampipe-16p), so --schedule, --pp and --micro are
/// required only without it (the subcommand's check).
void pipeline_options(CLI::App& sub, pipeline_args& p, bool scenario) {
  const auto required = [&](CLI::Option* o) { return scenario ? o : o->required(); };
  required(sub.add_option("--pp", p.pp,
                          "pipeline ranks (devices); zb-v, dualpipe(v) put 2 chunks on each"))
      ->check(whole_in(1, weft::limits::ranks));
  required(sub.add_option("--micro", p.micro, "micro-batches per step"))
      ->check(whole_in(1, weft::limits::micro));
  sub.add_option("--chunks", p.chunks,
                 "model chunks per rank, for the schedules that take a count (default 2)")
      ->check(whole_in(1, weft::limits::chunks));
  sub.add_option("--layers", p.layers, "layers per model chunk (default 1)")
      ->check(whole_in(1, weft::limits::layers));
  sub.add_flag("--moe", p.moe, "layers of MoE sub-stages: attn, dispatch, mlp, combine");
  sub.add_flag("--shared-expert", p.shared_expert,
               "MoE layers with a shared expert beside the routed ones");
  sub.add_flag("--fb-overlap", p.fb_overlap,
               "MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek)");
  sub.add_flag("--transfers", p.transfers, "explicit send/recv ops, placed as PyTorch places them");
  sub.add_option("--ampipe-degree", p.ampipe_degree,
                 "AMPipe: each micro-batch's sequence in D chunks, their attention and experts "
                 "pipelined so all-to-alls hide (docs/ampipe.md); auto: the best degree "
                 "(ampipe-16p)")
      ->transform(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "auto") {
              v = "0";
              return "";
            }
            return whole_in(1, weft::limits::parts)(v);
          },
          "1..255 or auto"));
  sub.add_option("--pipe-experts-multi-data", p.multi_data,
                 "pipe-experts: the routed experts' inputs in N pieces (N / D per chunk), "
                 "all-to-alls pipelined with expert compute")
      ->check(whole_in(1, weft::limits::parts));
  sub.add_flag("--pipe-experts-multi-stream", p.multi_stream,
               "pipe-experts: each layer's second all-to-all on a second comm stream");
  sub.add_flag("--ampipe-tp-sp-comm-overlap", p.tp_sp_overlap,
               "AMPipe: all-to-alls per chunk and local expert, the experts' all-gather and "
               "reduce-scatter pipelined with their compute");
  sub.add_option("--p2p", p.p2p,
                 "how transfers are issued: pytorch (default; a stream per peer), megatron "
                 "(Megatron's interleaved code with overlap_p2p_comm: one stream, receives after "
                 "the previous step of their direction; for 1f1b the same as blocking), blocking "
                 "(Megatron without overlap_p2p_comm: batched calls, each waited by the host); "
                 "docs/cross-dc.md")
      ->transform(one_of<p2p_mode>({{"pytorch", p2p_mode::pytorch},
                                    {"megatron", p2p_mode::megatron},
                                    {"blocking", p2p_mode::blocking}}));
  sub.add_flag("--overlap-p2p,--overlap-warmup-cooldown-communication", p.overlap_p2p,
               "cross-DC: receives posted a step early in warm-up and cool-down (Megatron's "
               "lowering)");
  sub.add_flag("--multi-stream,--use-multi-stream", p.p2p_multi_stream,
               "cross-DC: sends and receives on ping/pong streams by rank parity (needs "
               "--overlap-p2p)");
  sub.add_flag("--log-allreduce", p.log_allreduce,
               "each micro-batch's loss all-reduced for logging on the last stage, awaited by its "
               "backward");
  sub.add_flag("--async-log-allreduce", p.async_log_allreduce,
               "the logging all-reduce awaited only at the end of the step");
  sub.add_flag("--nanopipe,--use-nanopipe", p.nanopipe,
               "interleaved: MindSpeed's NanoPipe, rank r's first 2r steady-phase backwards "
               "split, their dW run after the cool-down (docs/cross-dc.md)");
}

/// --schedule, for the subcommands that take one.
void schedule_option(CLI::App& sub, pipeline_args& p, bool scenario) {
  CLI::Option* o =
      sub.add_option("--schedule", p.schedule, schedule_list)->check(CLI::IsMember(schedule_names));
  if (!scenario) o->required();
}

void contention_option(CLI::App& sub, deferred& later) {
  sub.add_option(
      "--contention", later.contention,
      "what overlap costs (docs/metrics.md): off (the default), on (the published "
      "facts: links shared, compute 18.9% slower while its device communicates, arXiv "
      "2507.03114; a preset adds its scenario's resources), links or interference "
      "(one of the two), or key=values: links=1 shares links max-min fairly, compute=X "
      "slows compute by 1+X while its device communicates, comm=X the reverse, "
      "uplink=N a site uplink N ports wide, a2a/p2p/collectives/reduce_scatters=intra|inter "
      "their link class");
}

/// A preset's spelling.
std::pair<std::string, preset_name> preset(preset_name p) {
  constexpr std::string_view names[] = {"", "deepseek-v3", "ampipe-16p", "llama2-70b-xdc",
                                        "llama3-405b"};
  return {std::string(names[static_cast<int>(p)]), p};
}

constexpr const char* cost_help =
    "a rank's share of the model: F forward, B full backward, W its dW part, FB an overlapped F "
    "and B, A2A one all-to-all, P2P one pipeline transfer (default F=1,B=2,W=1)";

/// --cost, --preset (one of `presets`), --contention, and with `barrier` --barrier.
void cost_options(CLI::App& sub, cost_args& c, deferred& later,
                  std::vector<std::pair<std::string, preset_name>> presets,
                  const std::string& preset_help, bool barrier) {
  later.costs = &c;
  auto* cost = sub.add_option("--cost", later.cost, cost_help);
  sub.add_option("--preset", c.preset, preset_help)
      ->transform(one_of<preset_name>(std::move(presets)))
      ->excludes(cost);
  if (barrier) sub.add_flag("--barrier", c.barrier, "each rank waits for a slot before the next");
  contention_option(sub, later);
}

void delay_option(CLI::App& sub, delay_args& d, deferred& later, const std::string& help) {
  later.links = &d;
  later.delay_option = sub.add_option("--delay-model", later.delay, help);
}

constexpr const char* xdc_delay_help =
    "with --preset llama2-70b-xdc, the link between the data centres: cross-dc[:KM[:RATIO]] "
    "(default the seed's 960 km, ratio 128), or inter-node (one data centre)";

void output_options(CLI::App& sub, output_args& o, bool pictures) {
  sub.add_flag("--json", o.json, "print the result as JSON");
  if (!pictures) return;
  sub.add_option("--trace", o.trace, "write a Chrome trace (Perfetto) of the step");
  sub.add_option("--svg", o.svg, "write an SVG timeline");
}

// ---- the checks CLI11 cannot express, shared by the pipeline subcommands --------------------

/// The pipeline's own combinations; `csv` for generate --format csv.
void check_pipeline(const pipeline_args& p, bool interleaved_asked, bool scenario,
                    bool chunks_elsewhere) {
  if (p.chunks != 2 && !interleaved_asked && !chunks_elsewhere)
    bad("--chunks applies to the schedules that take a chunk count (" + chunked_list +
        ") and --preset llama2-70b-xdc only");
  if (p.p2p_multi_stream && !p.overlap_p2p)
    bad("--use-multi-stream option must be enabled together with "
        "--overlap-warmup-cooldown-communication (--multi-stream needs --overlap-p2p)");
  if (p.p2p == p2p_mode::blocking && p.overlap_p2p)
    bad("--p2p blocking and --overlap-p2p contradict each other: a receive posted early is one "
        "the host does not wait for");
  if (p.log_allreduce && p.async_log_allreduce)
    bad("--log-allreduce and --async-log-allreduce: give one (the second makes the first "
        "asynchronous)");
  if (p.ampipe() && !scenario && !p.sub_stages())
    bad("AMPipe and pipe-experts split MoE layers: add --moe (or --shared-expert)");
  if (p.ampipe_degree == 0 && !scenario)
    bad("--ampipe-degree auto needs a cost model of the sequence: --preset ampipe-16p");
}

/// --schedule, --pp and --micro, unless a scenario or a file stands for them.
void require_shape(const pipeline_args& p, bool schedule_file = false) {
  if (p.schedule.empty())
    throw CLI::RequiredError(schedule_file ? "--schedule (or --schedule-file)" : "--schedule");
  if (p.pp == 0) throw CLI::RequiredError("--pp");
  if (p.micro == 0) throw CLI::RequiredError("--micro");
}

/// A preset that is a whole scenario was given where the command does not run it.
void scenario_is_simulates(preset_name p) {
  if (p == preset_name::llama2_70b_xdc) bad("--preset llama2-70b-xdc is simulate's");
  if (p == preset_name::ampipe_16p) bad("--preset ampipe-16p is simulate's");
}

// ---- the subcommands ------------------------------------------------------------------------

void define(CLI::App& sub, generate_options& o, deferred&) {
  schedule_option(sub, o.pipeline, false);
  pipeline_options(sub, o.pipeline, false);
  sub.add_option("--format", o.format,
                 "text: slots (default); csv: PyTorch's schedule CSV (whole chunks only; with "
                 "--fb-overlap, OVERLAP_F_B cells)")
      ->transform(one_of<listing>({{"text", listing::text}, {"csv", listing::csv}}));
}

void check(const generate_options& o) {
  const pipeline_args& p = o.pipeline;
  check_pipeline(p, takes_chunks(p.schedule), false, false);
  if (o.format == listing::csv && (p.moe || p.shared_expert))
    bad("PyTorch's CSV holds whole-chunk actions; --moe and --shared-expert need --format text");
  if (o.format == listing::csv && p.ampipe())
    bad("PyTorch's CSV holds whole-chunk actions; AMPipe's splits need --format text");
}

void define(CLI::App& sub, check_options& o, deferred&) {
  schedule_option(sub, o.pipeline, false);
  pipeline_options(sub, o.pipeline, false);
  sub.add_option("--max-live", o.max_live, "rule 5: live activations per rank (0: no bound)")
      ->check(whole_in(0, 1 << 30));
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const check_options& o) {
  check_pipeline(o.pipeline, takes_chunks(o.pipeline.schedule), false, false);
}

void define(CLI::App& sub, verify_options& o, deferred&) {
  sub.add_option("file", o.file, "the CSV file")->required();
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const verify_options&) {}

void define(CLI::App& sub, simulate_options& o, deferred& later) {
  schedule_option(sub, o.pipeline, true);
  pipeline_options(sub, o.pipeline, true);
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::ampipe_16p),
                preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its "
               "compute partner; ampipe-16p (simulate): the AMPipe seed's 16-device 128k run, "
               "a whole scenario (docs/ampipe.md); llama2-70b-xdc (simulate): llama2-70B over "
               "two data centres, tp 8 pp 8, --chunks V (docs/cross-dc.md)",
               true);
  delay_option(sub, o.delay, later, xdc_delay_help);
  output_options(sub, o.output, true);
}

void check(const simulate_options& o) {
  const pipeline_args& p = o.pipeline;
  const bool xdc = o.cost.preset == preset_name::llama2_70b_xdc;
  const bool ampipe = o.cost.preset == preset_name::ampipe_16p;
  check_pipeline(p, takes_chunks(p.schedule), xdc || ampipe, xdc);
  if (xdc && (!p.schedule.empty() || p.pp != 0 || p.layers != 1 || p.sub_stages() || p.transfers ||
              o.cost.barrier || p.ampipe() || p.p2p != p2p_mode::pytorch))
    bad("--preset llama2-70b-xdc is a whole scenario (Megatron's interleaved schedule on pp 8, "
        "tp 8); it takes --chunks, --micro, --delay-model and the seed's switches "
        "(--overlap-p2p, --multi-stream, --log-allreduce, --async-log-allreduce, --nanopipe) "
        "only");
  if (xdc && o.delay.link == link_choice::intra_node)
    bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different machines; "
        "use inter-node or cross-dc[:KM[:RATIO]]");
  if (o.delay.link != link_choice::none && !xdc)
    bad("--delay-model in simulate prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
        "is unit-free)");
  if (!xdc && !ampipe) require_shape(p);
  if (ampipe && (!p.schedule.empty() || p.pp != 0 || p.micro != 0 || p.layers != 1 ||
                 p.sub_stages() || p.transfers || o.cost.barrier || p.p2p_options()))
    bad("--preset ampipe-16p is a whole scenario (pp 1, 2 MoE layers, its own schedule); it takes "
        "no --schedule, --pp, --micro, --layers, --moe, --shared-expert, --fb-overlap, "
        "--transfers, --barrier or p2p options");
}

void define(CLI::App& sub, compare_options& o, deferred& later) {
  sub.add_option("--schedules", o.schedules, "schedules to compare, comma-separated")
      ->required()
      ->delimiter(',')
      ->check(CLI::IsMember(schedule_names));
  pipeline_options(sub, o.pipeline, false);
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::ampipe_16p),
                preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer, each all-to-all no longer than its "
               "compute partner (ampipe-16p and llama2-70b-xdc are simulate's)",
               true);
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const compare_options& o) {
  scenario_is_simulates(o.cost.preset);
  const bool chunked = std::any_of(o.schedules.begin(), o.schedules.end(),
                                   [](const std::string& n) { return takes_chunks(n); });
  check_pipeline(o.pipeline, chunked, false, false);
}

void define(CLI::App& sub, run_options& o, deferred& later) {
  schedule_option(sub, o.pipeline, true);
  pipeline_options(sub, o.pipeline, true);
  sub.add_option("--schedule-file", o.schedule_file,
                 "a PyTorch schedule CSV (whole chunks; e.g. weft search --out) instead of "
                 "--schedule, --pp and --micro: run on the tiny dense model");
  sub.add_option("--ep", o.ep,
                 "expert-parallel replicas of each pipeline rank (default 2 with MoE layers)")
      ->check(whole_in(1, 64));
  delay_option(sub, o.delay, later,
               "the emulated link for transfers and all-to-alls: none, intra-node, inter-node, "
               "or cross-dc[:KM[:RATIO]] (data centres KM apart, 1000 by default; bandwidth / "
               "RATIO, 1 by default)");
  sub.add_option("--backend", o.backend,
                 "inproc: every rank a thread of this process; mpi: one process per rank, "
                 "started by mpirun (docs/mpi.md)")
      ->transform(
          one_of<backend_kind>({{"inproc", backend_kind::inproc}, {"mpi", backend_kind::mpi}}));
  sub.add_option("--reduce", o.reduce,
                 "mpi: sums in member order (equal to inproc bit for bit) or the MPI library's "
                 "own (MPI_Iallreduce, MPI_Ireduce_scatter_block)")
      ->transform(one_of<reduce_order>(
          {{"member", reduce_order::member}, {"library", reduce_order::library}}));
  sub.add_option("--mpi-threads", o.threads,
                 "mpi: callers issue MPI calls (multiple, needs MPI_THREAD_MULTIPLE) or one "
                 "progress thread owns them (progress); auto: multiple when MPI provides it")
      ->transform(one_of<mpi_threading>({{"auto", mpi_threading::automatic},
                                         {"multiple", mpi_threading::multiple},
                                         {"progress", mpi_threading::progress}}));
  sub.add_option("--workers", o.workers,
                 "threads that run compute (default: 2 for all in-process ranks, 1 per MPI "
                 "process)")
      ->check(whole_in(1, 256));
  sub.add_option_function<double>(
         "--timeout", [&o](double s) { o.timeout = weft::seconds{s}; },
         "seconds; a run not finished by then stops on every rank, naming the op each "
         "waits at (default 30)")
      ->check(CLI::Range(0.01, 86400.0));
  later.faults = &o.fault;
  sub.add_option("--inject-fault", later.fault,
                 "KIND:RANK[:N] with KIND throw, exit, kill or stall: world rank RANK fails "
                 "before its N-th op (0 first, the default), to see how a run ends");
  output_options(sub, o.output, true);
}

void check(const run_options& o) {
  const pipeline_args& p = o.pipeline;
  if (o.schedule_file.empty()) require_shape(p, true);
  if (!o.schedule_file.empty() && (p.shaped() || p.chunks != 2 || o.ep != 0))
    bad("--schedule-file holds the whole schedule (ranks, micro-batches, chunks; whole blocks on "
        "the tiny dense model): it takes no --schedule, --pp, --micro, --chunks, --layers, --moe, "
        "--shared-expert, --fb-overlap, --transfers, --ep, AMPipe or p2p options");
  check_pipeline(p, takes_chunks(p.schedule), false, false);
  if (o.ep > 1 && !p.sub_stages()) bad("--ep needs MoE layers (--moe or --fb-overlap)");
  const bool mpi = o.backend == backend_kind::mpi;
  if (mpi && o.delay.link != link_choice::none)
    bad("--delay-model emulates links between in-process ranks; over MPI the links are real: "
        "leave it out with --backend mpi");
  if (!mpi && (o.reduce != reduce_order::member || o.threads != mpi_threading::automatic))
    bad("--reduce and --mpi-threads apply to --backend mpi");
  if ((o.fault.kind == fault_kind::exit || o.fault.kind == fault_kind::kill) && !mpi)
    bad("--inject-fault " + o.fault.text.substr(0, o.fault.text.find(':')) +
        " ends a process: it needs --backend mpi (in-process, every rank would go)");
}

void define(CLI::App& sub, tp2d_options& o, deferred& later) {
  sub.add_option("--tp-x", o.tp_x, "the grid's x size (TP-X groups: contiguous ranks)")
      ->check(whole_in(2, 16));
  sub.add_option("--tp-y", o.tp_y, "the grid's y size (TP-Y groups: ranks tp_x apart)")
      ->check(whole_in(2, 16));
  sub.add_option("--hidden", o.hidden, "hidden size (default 192)")->check(whole_in(1, 4096));
  sub.add_option("--heads", o.heads, "attention heads (default 24)")->check(whole_in(1, 4096));
  sub.add_option("--ffn", o.ffn, "MLP inner width (default 4 x hidden)")->check(whole_in(1, 16384));
  sub.add_option("--seq", o.seq, "tokens per sequence (default 256)")->check(whole_in(1, 4096));
  sub.add_option("--batch", o.batch, "sequences (default 1)")->check(whole_in(1, 64));
  auto* overlap =
      sub.add_option("--overlap", o.overlap,
                     "the forward overlap of every linear: none (default), ag-matmul (the "
                     "all-gather as a ring of steps under the matmul's pieces), matmul-rs "
                     "(pieces of the output reduce-scattered under the next piece), fused (both)")
          ->transform(one_of<tp_overlap>({{"none", tp_overlap::none},
                                          {"ag-matmul", tp_overlap::ag_matmul},
                                          {"matmul-rs", tp_overlap::matmul_rs},
                                          {"fused", tp_overlap::fused}}));
  sub.add_flag("--enable-overlap-ag-with-matmul", o.ag_matmul, "the seed's name for ag-matmul")
      ->excludes(overlap);
  sub.add_flag("--enable-overlap-matmul-with-rs", o.matmul_rs, "the seed's name for matmul-rs")
      ->excludes(overlap);
  sub.add_flag("--coc-fused-kernel", o.coc_fused, "the seed's name for fused")->excludes(overlap);
  delay_option(sub, o.delay, later,
               "the emulated link of every collective: none, intra-node or inter-node");
  sub.add_option("--preset", o.preset,
                 "llama3-405b: simulate a llama3-405B layer at tp 16, 1D against 8 x 2 under "
                 "every overlap, from device and link facts (no run)")
      ->transform(one_of<preset_name>({preset(preset_name::llama3_405b)}));
  later.facts = &o.contention;
  contention_option(sub, later);
  sub.add_flag("--json", o.json, "print the result as JSON");
}

void check(const tp2d_options& o) {
  const bool preset = o.preset != preset_name::none;
  if (!preset && (o.tp_x == 0 || o.tp_y == 0))
    bad("tp2d needs --tp-x and --tp-y (both > 1), or --preset llama3-405b");
  if (preset && o.sized())
    bad("--preset llama3-405b is a whole scenario (tp 16: 8 x 2 against 16 x 1, every "
        "overlap); it takes --json and --contention only");
  if (o.delay.link == link_choice::cross_dc)
    bad("tp2d's --delay-model is none, intra-node or inter-node");
  if (!preset && o.contention.active())
    bad("tp2d prices overlap in the simulated scenario only: --contention needs --preset "
        "llama3-405b (a run measures what overlap costs)");
}

/// A preset's folder name: plain, so that it names a folder under presets/ and nothing else.
std::string preset_folder_name(const std::string& v) {
  const bool plain =
      !v.empty() && v.size() <= 64 &&
      v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") == std::string::npos &&
      v.front() != '.';
  return plain ? "" : v + " is not a preset's name (a-z, 0-9, . - _)";
}

/// The job's flags, in Megatron's names: what a job file or a preset's job says instead.
std::vector<CLI::Option*> job_flags(CLI::App& sub, weft::plan::job& j) {
  namespace plan = weft::plan;
  namespace L = plan::job_limits;
  std::vector<CLI::Option*> flags{
      sub.add_option("--tp", j.tp, "tensor-parallel size")->check(whole_in(1, L::tp)),
      sub.add_option("--pp", j.pp, "pipeline-parallel size")->check(whole_in(1, L::pp)),
      sub.add_option("--dp", j.dp, "data-parallel size")->check(whole_in(1, L::dp)),
      sub.add_option("--cp", j.cp, "context-parallel size")->check(whole_in(1, L::cp)),
      sub.add_option("--ep", j.ep, "expert-parallel size (carved from dp x cp)")
          ->check(whole_in(1, L::ep)),
      sub.add_option("--micro-batch-size", j.micro_batch_size, "sequences per micro-batch")
          ->check(whole_in(1, L::micro_batch_size)),
      sub.add_option("--global-batch-size", j.global_batch_size,
                     "sequences per optimizer step (default: one micro-batch per dp rank)")
          ->check(whole_in(1, L::global_batch_size)),
      sub.add_option("--seq-length", j.seq, "tokens per sequence (default 4096)")
          ->check(whole_in(1, L::seq)),
      sub.add_option("--recompute", j.policy, "none, selective or full (default none)")
          ->transform(one_of<plan::recompute>(spelled<plan::recompute>(plan::recompute_names))),
      sub.add_flag("--sequence-parallel", j.sequence_parallel,
                   "shard what tensor parallelism replicates over its ranks too"),
      sub.add_option("--schedule", j.schedule, "the pipeline schedule (default 1f1b)")
          ->check(CLI::IsMember(schedule_names)),
      sub.add_option("--chunks", j.chunks,
                     "model chunks per rank (the schedules that take a count; default 1)")
          ->check(whole_in(1, weft::limits::chunks)),
      sub.add_option("--pipeline-layout", j.layout,
                     "the layers of each stage in Megatron's grammar, e.g. \"Et*3|(tt|)*29,m|L\""),
      sub.add_flag("--overlap-grad-reduce", j.overlap_grad_reduce,
                   "the gradient reduction overlapped with the backward")};
  auto* whole = sub.add_flag_callback(
      "--no-distributed-optimizer", [&j] { j.sharding = plan::dp_sharding::no_shard; },
      "keep the optimizer states whole on every data-parallel rank");
  flags.push_back(whole);
  flags.push_back(
      sub.add_option("--data-parallel-sharding-strategy", j.sharding,
                     "what the data-parallel ranks shard (Megatron-FSDP's names): no_shard, optim "
                     "(the distributed optimizer, ZeRO-1; the default), optim_grads (ZeRO-2) or "
                     "optim_grads_params (FSDP, ZeRO-3)")
          ->transform(
              one_of<plan::dp_sharding>(spelled<plan::dp_sharding>(plan::dp_sharding_names)))
          ->excludes(whole));
  flags.push_back(sub.add_flag_callback(
      "--no-flash-attention", [&j] { j.flash_attention = false; },
      "attention's scores as whole matmuls, kept for the backward (2022's Megatron)"));
  return flags;
}

void define(CLI::App& sub, plan_options& o, deferred&) {
  // The model, the job and the cluster: flags, files, or a preset's three files.
  auto* preset = sub.add_option("--preset", o.preset,
                                "a preset's folder of config.json, job.json and cluster.json "
                                "(presets/: llama2-70b-xdc, ampipe-16p, llama3-405b, "
                                "deepseek-v3, or one's own under $WEFT_PRESETS)")
                     ->check(preset_folder_name, "NAME");
  sub.add_option("--model", o.model_file, "the model's config.json")->excludes(preset);
  sub.add_option("--cluster", o.cluster,
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
  auto* job_file = sub.add_option("--job", o.job_file,
                                  "the job as a JSON file keyed by these flags without their "
                                  "dashes (docs/planning.md)")
                       ->excludes(preset);
  for (CLI::Option* f : job_flags(sub, o.job)) f->excludes(job_file)->excludes(preset);
  sub.add_option_function<double>(
         "--search-budget-s", [&o](double s) { o.search_budget = weft::seconds{s}; },
         "also run the schedule search (weft search) on the best plan's costs for this long "
         "(default 0: not at all)")
      ->check(CLI::Range(0.0, 86400.0));
  sub.add_option("--evaluations", o.evaluations,
                 "stop the search after judging this many orders (0: no cap)")
      ->check(whole_in(0LL, 1LL << 40));
  sub.add_option("--seed", o.seed, "the search's seed (default 1)")
      ->check(whole_in(0LL, 1LL << 62));
  sub.add_option("--out", o.out,
                 "write the fastest order found as PyTorch's schedule CSV (weft run "
                 "--schedule-file runs it)");
  sub.add_flag("--check", o.check_memory,
               "rule 5 in bytes: exit 1 (illegal) when a rank's model states and live "
               "activations exceed its device's memory, naming the op where it first does");
  output_options(sub, o.output, true);
}

void check(const plan_options& o) {
  if (o.preset.empty() && (o.model_file.empty() || o.cluster.empty()))
    bad("plan needs --model and --cluster (or --preset NAME)");
}

void define(CLI::App& sub, search_options& o, deferred& later) {
  sub.add_option("--pp", o.pp, "pipeline ranks (devices)")->check(whole_in(1, weft::limits::ranks));
  sub.add_option("--micro", o.micro, "micro-batches per step")
      ->check(whole_in(1, weft::limits::micro));
  sub.add_option("--chunks", o.chunks,
                 "model chunks per rank with --placement loop (default 1; vee has 2)")
      ->check(whole_in(1, weft::limits::chunks));
  sub.add_option("--placement", o.placement,
                 "loop: chunk c on rank c % pp (1F1B, ZB-H1, interleaved); vee: rank r holds "
                 "chunks r and 2 pp - 1 - r (ZB-V, DualPipeV)")
      ->transform(one_of<placement_choice>(
          {{"loop", placement_choice::loop}, {"vee", placement_choice::vee}}));
  sub.add_option("--layers", o.layers, "layers per model chunk (default 1)")
      ->check(whole_in(1, weft::limits::layers));
  sub.add_flag("--moe", o.moe, "layers of MoE sub-stages: attn, dispatch, mlp, combine");
  sub.add_flag("--shared-expert", o.shared_expert,
               "MoE layers with a shared expert beside the routed ones");
  sub.add_flag("--fb-overlap", o.fb_overlap,
               "MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek)");
  cost_options(sub, o.cost, later,
               {preset(preset_name::deepseek_v3), preset(preset_name::llama2_70b_xdc)},
               "deepseek-v3: MoE costs per chunk layer; llama2-70b-xdc: llama2-70B over two data "
               "centres, tp 8 pp 8, in seconds (docs/cross-dc.md)",
               false);
  delay_option(sub, o.delay, later, xdc_delay_help);
  sub.add_option("--max-live", o.max_live,
                 "the memory cap: live activation units per rank, as rule 5 counts them (0: none)")
      ->check(whole_in(0, 1 << 30));
  sub.add_option_function<double>(
         "--budget-s", [&o](double s) { o.budget = weft::seconds{s}; },
         "search time in seconds (default 10): the best plan found by then")
      ->check(CLI::Range(0.0, 86400.0));
  sub.add_option("--evaluations", o.evaluations,
                 "stop after judging this many plans (0: no cap); reached before the budget, "
                 "the result depends only on --seed")
      ->check(whole_in(0LL, 1LL << 40));
  sub.add_option("--seed", o.seed, "the local search's seed (default 1)")
      ->check(whole_in(0LL, 1LL << 62));
  sub.add_flag("--json", o.json, "print the result as JSON");
  sub.add_option("--out", o.out,
                 "write the best plan as PyTorch's schedule CSV (runs with weft run "
                 "--schedule-file, or torchtitan's custom CSV path)");
  sub.add_option("--svg", o.svg, "write an SVG timeline of the best plan, simulated");
}

void check(search_options& o, const CLI::App& sub) {
  const bool xdc = o.cost.preset == preset_name::llama2_70b_xdc;
  const bool vee = o.placement == placement_choice::vee;
  const bool chunks_given = sub.get_option("--chunks")->count() > 0;
  if (!xdc && (o.pp == 0 || o.micro == 0))
    bad("search needs --pp and --micro (or --preset llama2-70b-xdc)");
  if (xdc && (o.pp != 0 || o.layers != 1 || o.moe || o.shared_expert || o.fb_overlap || vee))
    bad("--preset llama2-70b-xdc is a whole scenario (pp 8, tp 8, loop placement); with search "
        "it takes --chunks, --micro, --delay-model, --max-live and the search's options");
  if (o.delay.link != link_choice::none && !xdc)
    bad("--delay-model in search prices a scenario in seconds: --preset llama2-70b-xdc (--cost "
        "is unit-free)");
  if (o.delay.link == link_choice::intra_node)
    bad("--delay-model intra-node: pipeline stages of llama2-70b-xdc are on different "
        "machines; use inter-node or cross-dc[:KM[:RATIO]]");
  if (vee && chunks_given && o.chunks != 2)
    bad("--placement vee puts 2 chunks on each rank: leave --chunks out");
  if (vee) o.chunks = 2;
  if (o.cost.preset == preset_name::deepseek_v3 && !(o.moe || o.shared_expert || o.fb_overlap))
    bad("--preset deepseek-v3 prices MoE sub-stages: add --moe (or --fb-overlap)");
  if (!o.out.empty() && xdc)
    bad("--out writes PyTorch's CSV of unit-free schedules; the llama2-70b-xdc scenario has "
        "none (use --svg)");
}

void define(CLI::App& sub, plan_cp_options& o, deferred&) {
  auto* mask = sub.add_option(
      "--mask", o.mask,
      "FAMILY[:K=V,...]: full, causal, window, bidir-window, global-window, documents, "
      "causal-documents, interleaved-documents, shared-question, causal-blockwise, prefix-lm, "
      "random");
  sub.add_option("--mask-file", o.mask_file, "a mask in weft's text form")->excludes(mask);
  sub.add_option("--seq", o.seq, "sequence length in tokens")->check(whole_in(1, cp::max_tokens));
  sub.add_option("--cp", o.cp, "context-parallel ranks")->required()->check(whole_in(1, 4096));
  sub.add_option("--cap", o.cap, "communication units per rank and round (default 6)")
      ->check(whole_in(0, 1 << 20));
  sub.add_option("--coarse", o.coarse,
                 "plan on a C x C coarse mask (default 1024; 0: the full mask)")
      ->check(whole_in(0, 8192));
  sub.add_flag_callback(
      "--no-remap", [&o] { o.remap = false; },
      "keep the original order (a mask already local, e.g. windows)");
  sub.add_option_function<double>(
         "--budget-s", [&o](double s) { o.budget = weft::seconds{s}; },
         "planning time budget in seconds (default 2): the best plan found by then")
      ->check(CLI::Range(0.001, 3600.0));
  sub.add_flag("--json", o.json, "print the result as JSON");
  sub.add_option("--svg", o.svg, "write the re-mapped mask as SVG");
}

void check(const plan_cp_options& o) {
  if (o.mask.empty() == o.mask_file.empty()) bad("give one of --mask and --mask-file");
  if (!o.mask.empty() && o.seq == 0) bad("--seq S is required with --mask");
}

/// Every subcommand, in the order `weft --help` lists them, with its one-line description.
struct subcommand_info {
  command options;
  const char* description;
};

std::vector<subcommand_info> subcommands() {
  return {
      {generate_options{}, "print a schedule"},
      {check_options{}, "check a generated schedule: exit 0 legal, 1 illegal"},
      {verify_options{},
       "read a PyTorch schedule CSV and check it: exit 0 legal, 1 illegal, 2 unreadable"},
      {simulate_options{},
       "run a schedule over simulated time: makespan, bubble, exposed communication"},
      {compare_options{}, "simulate several schedules side by side"},
      {run_options{},
       "train a tiny model one step on in-process ranks (dense for whole blocks, MoE for "
       "sub-stages): measured metrics, the prediction, loss and gradient error against serial"},
      {tp2d_options{},
       "2D tensor parallelism (docs/tp-2d.md): one attention + MLP layer on tp_x x tp_y "
       "in-process ranks and on tp_x * tp_y ranks of 1D tensor parallelism, each linear a "
       "schedule: error against the unsharded layer, measured and predicted step time, bytes "
       "moved; or --preset llama3-405b, simulated"},
      {plan_options{},
       "plan a real training job (docs/planning.md): a model's Hugging Face config.json, the job "
       "as Megatron's flags state it and a cluster in; step time, tokens/s, MFU, memory per stage "
       "against the device's, and every schedule that applies, out"},
      {search_options{},
       "search for the fastest legal schedule for given costs and a memory cap: the best found, "
       "every generator's and the lower bounds (docs/search.md)"},
      {plan_cp_options{},
       "plan adaptive context parallelism for a mask: re-map the sequence, schedule its (query, "
       "key/value) blocks in rounds under a cap per rank and round (docs/adaptive-cp.md)"},
  };
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
  if (!extras.empty())
    why = sub + " does not take " + extras;
  else if (why.rfind("weft: ", 0) != 0)
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
  app.footer("Exit codes: 0 done (legal), 1 illegal, 2 bad input. Each subcommand has --help.");

  // Each subcommand parses into its own options; the one given is the command.
  std::vector<subcommand_info> all = subcommands();
  std::vector<deferred> later(all.size());
  std::vector<CLI::App*> apps;
  std::string names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::visit(
        [&](auto& o) {
          CLI::App* sub = app.add_subcommand(std::string(o.name), all[i].description);
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
      for (const CLI::App* s : apps) known = known || s->get_name() == first;
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
            if constexpr (std::is_same_v<std::decay_t<decltype(o)>, search_options>)
              check(o, *apps[i]);
            else
              check(o);
          },
          all[i].options);
      r.what = std::move(all[i].options);
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
