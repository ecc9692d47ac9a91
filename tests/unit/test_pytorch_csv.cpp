// PyTorch CSV interop: the oracle files import and pass legality, weft's DualPipeV reproduces
// PyTorch's action for action, schedules round-trip, malformed input names row and column.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <weft/generators/controllable_memory.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/registry.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>
#include <weft/sim/unit_steps.hpp>

using namespace weft;

namespace {

std::string slurp(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/pytorch/" + name);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

schedule parse(const std::string& text) {
  std::istringstream in(text);
  return read_pytorch_csv(in);
}

std::string csv_of(const schedule& s) {
  std::ostringstream out;
  write_pytorch_csv(out, s);
  return out.str();
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const csv_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("weft's DualPipeV reproduces PyTorch's, action for action") {
  CHECK(csv_of(dualpipev({.ranks = 4, .micro = 10})) == slurp("pytorch_dualpipev_4rank_10mb.csv"));
}

TEST_CASE("weft's interleaved-zb and looped-bfs reproduce PyTorch's orders, step for step") {
  // Blocks "== <schedule> P=<ranks> V=<stages per rank> M=<micro-batches>", then one row per
  // rank: PyTorch's own order functions run on each shape (data/pytorch/README.md).
  std::istringstream in(slurp("pytorch_orders_derived.txt"));
  std::string line, name, expected;
  generator_args args;
  int cases = 0;
  const auto compare = [&] {
    if (name.empty()) return;
    CAPTURE(name);
    CAPTURE(args.ranks);
    CAPTURE(args.chunks);
    CAPTURE(args.micro);
    const schedule s = generate(name == "interleaved_zb" ? "interleaved-zb" : "looped-bfs", args);
    CHECK(csv_of(s) == expected);
    CHECK(check(s).ok());
    ++cases;
  };
  while (std::getline(in, line)) {
    if (line.rfind("== ", 0) == 0) {
      compare();
      std::istringstream head(line.substr(3));
      std::string p, v, m;
      head >> name >> p >> v >> m;
      args = {};
      args.ranks = std::stoi(p.substr(2));
      args.chunks = std::stoi(v.substr(2));
      args.micro = std::stoi(m.substr(2));
      expected.clear();
    } else if (!line.empty()) {
      expected += line + "\n";
    }
  }
  compare();
  CHECK(cases == 14);
}

TEST_CASE("weft's v-half and v-min reproduce sail-sg's zero-bubble V schedules, pass for pass") {
  // Blocks "== v_half|v_min P=<ranks> M=<micro-batches>", "# bubble" and "# peak" lines, then
  // one row per rank: zbv_greedy.py's own PipelineGraph.create_schedule run on each shape
  // (data/zero_bubble/README.md); peaks in (micro-batch, chunk) units by its mem_of_stage.
  std::ifstream file(std::string(WEFT_TEST_DATA) + "/zero_bubble/v_schedules_derived.txt");
  REQUIRE(file);
  std::string line, name, expected;
  generator_args args;
  std::vector<int> peaks;
  double bubble = 0;
  int cases = 0;
  // F, dX and dW equal, as the schedules are built for and the repository's table assumes.
  const unit_cost_model equal = unit_cost_model::pipeline({.F = 1, .B = 2, .W = 1});
  const auto compare = [&] {
    if (name.empty()) return;
    CAPTURE(name);
    CAPTURE(args.ranks);
    CAPTURE(args.micro);
    const schedule s = generate(name == "v_half" ? "v-half" : "v-min", args);
    CHECK(csv_of(s) == expected);
    CHECK(check(s).ok());
    // Rule 5 proves each rank within the reference's peak, and the bound is tight.
    const int peak = *std::max_element(peaks.begin(), peaks.end());
    schedule bounded = s;
    bounded.model.max_live = peak;
    CHECK(check(bounded).ok());
    bounded.model.max_live = peak - 1;
    const report over = check(bounded);
    REQUIRE_FALSE(over.ok());
    CHECK(over.violations.front().code == rule::memory);
    // weft's peaks are the reference's, rank by rank.
    const buffer<int> live = peak_live_activations(s);
    REQUIRE(live.size() == peaks.size());
    for (std::size_t r = 0; r < peaks.size(); ++r) CHECK(live[r] == peaks[r]);
    // Simulated, the bubble is the one the repository's code prints (its transfers cost 1/1000
    // of a pass; here nothing), and against its README's table: V-Half about half of 1F1B's
    // (P-1)/(M+P-1), V-Min about two thirds of it plus an overhead that grows with P.
    const program prog = lower(s);
    const double simulated = measure(prog, simulate(prog, equal)).bubble_ratio;
    CHECK(simulated == doctest::Approx(bubble).epsilon(0.01));
    // The table's shapes have M >= 2P; fewer micro-batches leave the warm-up's cost on top.
    const double one_f_one_b = (args.ranks - 1.0) / (args.micro + args.ranks - 1.0);
    if (args.micro >= 2 * args.ranks) {
      if (name == "v_half")
        CHECK(simulated <= one_f_one_b / 2 + 0.03);
      else
        CHECK(simulated <= 2 * one_f_one_b / 3 + 0.03);
    }
    ++cases;
  };
  while (std::getline(file, line)) {
    if (line.rfind("== ", 0) == 0) {
      compare();
      std::istringstream head(line.substr(3));
      std::string p, m;
      head >> name >> p >> m;
      args = {};
      args.ranks = std::stoi(p.substr(2));
      args.micro = std::stoi(m.substr(2));
      expected.clear();
      peaks.clear();
    } else if (line.rfind("# bubble ", 0) == 0) {
      bubble = std::stod(line.substr(9));
    } else if (line.rfind("# peak ", 0) == 0) {
      std::istringstream in(line.substr(7));
      for (int x; in >> x;) peaks.push_back(x);
    } else if (!line.empty() && line[0] != '#') {
      expected += line + "\n";
    }
  }
  compare();
  CHECK(cases == 23);
}

TEST_CASE("interleaved-zb and looped-bfs refuse what PyTorch refuses") {
  generator_args a;
  a.ranks = 3;
  a.micro = 7;  // two rounds of 3.5
  CHECK_THROWS_WITH_AS(generate("interleaved-zb", a),
                       doctest::Contains("micro must be a multiple of the rounds"), config_error);
  a.micro = 6;
  a.chunks = 0;
  CHECK_THROWS_WITH_AS(generate("looped-bfs", a), doctest::Contains("chunks (per rank) must be"),
                       config_error);
  a.chunks = 2;
  a.extra_warmup = true;  // the interleaved schedule's variant
  for (const char* name : {"interleaved-zb", "looped-bfs"})
    CHECK_THROWS_WITH_AS(generate(name, a),
                         doctest::Contains("extra_warmup is the interleaved schedule's"),
                         config_error);
  a.extra_warmup = false;
  a.p2p.megatron = true;  // Megatron has no such schedule
  CHECK_THROWS_WITH_AS(generate("interleaved-zb", a),
                       doctest::Contains("Megatron's transfer lowering"), config_error);
}

TEST_CASE("every oracle file imports and is legal") {
  for (const char* name :
       {"pytorch_dualpipev_4rank_10mb.csv", "pytorch_zb1p_2rank_2stagep_compute.csv",
        "pytorch_zb1p_2rank_2stagep_comms.csv", "torchtitan_custom_2rank_4stage_8mb_compute.csv",
        "torchtitan_custom_4rank_8stage_6mb_compute.csv"}) {
    CAPTURE(name);
    const schedule s = parse(slurp(name));
    const report r = check(s);
    CHECK(r.ok());
  }
}

TEST_CASE("imported files find their model: ranks, stages, placement, micro-batches") {
  const schedule v = parse(slurp("pytorch_dualpipev_4rank_10mb.csv"));
  CHECK(v.model.ranks == 4);
  CHECK(v.model.chunks_per_rank == 2);
  CHECK(v.model.place == placement::vee);
  CHECK(v.model.micro == 10);
  const schedule z = parse(slurp("pytorch_zb1p_2rank_2stagep_comms.csv"));
  CHECK(z.model.place == placement::loop);
  CHECK(z.model.chunks() == 4);
  CHECK(z.model.micro == 8);
  // Transfers are explicit there, sends and receives on their own comm streams.
  std::size_t sends = 0;
  for (const op& o : z.ops) {
    if (o.k == kind::send) CHECK(o.lane == send_lane);
    if (o.k == kind::recv)
      CHECK((o.lane == recv_from_lower_lane || o.lane == recv_from_higher_lane));
    sends += o.k == kind::send;
  }
  CHECK(sends == 2u * 3u * 8u);
}

TEST_CASE("schedules round-trip through the CSV form") {
  for (const schedule& s : {one_f_one_b({.ranks = 4, .micro = 8}), zb_h1({.ranks = 3, .micro = 6}),
                            interleaved({.ranks = 2, .micro = 4, .chunks = 2}),
                            interleaved({.ranks = 4, .micro = 8, .chunks = 2, .nanopipe = true}),
                            dualpipev({.ranks = 2, .micro = 6}), zb_v({.ranks = 3, .micro = 6}),
                            one_f_one_b({.ranks = 3, .micro = 4, .transfers = true})}) {
    const std::string text = csv_of(s);
    const schedule back = parse(text);
    CHECK(back.ops == s.ops);
    CHECK(back.slot_end == s.slot_end);
    CHECK(csv_of(back) == text);
  }
}

TEST_CASE("idle cells and spaces are accepted; idle steps stay as empty slots") {
  const std::string text = "0F0,0F1,   ,0B0,,0B1\n,1F0,1B0,1F1,1B1\n";
  const schedule s = parse(text);
  CHECK(s.slots(0) == 6);
  CHECK(s.slot(0, 2).empty());
  CHECK(s.slots(1) == 5);
  CHECK(check(s).ok());
  CHECK(csv_of(s) == "0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n");
}

TEST_CASE("lowering ZB1P's compute file to compute + comms gives PyTorch's comms file") {
  const schedule lowered =
      with_transfers(merge_backward(parse(slurp("pytorch_zb1p_2rank_2stagep_compute.csv"))));
  CHECK(csv_of(lowered) == slurp("pytorch_zb1p_2rank_2stagep_comms.csv"));
  CHECK(check(lowered).ok());
}

namespace {
/// A case's rows ("0": [cells], "1": [...]) as CSV text.
std::string rows_of(const nlohmann::json& ranks) {
  std::string text;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    bool first = true;
    for (const auto& cell : ranks.at(std::to_string(r))) {
      if (!first) text += ',';
      text += cell.get<std::string>();
      first = false;
    }
    text += '\n';
  }
  return text;
}
/// PyTorch's unit-step count of a schedule, through weft's lowering and semantics.
int steps_of(const schedule& s) {
  const unit_step_result r = unit_steps(lower_unchecked(s));
  REQUIRE(!r.stuck);
  return r.steps;
}
}  // namespace

TEST_CASE("PyTorch's send/recv fixtures: weft lowers them as PyTorch does, in as many steps") {
  // test_schedule.py's cases, read from the fixture file itself: compute rows, the rows with
  // transfers PyTorch's _add_send_recv makes of them, and the steps its simulator counts.
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/pytorch/pytorch_test_send_recv_fixtures.json");
  REQUIRE(in);
  const auto fixtures = nlohmann::json::parse(in);
  int cases = 0;
  for (const auto& c : fixtures.at("cases")) {
    if (!c.contains("compute")) continue;
    CAPTURE(c.at("schedule").get<std::string>());
    const schedule compute = parse(rows_of(c.at("compute")));
    CHECK(compute.model.chunks() == c.at("num_stages").get<int>());
    for (int stage = 0; stage < compute.model.chunks(); ++stage)
      CHECK(compute.model.rank_of(stage) == c.at("stage_to_rank").at(stage).get<int>());
    const schedule lowered = with_transfers(compute);
    CHECK(csv_of(lowered) == rows_of(c.at("comms")));
    // (v_2_rank_4_stage follows full backwards with W actions: weft's rule 1 refuses a unit's
    // backward in two forms, so both forms of that case are illegal alike.)
    CHECK(check(lowered).ok() == check(compute).ok());
    CHECK(steps_of(parse(rows_of(c.at("comms")))) == c.at("simulated_steps").get<int>());
    // Lowering compute alone (weft adds the transfers) takes the same steps.
    CHECK(steps_of(compute) == c.at("simulated_steps").get<int>());
    ++cases;
  }
  CHECK(cases == 2);
  // The ZB1P file: PyTorch's simulator finishes its lowered form in 113 steps.
  const auto zb1p = std::find_if(fixtures.at("cases").begin(), fixtures.at("cases").end(),
                                 [](const auto& c) { return !c.contains("compute"); });
  REQUIRE(zb1p != fixtures.at("cases").end());
  CHECK(steps_of(parse(slurp("pytorch_zb1p_2rank_2stagep_comms.csv"))) ==
        zb1p->at("simulated_steps").get<int>());
}

TEST_CASE("unit steps: a schedule that cannot finish is stuck, not counted") {
  // Both ranks receive before they send: in PyTorch's simulator, "not progressing".
  const program p =
      lower_unchecked(parse("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n"));
  CHECK(!unit_steps(p).stuck);
  const program q =
      lower_unchecked(parse("0RECV_B0,0F0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n"));
  CHECK(unit_steps(q).stuck);
}

TEST_CASE("merging a dX with the dW right after it, as PyTorch's _merge_bw") {
  const schedule merged = merge_backward(parse("0F0,0F1,0F2,0I0,0I1,0W0,0I2,0W2,0W1\n"));
  CHECK(csv_of(merged) == "0F0,0F1,0F2,0I0,0I1,0W0,0B2,0W1\n");
}

TEST_CASE("an illegal file is read, then rejected by the checker with the rule") {
  const schedule s = parse("0F0,0B0,0F1,0B1\n1B0,1F0,1F1,1B1\n");
  const report r = check(s);
  REQUIRE(!r.ok());
  CHECK(r.violations[0].code == rule::order);
}

TEST_CASE("malformed input names row and column") {
  CHECK(error_of("0F0,0X1\n") ==
        "weft: csv row 1, column 2: '0X1': unknown action (expected F, I, W, B, SEND_F, RECV_F, "
        "SEND_B, RECV_B or (a;b)OVERLAP_F_B)");
  CHECK(error_of("0F0\nF1\n") ==
        "weft: csv row 2, column 1: 'F1' does not start with a stage number");
  CHECK(error_of("0F0,0Fx\n") ==
        "weft: csv row 1, column 2: '0Fx' does not end with a micro-batch number");
  CHECK(error_of("0F0,0F1 2\n") ==
        "weft: csv row 1, column 2: '0F1 2' does not end with a micro-batch number");
  CHECK(error_of("(0F0;0B0\n").find("weft: csv row 1, column 1: '(0F0;0B0': expected") == 0);
  CHECK(error_of("(0F0;1F0)OVERLAP_F_B\n") ==
        "weft: csv row 1, column 1: '(0F0;1F0)OVERLAP_F_B': OVERLAP_F_B pairs a forward with a "
        "backward");
  CHECK(error_of("0UNSHARD,0F0\n") ==
        "weft: csv row 1, column 1: '0UNSHARD': FSDP actions (UNSHARD, RESHARD, REDUCE_GRAD) are "
        "not modelled");
  CHECK(error_of("0F0,0B0\n\n1F0,1B0\n") ==
        "weft: csv row 2, column 1: empty row: every rank needs a row");
  CHECK(error_of("") == "weft: csv no rows: expected one row per rank");
  CHECK(error_of(",,\n") == "weft: csv no actions");
  CHECK(error_of("0F0,0B0,2F0\n1F0,1B0\n") ==
        "weft: csv 3 stages do not spread evenly over 2 ranks (rows)");
  CHECK(error_of("0F0,1F0\n2F0,3F0\n").find("weft: csv row 1, column 2: the stage is on a rank") ==
        0);
  CHECK(error_of("0F9999999\n").find("does not end with a micro-batch number") !=
        std::string::npos);
}

TEST_CASE("numbers beyond an op id's range are refused, not wrapped") {
  // A micro-batch number is 16 bits: 65536 once read as micro-batch 0, and the file was legal.
  CHECK(error_of("0F65536,0B65536\n") ==
        "weft: csv row 1, column 1: '0F65536': micro-batch numbers go up to 65534");
  CHECK(error_of("0F0,0B65535\n") ==
        "weft: csv row 1, column 2: '0B65535': micro-batch numbers go up to 65534");
  CHECK(error_of("255F0\n") == "weft: csv row 1, column 1: '255F0': stage numbers go up to 254");
  CHECK(parse("0F65534\n").model.micro == 65535);
}

TEST_CASE("a small file costs memory by its ops, not by the model it declares") {
  // Ten bytes declaring 255 stages and 65535 micro-batches: more ids than a model may have.
  const report huge = check(parse("254F65534\n"));
  REQUIRE(huge.violations.size() == 1);
  CHECK(huge.violations[0].code == rule::config);
  CHECK(static_cast<model_error>(huge.violations[0].value) == model_error::too_many_ops);
  // Within the cap (16 stages x 60001 micro-batches: 7.7M ids), the checker's id table is sized
  // by the one op present, and rule 1 names what is missing, capped.
  const schedule s = parse("15F60000\n");
  const detail::placed p(s, false, false);
  CHECK(p.ix.size > 7'000'000);
  CHECK(p.pos.capacity() <= 64);
  const report r = check(s, {.max_violations = 20});
  CHECK(r.violations.size() == 20);
  CHECK(r.violations[0].what == fault::missing);
}

TEST_CASE("every generator's CSV reads back legal, or is refused with the reason") {
  const pipeline_params p{.ranks = 4, .micro = 8};
  for (const schedule& s : {gpipe(p), one_f_one_b(p), zb_h1(p), zb_v(p), v_half(p), v_min(p),
                            dualpipev(p), interleaved({.ranks = 4, .micro = 8, .chunks = 2}),
                            interleaved({.ranks = 4, .micro = 10, .chunks = 3}),
                            interleaved({.ranks = 4, .micro = 8, .chunks = 3, .nanopipe = true}),
                            one_f_one_b({.ranks = 4, .micro = 8, .transfers = true})}) {
    const schedule back = parse(csv_of(s));
    CHECK(check(back).ok());
    CHECK(back.model.chunks() == s.model.chunks());
  }
  // DualPipe's micro-batches enter at both ends: PyTorch's format cannot say so.
  std::ostringstream out;
  CHECK_THROWS_WITH_AS(write_pytorch_csv(out, dualpipe(p)),
                       doctest::Contains("DualPipe's two directions have no form in PyTorch's CSV"),
                       config_error);
}

TEST_CASE("Megatron's batched calls write as a cell per transfer and read back legal") {
  // 1F1B, 2 ranks, 2 micro-batches under Megatron's code: rank 0 runs F0 {sF0} F1 {sF1 rB0} B0
  // {rB1} B1. PyTorch has no batched call, so the call's two transfers take two cells.
  const schedule s = one_f_one_b({.ranks = 2, .micro = 2, .p2p = {.blocking = true}});
  const std::string text = csv_of(s);
  CHECK(text.substr(0, text.find('\n')) == "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1");
  const schedule back = parse(text);
  CHECK(check(back).ok());
  CHECK(back.ops.size() == s.ops.size());
  // A slot mixing a transfer with compute has no form there.
  schedule mixed(s.model);
  mixed.add_rank();
  mixed.push(make_op(kind::send, phase::F, 0, 0, 0, 0, send_lane));
  mixed.push(make_op(kind::block, phase::F, 1, 0));
  mixed.close_slot();
  std::ostringstream out;
  CHECK_THROWS_WITH_AS(write_pytorch_csv(out, mixed),
                       doctest::Contains("only one action or a forward/backward pair fits a cell"),
                       config_error);
}

TEST_CASE("only whole-chunk schedules have a CSV form") {
  std::ostringstream out;
  CHECK_THROWS_AS(
      write_pytorch_csv(out, one_f_one_b({.ranks = 2, .micro = 2, .stages = stage_set::moe()})),
      config_error);
}

TEST_CASE("with_transfers refuses schedules it cannot lower") {
  CHECK_THROWS_WITH_AS(with_transfers(one_f_one_b({.ranks = 2, .micro = 2, .transfers = true})),
                       "weft: with_transfers: the schedule already has transfers", config_error);
  // Rank 0 runs the backward of micro-batch 0 before the forward rank 1 needs: no rank can go on.
  // The message names where: rank 0's first slot waits for the gradient rank 1 would send after
  // its backward, and rank 1 waits at its first slot, the forward, for rank 0's activation.
  CHECK_THROWS_WITH_AS(with_transfers(parse("0B0,0F0\n1F0,1B0\n")),
                       "weft: with_transfers: no rank can issue its next slot: rank 0 cannot "
                       "issue its slot 0, block/B mb=0, whose input from rank 1 is never sent, "
                       "that rank waiting at its slot 0, block/F mb=0 chunk=1 (each rank issues "
                       "its slots in order, a slot once its receives are posted; check the "
                       "compute schedule first)",
                       config_error);
}

TEST_CASE("transfer lanes: per peer, one stream, or ping/pong by rank parity") {
  const schedule s = interleaved({.ranks = 4, .micro = 8, .chunks = 2});
  for (const p2p_lanes lanes :
       {p2p_lanes::per_peer, p2p_lanes::single, p2p_lanes::ping_pong, p2p_lanes::by_direction}) {
    const schedule t = with_transfers(s, {.lanes = lanes});
    CHECK(check(t).ok());
    const op_index ix(t.model, false);
    for (int r = 0; r < t.ranks(); ++r)
      for (const op& o : t.rank_ops(r)) {
        if (!is_p2p(o.k)) continue;
        if (lanes == p2p_lanes::single) CHECK(o.lane == send_lane);
        if (lanes == p2p_lanes::ping_pong) {
          // Even ranks receive on ping and send on pong, odd ranks the reverse: a send and the
          // receive it meets (on the neighbour, of the other parity) share a lane.
          const bool even = r % 2 == 0, receives = o.k == kind::recv;
          CHECK(o.lane == (even == receives ? ping_lane : pong_lane));
        }
        if (lanes == p2p_lanes::per_peer && o.k == kind::send) CHECK(o.lane == send_lane);
        if (lanes == p2p_lanes::by_direction)  // a lane per kind and direction
          CHECK(o.lane == (o.k == kind::send ? (o.ph == phase::F ? send_lane : send_upstream_lane)
                                             : (o.ph == phase::F ? recv_from_lower_lane
                                                                 : recv_from_higher_lane)));
      }
  }
}
