// failure.hpp: exception type to exit code, in one place.
#include "failure.hpp"

#include <new>

#include <weft/core/error.hpp>

namespace weft::cli {

std::string in_file(std::string_view file, std::string_view what) {
  what = without_prefix(what);
  std::string out = "weft: ";
  out += file;
  out += ": ";
  out += what;
  return out;
}

std::string help_hint(std::string_view command) {
  std::string s = "run '";
  s += command;
  s += " --help' for the options";
  return s;
}

failure failure_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const illegal_schedule& x) {  // before config_error: it is one
    return {.code = exit_illegal, .message = with_prefix(x.what()), .same_everywhere = true};
  } catch (const config_error& x) {
    return {.code = exit_bad_input,
            .message = with_prefix(x.what()),
            .shows_help = true,
            .same_everywhere = true};
  } catch (const run_error& x) {
    return {.code = exit_illegal, .message = with_prefix(x.what())};
  } catch (const std::bad_alloc&) {
    return {.code = exit_bad_input,
            .message =
                "weft: out of memory; the request is too large for this machine "
                "(docs/limits.md)"};
  } catch (const std::exception& x) {  // internal_error, or a fault nobody named
    std::string message = "weft: internal error: ";
    message += without_prefix(x.what());
    message += " (a fault in weft; please report it)";
    return {.code = exit_internal, .message = message};
  } catch (...) {
    return {.code = exit_internal,
            .message =
                "weft: internal error: an unknown exception (a fault in weft; please "
                "report it)"};
  }
}

}  // namespace weft::cli
