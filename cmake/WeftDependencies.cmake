# Every dependency comes from a Debian package; a missing one stops configuration with the
# package to install.
function(weft_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "weft needs ${what}: install it with `apt-get install ${package}`")
  endif()
endfunction()

find_package(Threads REQUIRED)  # the runtime's streams

# The reference kernels (weft/nn) use Eigen; only targets that include them link it.
find_package(Eigen3 3.3 QUIET CONFIG)
if(WEFT_BUILD_TESTS OR WEFT_BUILD_EXAMPLES OR WEFT_BUILD_TOOLS)
  weft_require(Eigen3_FOUND "Eigen 3 (weft/nn kernels)" "libeigen3-dev")
endif()

# range-v3 where ranges read better than loops in code compiled once (the MoE executor's
# grouping, the tool's lists); its package config takes no version (it wants an exact match).
find_package(range-v3 QUIET CONFIG)
if(TARGET Eigen3::Eigen OR WEFT_BUILD_TOOLS OR WEFT_FUZZ)
  weft_require(range-v3_FOUND "range-v3" "librange-v3-dev")
endif()

# The Chrome trace (weft/io/chrome_trace.hpp) and the tool's --json are written with it.
find_package(nlohmann_json 3.10 QUIET CONFIG)
weft_require(nlohmann_json_FOUND "nlohmann/json" "nlohmann-json3-dev")

# weft::mpi, the runtime over MPI processes (Open MPI).
if(WEFT_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)  # MPI's C API from C++: no C++ bindings
  find_package(MPI QUIET COMPONENTS CXX)
  if(WEFT_BUILD_TESTS OR WEFT_BUILD_TOOLS)
    weft_require(MPI_CXX_FOUND "MPI (weft::mpi, weft run --backend mpi)" "libopenmpi-dev openmpi-bin")
  endif()
endif()

if(WEFT_BUILD_TOOLS OR WEFT_FUZZ OR WEFT_BUILD_TESTS)  # the tool, its fuzzer, its tests
  find_package(CLI11 QUIET CONFIG)
  weft_require(CLI11_FOUND "CLI11 (the weft tool's command line)" "libcli11-dev")
  # torchtitan's TOML job configs (weft plan --job FILE.toml; plan/torchtitan_file.hpp).
  find_package(tomlplusplus QUIET CONFIG)
  weft_require(tomlplusplus_FOUND "toml++ (torchtitan's job files)" "libtomlplusplus-dev")
endif()

if(WEFT_BUILD_TESTS)
  find_package(doctest QUIET CONFIG)
  weft_require(doctest_FOUND "doctest" "doctest-dev")
  # The picture tests parse what weft writes (nlohmann/json above).
  find_package(pugixml QUIET CONFIG)
  weft_require(pugixml_FOUND "pugixml (tests)" "libpugixml-dev")
endif()
if(WEFT_BUILD_BENCH)
  find_package(benchmark QUIET CONFIG)
  weft_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()
