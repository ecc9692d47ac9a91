// The tool's one map from a failure's type to its exit code and message (tools/failure.hpp):
// every kind of weft's exception tree, and what is not in it.
#include <doctest/doctest.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <weft/core/error.hpp>
#include <weft/cp/mask_file.hpp>
#include <weft/io/pytorch_csv.hpp>
#include "failure.hpp"

using namespace weft;
using namespace weft::cli;

// The tree: each kind under its root, the roots apart (compile-time).
static_assert(std::is_base_of_v<config_error, illegal_schedule>);
static_assert(std::is_base_of_v<config_error, csv_error>);
static_assert(std::is_base_of_v<config_error, cp::mask_file_error>);
static_assert(!std::is_base_of_v<std::runtime_error, config_error>);
static_assert(!std::is_base_of_v<run_error, internal_error>);

namespace {
template <class E>
failure of(const E& e) {
  return failure_of(std::make_exception_ptr(e));
}
}  // namespace

TEST_CASE("each kind of failure has its exit code, whoever throws it") {
  CHECK(of(config_error("weft: x")).code == exit_bad_input);
  CHECK(of(csv_error(2, 3, "bad cell")).code == exit_bad_input);
  CHECK(of(cp::mask_file_error(4, "bad line")).code == exit_bad_input);
  CHECK(of(illegal_schedule("weft: rule 2")).code == exit_illegal);
  CHECK(of(run_error("weft: run: rank 1 failed", 1)).code == exit_illegal);
  CHECK(of(internal_error("weft: broken")).code == exit_internal);
  CHECK(of(std::length_error("vector")).code == exit_internal);  // a fault nobody named
  CHECK(of(std::bad_alloc()).code == exit_bad_input);
  CHECK(failure_of(std::make_exception_ptr(42)).code == exit_internal);
}

TEST_CASE("bad input points at --help and is said once; a run's failure by each rank") {
  const failure bad = of(config_error("weft: x"));
  CHECK(bad.shows_help);
  CHECK(bad.same_everywhere);
  const failure illegal = of(illegal_schedule("weft: rule 2"));
  CHECK_FALSE(illegal.shows_help);
  CHECK(illegal.same_everywhere);
  const failure run = of(run_error("weft: run: rank 1 failed", 1));
  CHECK_FALSE(run.shows_help);
  CHECK_FALSE(run.same_everywhere);
}

TEST_CASE("every message starts with one 'weft: '") {
  CHECK(of(config_error("weft: plan: no")).message == "weft: plan: no");
  CHECK(of(config_error("plan: no")).message == "weft: plan: no");
  CHECK(of(run_error("weft: tp2d: rank 3 failed")).message == "weft: tp2d: rank 3 failed");
  CHECK(of(internal_error("weft: cp attention: kv never arrived")).message ==
        "weft: internal error: cp attention: kv never arrived (a fault in weft; please report "
        "it)");
  CHECK(in_file("a.csv", "weft: csv row 2, column 3: bad") ==
        "weft: a.csv: csv row 2, column 3: bad");
  CHECK(without_prefix("weft: x") == "x");
  CHECK(without_prefix("x") == "x");
  CHECK(with_prefix("") == "weft: ");
}
