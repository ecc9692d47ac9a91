// Text for people: reports and schedules as MindSpeed's feature notes' figures write them (ops and
// violations one per line come from schedule/text.hpp).
#pragma once

#include <cstddef>
#include <ostream>

#include <weft/schedule/schedule.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/verify.hpp>

namespace weft {

/// Every violation, one per line; on a deadlock, also the op every stuck rank waits at.
inline std::ostream& operator<<(std::ostream& os, const report& r) {
  if (r.ok()) return os << "weft: legal\n";
  for (const violation& v : r.violations) os << to_string(v) << '\n';
  for (const violation& v : r.blocked) os << "  blocked: " << to_string(v) << '\n';
  return os;
}

/// As above, the first `limit` violations only, then "... and N more" (N counts what the check
/// collected; see check_options::max_violations).
inline void print_report(std::ostream& os, const report& r, std::size_t limit) {
  if (r.ok()) {
    os << "weft: legal\n";
    return;
  }
  const std::size_t n = r.violations.size();
  for (std::size_t i = 0; i < n && i < limit; ++i) os << to_string(r.violations[i]) << '\n';
  if (n > limit) os << "weft: ... and " << n - limit << " more\n";
  for (const violation& v : r.blocked) os << "  blocked: " << to_string(v) << '\n';
}

/// Each rank's slots, one per line, the ops of a slot joined by " | ".
inline void print_slots(std::ostream& os, const schedule& s) {
  for (int r = 0; r < s.ranks(); ++r) {
    os << "rank " << r << ":\n";
    for (int k = 0; k < s.slots(r); ++k) {
      os << "  " << k << ": ";
      bool first = true;
      for (const op& o : s.slot(r, k)) {
        os << (first ? "" : " | ") << to_string(o);
        first = false;
      }
      os << '\n';
    }
  }
}

}  // namespace weft
