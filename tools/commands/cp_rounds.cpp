// `weft cp-rounds` (cp_rounds.hpp).
#include "commands/cp_rounds.hpp"

#include <fstream>
#include <iostream>
#include <string>

#include <weft/cp/adaptive.hpp>
#include <weft/cp/families.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/cp/picture.hpp>
#include "commands/report.hpp"

namespace weft::cli {

int run_command(const cp_rounds_args& q) {
  cp::adaptive_options o;
  o.coarse = q.coarse;
  o.remap = q.remap;
  o.planning.cap = q.cap;
  o.planning.budget = q.budget;
  cp::range_mask mask;
  if (!q.mask_file.empty()) {
    std::ifstream in(q.mask_file);
    if (!in) throw config_error("weft: cannot open '" + q.mask_file + "'");
    try {
      mask = cp::read_mask_file(in);
    } catch (const cp::mask_file_error& e) {
      throw config_error(in_file(q.mask_file, e.what()));
    }
    if (q.seq != 0 && q.seq != mask.size)
      throw config_error("weft: --seq " + std::to_string(q.seq) + " but the file's mask has " +
                         std::to_string(mask.size) + " tokens");
  } else {
    mask = cp::masks::by_name(q.mask, q.seq);
  }
  const cp::adaptive_layout pl = cp::adapt_layout(mask, q.cp, o);
  const cp::round_assignment& p = pl.assignment;
  if (!q.svg.empty()) {
    std::ofstream out = open_for_writing(q.svg);
    cp::write_remap_svg(
        out, pl.coarse, pl.remapped.order, q.cp,
        (q.mask_file.empty() ? q.mask : q.mask_file) + ", cp " + std::to_string(q.cp));
  }
  const auto at = [](const auto& v, int i) { return v[static_cast<std::size_t>(i)]; };
  if (!q.json) {
    std::cout << "tasks " << pl.remapped.before.tasks << " -> " << p.tasks.size() << " (re-mapping "
              << (pl.remapped.clusters
                      ? "with " + std::to_string(pl.remapped.clusters) + " clusters"
                      : std::string("kept the original order"))
              << "), rounds " << p.rounds << " (lower bound " << p.lower_bound
              << "), max comm units " << p.max_comm_units() << " (cap " << p.cap << "), planned in "
              << pl.planning_time.count() * 1e3 << " ms"
              << (p.budget_exhausted ? " (budget spent: the best plan found by then)" : "") << "\n";
    for (int r = 0; r < p.rounds; ++r) {
      std::cout << "  round " << r << ":";
      for (int rank = 0; rank < q.cp; ++rank) {
        const int x = at(at(p.run, r), rank);
        if (x < 0)
          std::cout << "  -";
        else
          std::cout << "  (" << at(p.tasks, x).q << "," << at(p.tasks, x).kv << ")";
      }
      std::cout << "\n";
    }
    return exit_ok;
  }
  json rounds = json::array();
  for (int r = 0; r <= p.rounds; ++r) {
    json ranks = json::array();
    for (int rank = 0; rank < q.cp; ++rank) {
      const int x = r < p.rounds ? at(at(p.run, r), rank) : -1;
      const cp::transfers& t = at(at(p.moves, r), rank);
      ranks.push_back({{"rank", rank},
                       {"task", x < 0 ? json(nullptr) : json{at(p.tasks, x).q, at(p.tasks, x).kv}},
                       {"recv_q_src", t.recv_q_src},
                       {"recv_kv_src", t.recv_kv_src},
                       {"recv_o_src", t.recv_o_src},
                       {"send_q_dst", t.send_q_dst},
                       {"send_kv_dst", t.send_kv_dst},
                       {"send_o_dst", t.send_o_dst},
                       {"units", t.units()}});
    }
    rounds.push_back({{"round", r}, {"ranks", ranks}});
  }
  json j;
  j["tasks"] = p.tasks.size();
  j["tasks_before_remap"] = pl.remapped.before.tasks;
  j["clusters"] = pl.remapped.clusters;
  j["rounds"] = p.rounds;
  j["lower_bound"] = p.lower_bound;
  j["max_comm_units"] = p.max_comm_units();
  j["cap"] = p.cap;
  j["planning_ms"] = pl.planning_time.count() * 1e3;
  j["budget_exhausted"] = p.budget_exhausted;
  j["tokens_per_cell"] = pl.tokens_per_cell;
  j["opt_seq"] = pl.token_order();
  j["plan"] = rounds;
  std::cout << j.dump() << "\n";
  return exit_ok;
}

}  // namespace weft::cli
