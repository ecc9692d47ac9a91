// PyTorch's pipeline schedule CSV (torch.distributed.pipelining): one row per rank, one action
// per cell, `<stage><action><micro-batch>`: F forward, I input gradient (dX), W weight gradient
// (dW), B full backward, SEND_F/RECV_F/SEND_B/RECV_B transfers; `(0F7;7B3)OVERLAP_F_B` is a
// forward and a backward issued together; an empty cell is an idle step. A PyTorch stage is a
// weft chunk.
#pragma once

#include <algorithm>
#include <cstddef>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/transfers.hpp>

namespace weft {

/// A malformed file: where (1-based row and column, 0 when the file as a whole is at fault) and
/// why. what() reads "weft: csv row 2, column 5: ...".
struct csv_error : config_error {
  int row, column;
  csv_error(int row_, int column_, const std::string& why)
      : config_error(
            "weft: csv " +
            (row_ > 0 ? "row " + std::to_string(row_) + ", column " + std::to_string(column_) + ": "
                      : std::string()) +
            why),
        row(row_),
        column(column_) {}
};

namespace csv_detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// Reads a non-negative decimal number at the front of `s`, or nothing.
inline std::optional<int> take_number(std::string_view& s) {
  std::size_t n = 0;
  long v = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9' && n < 6) v = v * 10 + (s[n++] - '0');
  if (n == 0 || (n < s.size() && s[n] >= '0' && s[n] <= '9')) return std::nullopt;
  s.remove_prefix(n);
  return static_cast<int>(v);
}

struct action_name {
  std::string_view text;
  kind k;
  phase ph;
};
// Longest first, so "SEND_F" is not read as "S...".
inline constexpr action_name action_names[] = {
    {"SEND_F", kind::send, phase::F}, {"RECV_F", kind::recv, phase::F},
    {"SEND_B", kind::send, phase::B}, {"RECV_B", kind::recv, phase::B},
    {"F", kind::block, phase::F},     {"I", kind::block, phase::dX},
    {"W", kind::block, phase::dW},    {"B", kind::block, phase::B},
};

/// One action, "2RECV_F0" -> recv/F mb=0 chunk=2. Throws csv_error naming the cell.
inline op parse_action(std::string_view cell, int row, int col) {
  const std::string text(cell);
  std::string_view s = cell;
  const auto stage = take_number(s);
  if (!stage) throw csv_error(row, col, "'" + text + "' does not start with a stage number");
  for (const std::string_view fsdp : {"UNSHARD", "RESHARD", "REDUCE_GRAD"})
    if (s == fsdp)
      throw csv_error(
          row, col,
          "'" + text + "': FSDP actions (UNSHARD, RESHARD, REDUCE_GRAD) are not modelled");
  for (const action_name& a : action_names) {
    if (s.substr(0, a.text.size()) != a.text) continue;
    s.remove_prefix(a.text.size());
    const auto mb = take_number(s);
    if (!mb || !s.empty())
      throw csv_error(row, col, "'" + text + "' does not end with a micro-batch number");
    if (*stage > 254) throw csv_error(row, col, "'" + text + "': stage numbers go up to 254");
    if (*mb > 65534)
      throw csv_error(row, col, "'" + text + "': micro-batch numbers go up to 65534");
    return make_op(a.k, a.ph, *mb, *stage);  // transfers get their lanes with the model
  }
  throw csv_error(row, col,
                  "'" + text +
                      "': unknown action (expected F, I, W, B, SEND_F, RECV_F, SEND_B, "
                      "RECV_B or (a;b)OVERLAP_F_B)");
}

}  // namespace csv_detail

/// What a PyTorch CSV holds: per rank, per step, the ops issued together (none: idle).
struct pytorch_table {
  std::vector<std::vector<std::vector<op>>> ranks;
};

/// Parses the cells. Rows may differ in length (PyTorch writes them so); a blank line ends
/// nothing and is an error unless only blank lines follow.
inline pytorch_table read_pytorch_table(std::istream& in) {
  pytorch_table t;
  std::string line;
  int row = 0, blank_at = 0;
  while (std::getline(in, line)) {
    ++row;
    if (csv_detail::trim(line).empty()) {
      if (!blank_at) blank_at = row;
      continue;
    }
    if (blank_at) throw csv_error(blank_at, 1, "empty row: every rank needs a row");
    auto& steps = t.ranks.emplace_back();
    std::string_view rest = line;
    for (int col = 1;; ++col) {
      const std::size_t comma = rest.find(',');
      const std::string_view raw = rest.substr(0, comma);
      const std::string_view cell = csv_detail::trim(raw);
      auto& step = steps.emplace_back();
      if (!cell.empty() && cell.front() == '(') {
        const std::string_view suffix = ")OVERLAP_F_B";
        const std::size_t semi = cell.find(';');
        if (cell.size() < suffix.size() || cell.substr(cell.size() - suffix.size()) != suffix ||
            semi == std::string_view::npos)
          throw csv_error(row, col, "'" + std::string(cell) + "': expected (a;b)OVERLAP_F_B");
        const std::string_view a = cell.substr(1, semi - 1);
        const std::string_view b = cell.substr(semi + 1, cell.size() - suffix.size() - semi - 1);
        op f = csv_detail::parse_action(csv_detail::trim(a), row, col);
        op g = csv_detail::parse_action(csv_detail::trim(b), row, col);
        if (f.k != kind::block || f.ph != phase::F || g.k != kind::block || g.ph == phase::F)
          throw csv_error(
              row, col, "'" + std::string(cell) + "': OVERLAP_F_B pairs a forward with a backward");
        g.lane = 1;  // the pair runs side by side: two compute streams
        step = {f, g};
      } else if (!cell.empty()) {
        step = {csv_detail::parse_action(cell, row, col)};
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (t.ranks.empty()) throw csv_error(0, 0, "no rows: expected one row per rank");
  return t;
}

/// A weft schedule from a PyTorch table: rank r is row r; stages are chunks, placed in a loop
/// (stage s on rank s % ranks) or a V (rank r holds r and 2·ranks-1-r), whichever the file
/// follows; as many micro-batches as it names. Check it with `weft::check`.
inline schedule to_schedule(const pytorch_table& t) {
  const int ranks = static_cast<int>(t.ranks.size());
  if (ranks > limits::ranks)
    throw csv_error(0, 0, "more than " + std::to_string(limits::ranks) + " rows (ranks)");
  int max_stage = -1, max_mb = -1;
  for (const auto& steps : t.ranks)
    for (const auto& step : steps)
      for (const op& o : step) {
        max_stage = o.chunk > max_stage ? o.chunk : max_stage;
        max_mb = o.mb > max_mb ? o.mb : max_mb;
      }
  if (max_stage < 0) throw csv_error(0, 0, "no actions");
  const int stages = max_stage + 1;
  if (stages % ranks != 0)
    throw csv_error(0, 0,
                    std::to_string(stages) + " stages do not spread evenly over " +
                        std::to_string(ranks) + " ranks (rows)");
  model_desc m{.ranks = ranks, .chunks_per_rank = stages / ranks, .micro = max_mb + 1};
  const auto first_misplaced = [&](const model_desc& d) -> std::optional<std::pair<int, int>> {
    for (int r = 0; r < ranks; ++r)
      for (std::size_t c = 0; c < t.ranks[static_cast<std::size_t>(r)].size(); ++c)
        for (const op& o : t.ranks[static_cast<std::size_t>(r)][c])
          if (d.rank_of(o.chunk) != r) return std::pair{r + 1, static_cast<int>(c) + 1};
    return std::nullopt;
  };
  const auto loop_miss = first_misplaced(m);
  if (loop_miss) {
    model_desc v = m;
    v.place = placement::vee;
    const auto vee_miss = stages == 2 * ranks ? first_misplaced(v) : loop_miss;
    if (vee_miss)
      throw csv_error(loop_miss->first, loop_miss->second,
                      "the stage is on a rank that fits neither loop placement (stage s on rank "
                      "s % ranks) nor V placement (rank r holds r and 2*ranks-1-r)");
    m = v;
  }
  schedule s(m);
  const op_index ix(m, false);
  for (const auto& steps : t.ranks) {
    s.add_rank();
    for (const auto& step : steps) {
      for (op o : step) {  // an idle step stays, as an empty slot
        if (is_p2p(o.k) && ix.why_outside(o) == outside::none)
          o.lane = static_cast<std::uint8_t>(transfer_lane(ix, o));
        s.push(o);
      }
      s.close_slot();
    }
  }
  return s;
}

inline schedule read_pytorch_csv(std::istream& in) { return to_schedule(read_pytorch_table(in)); }

namespace csv_detail {
inline std::string action_text(const op& o) {
  std::string kind_text;
  if (o.k == kind::send || o.k == kind::recv) {
    kind_text = std::string(o.k == kind::send ? "SEND_" : "RECV_") + (o.ph == phase::F ? "F" : "B");
  } else {
    kind_text.push_back(o.ph == phase::F    ? 'F'
                        : o.ph == phase::B  ? 'B'
                        : o.ph == phase::dX ? 'I'
                                            : 'W');
  }
  return std::to_string(o.chunk) + kind_text + std::to_string(o.mb);
}
}  // namespace csv_detail

/// `s`'s actions in PyTorch's notation, rank by rank, a cell each: `0F3`, `1B2`, `0SEND_F3`,
/// `(0F7;7B3)OVERLAP_F_B`, an empty cell for an idle step. Only whole-chunk schedules have that
/// form (one `block` op per chunk, transfers); a slot holds one action or a forward and a
/// backward (OVERLAP_F_B). PyTorch has no batched call: one of Megatron's (a slot of
/// transfers, `p2p.blocking`) becomes a cell per transfer, in its order — read back, each is a
/// transfer of its own.
inline std::vector<std::vector<std::string>> pytorch_actions(const schedule& s) {
  const model_desc& m = s.model;
  if (!(m.stages == stage_set::whole_block()) || m.layers != 1 || m.splits != 1)
    throw config_error(
        "weft: csv: PyTorch's format holds whole-chunk actions; this schedule has layers, "
        "sub-stages or splits");
  if (m.bidirectional)
    throw config_error(
        "weft: csv: DualPipe's two directions have no form in PyTorch's CSV, where every "
        "micro-batch passes the stages from the first (use dualpipev, or --format text)");
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(s.ranks()));
  for (int r = 0; r < s.ranks(); ++r) {
    std::vector<std::string>& cells = out[static_cast<std::size_t>(r)];
    for (int i = 0; i < s.slots(r); ++i) {
      const auto slot = s.slot(r, i);
      if (slot.empty()) {
        cells.emplace_back();  // an idle step: an empty cell
      } else if (slot.size() == 1) {
        cells.push_back(csv_detail::action_text(slot[0]));
      } else if (std::all_of(slot.begin(), slot.end(), [](const op& o) { return is_p2p(o.k); })) {
        for (const op& o : slot) cells.push_back(csv_detail::action_text(o));
      } else if (slot.size() == 2 && slot[0].k == kind::block && slot[1].k == kind::block &&
                 slot[0].ph == phase::F && slot[1].ph != phase::F) {
        cells.push_back('(' + csv_detail::action_text(slot[0]) + ';' +
                        csv_detail::action_text(slot[1]) + ")OVERLAP_F_B");
      } else {
        throw config_error("weft: csv: rank " + std::to_string(r) + ", slot " + std::to_string(i) +
                           ": only one action or a forward/backward pair fits a cell");
      }
    }
  }
  return out;
}

/// Writes `s` as a PyTorch CSV: a line a rank, its actions (`pytorch_actions`) comma-separated.
inline void write_pytorch_csv(std::ostream& out, const schedule& s) {
  for (const std::vector<std::string>& cells : pytorch_actions(s)) {
    for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
    out << '\n';
  }
}

}  // namespace weft
