// The option groups the subcommands share (option_groups.hpp), and the text options they read
// once CLI11 has parsed.
#include "option_groups.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/key_values.hpp>
#include <weft/generators/registry.hpp>
#include <weft/plan/cluster.hpp>

namespace weft::cli {

void bad(const std::string& why) { throw config_error("weft: " + why); }

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

bool own_count(std::string_view name, int chunks) {
  const weft::generator_info* g = weft::find_generator(name);
  return g && !g->takes_chunk_count() &&
         (chunks == g->chunks_per_rank ||
          chunks == g->chunks_per_rank / (g->bidirectional ? 2 : 1));
}

namespace {
/// The schedules that take one, "a, b" from the registry, for messages.
const std::string chunked_list = [] {
  std::string out;
  for (const weft::generator_info& g : weft::generators)
    if (g.takes_chunk_count()) out += (out.empty() ? "" : ", ") + std::string(g.name);
  return out;
}();

}  // namespace

const std::string schedule_list = [] {
  std::string out;
  for (const std::string& n : schedule_names) out += (out.empty() ? "" : ", ") + n;
  return out;
}();

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

namespace {

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

}  // namespace

void deferred::finish() {
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
  layer_options(sub, p.layers, p.moe, p.shared_expert, p.fb_overlap);
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

void layer_options(CLI::App& sub, int& layers, bool& moe, bool& shared_expert, bool& fb_overlap) {
  sub.add_option("--layers", layers, "layers per model chunk (default 1)")
      ->check(whole_in(1, weft::limits::layers));
  sub.add_flag("--moe", moe, "layers of MoE sub-stages: attn, dispatch, mlp, combine");
  sub.add_flag("--shared-expert", shared_expert,
               "MoE layers with a shared expert beside the routed ones");
  sub.add_flag("--fb-overlap", fb_overlap,
               "MoE sub-stages, forward/backward pairs overlapped per layer (DeepSeek)");
}

void search_walk_options(CLI::App& sub, long long& evaluations, long long& seed,
                         const std::string& what) {
  sub.add_option("--evaluations", evaluations,
                 "stop after judging this many " + what +
                     " (0: no cap); reached before the time budget, the result depends only on "
                     "--seed")
      ->check(whole_in(0LL, 1LL << 40));
  sub.add_option("--seed", seed, "the search's seed (default 1)")->check(whole_in(0LL, 1LL << 62));
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

/// --timeout and --inject-fault (run, tp2d): how long a run may take, and a fault to see how
/// one ends.
void failure_options(CLI::App& sub, failure_args& f, deferred& later, const std::string& help) {
  sub.add_option_function<double>(
         "--timeout", [&f](double s) { f.timeout = weft::seconds{s}; },
         "seconds; a run not finished by then stops on every rank, naming the op each "
         "waits at (default 30)")
      ->check(CLI::Range(0.01, 86400.0));
  later.faults = &f.fault;
  sub.add_option("--inject-fault", later.fault, help);
}

/// A fault that ends its process (exit, kill): only a world of processes survives it.
bool ends_process(const fault_spec& f) {
  return f.kind == fault_kind::exit || f.kind == fault_kind::kill;
}

void output_options(CLI::App& sub, output_args& o, bool pictures) {
  sub.add_flag("--json", o.json, "print the result as JSON");
  if (!pictures) return;
  sub.add_option("--trace", o.trace, "write a Chrome trace (Perfetto) of the step");
  sub.add_option("--svg", o.svg, "write an SVG timeline");
}

// ---- the checks CLI11 cannot express, shared by the pipeline subcommands --------------------

/// The pipeline's own combinations; `csv` for generate --format csv.
void check_pipeline(const pipeline_args& p, bool chunks_taken, bool scenario,
                    bool chunks_elsewhere) {
  if (p.chunks != 2 && !chunks_taken && !chunks_elsewhere && !own_count(p.schedule, p.chunks))
    bad("--chunks applies to the schedules that take a chunk count (" + chunked_list +
        ") and --preset llama2-70b-xdc only; another schedule takes its own count alone (as "
        "weft plan states it)");
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
void require_shape(const pipeline_args& p, bool schedule_file) {
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

}  // namespace weft::cli
