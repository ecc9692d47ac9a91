// `import weft`: the module, its exceptions, and the conversions its parts share.
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include "bindings.hpp"

namespace weft::python {

py::object to_python(const nlohmann::ordered_json& j) {
  // json.loads keeps whole numbers ints and the rest floats, as Python expects them. Looked up
  // each time (sys.modules makes it cheap): a static would outlive the interpreter.
  return py::module_::import("json").attr("loads")(j.dump());
}

void warn_all(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, with_prefix(w).c_str(), 1) != 0)
      throw py::error_already_set();  // warnings turned into errors by the caller's filter
}

}  // namespace weft::python

PYBIND11_MODULE(weft, m) {
  namespace py = pybind11;
  m.doc() =
      "weft: pipeline schedules for distributed training proven legal, simulated and planned.\n\n"
      "generate() a schedule or load_csv() / from_actions() a PyTorch one; verify() it (every "
      "broken rule, the ops a deadlock leaves stuck, whether PyTorch's simulator would stall); "
      "simulate() it; search() for a faster one; plan() a real job from a Hugging Face "
      "config.json and a cluster. Bad input raises ConfigError (a ValueError) with the message "
      "the weft tool prints.";

  // The library's exception tree (core/error.hpp) as Python's: bad input is a ValueError, an
  // illegal schedule a kind of bad input; a stopped run and a fault of weft's are RuntimeErrors.
  // The classes live as long as the module's dict holds them; the pointers are never freed,
  // so nothing is released after the interpreter has gone.
  static auto* config = new py::exception<weft::config_error>(m, "ConfigError", PyExc_ValueError);
  static auto* illegal =
      new py::exception<weft::illegal_schedule>(m, "IllegalScheduleError", config->ptr());
  static auto* run = new py::exception<weft::run_error>(m, "RunError", PyExc_RuntimeError);
  static auto* internal =
      new py::exception<weft::internal_error>(m, "InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const weft::illegal_schedule& e) {  // before config_error: it is one
      (*illegal)(weft::with_prefix(e.what()).c_str());
    } catch (const weft::config_error& e) {
      (*config)(weft::with_prefix(e.what()).c_str());
    } catch (const weft::run_error& e) {
      (*run)(weft::with_prefix(e.what()).c_str());
    } catch (const weft::internal_error& e) {
      (*internal)(("weft: internal error: " + std::string(weft::without_prefix(e.what())) +
                   " (a fault in weft; please report it)")
                      .c_str());
    }
  });
  m.attr("__version__") = WEFT_VERSION;
  weft::python::bind_schedules(m);
  weft::python::bind_planning(m);
}
