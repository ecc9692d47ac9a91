// A checker's report and a schedule file, as every command reads and prints them (report.hpp).
#include "commands/report.hpp"

#include <fstream>

#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>

namespace weft::cli {

int report_check(bool as_json, const report& r, const std::optional<std::string>& note) {
  const std::size_t limit = violations_shown;
  if (!as_json) {
    print_report(std::cout, r, limit);
    if (note) std::cout << "weft: note: " << *note << "\n";
  } else {
    std::cout << check_json(r, limit, note).dump() << "\n";
  }
  return r.ok() ? exit_ok : exit_illegal;
}

schedule read_csv_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw config_error("weft: cannot open '" + file + "'");
  try {
    return read_pytorch_csv(in);
  } catch (const csv_error& e) {
    throw config_error(in_file(file, e.what()));
  }
}

}  // namespace weft::cli
