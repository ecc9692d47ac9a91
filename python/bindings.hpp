// The Python module `weft` (pybind11): what its parts share. The module binds the library, never
// the tool: every rule, message and JSON form is the library's, so `weft.verify` and `weft
// verify`, `weft.plan` and `weft plan --json` say the same things.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include <weft/schedule/schedule.hpp>

namespace weft::python {

namespace py = pybind11;

/// A schedule as Python holds it: the schedule, and the generator (or file) it came from.
struct py_schedule {
  schedule s;
  std::string name;
};

/// A JSON value as the Python object `json.loads` makes of it: dicts, lists, ints for whole
/// numbers (bytes, counts), floats for the rest (seconds).
py::object to_python(const nlohmann::ordered_json& j);

/// Issues each of `warnings` as a Python `UserWarning` (a key of a file weft does not use, say).
void warn_all(const std::vector<std::string>& warnings);

void bind_schedules(py::module_& m);
void bind_planning(py::module_& m);

}  // namespace weft::python
