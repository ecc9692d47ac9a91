# Every dependency comes from a Debian package; a missing one stops configuration with the
# package to install.
function(weft_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "weft needs ${what}: install it with `apt-get install ${package}`")
  endif()
endfunction()

find_package(Boost 1.74 QUIET)
weft_require(Boost_FOUND "Boost.Hana (Boost headers >= 1.74)" "libboost-dev")

if(WEFT_BUILD_TESTS)
  find_package(doctest QUIET CONFIG)
  weft_require(doctest_FOUND "doctest" "doctest-dev")
endif()
if(WEFT_BUILD_BENCH)
  find_package(benchmark QUIET CONFIG)
  weft_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()
