#!/usr/bin/env bash
# weft's one entry point for people and CI:
#   scripts/dev.sh demo    install what is missing, build and run the examples: the compile-time
#                          proofs of the quick start, then a tiny MoE trained with DualPipeV and
#                          fb-overlap on 4 in-process ranks next to 1F1B
#   scripts/dev.sh test    install what is missing, build with g++ (and the Python module), with
#                          clang under address, UB and bounds checks, and with clang under
#                          ThreadSanitizer; run every test
#   scripts/dev.sh bench   install what is missing, build and run the benchmarks (those over MPI
#                          with mpirun on this machine)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ clang doctest-dev libbenchmark-dev nlohmann-json3-dev
          libpugixml-dev libtbb-dev libeigen3-dev time python3 libcli11-dev librange-v3-dev
          libopenmpi-dev openmpi-bin librsvg2-bin python3-pil pybind11-dev python3-dev
          python3-pytest libtomlplusplus-dev)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "weft: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The interpreter the Python module is built and tested for: the first python3 that has pytest
# and Python's headers (a machine's default python3 need not be Debian's, which has both once
# the packages above are in).
python_for_module() {
  local p
  for p in "$(command -v python3 || true)" /usr/bin/python3; do
    [ -n "$p" ] && "$p" -c 'import os, sys, sysconfig, pytest
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
      2>/dev/null && { echo "$p"; return; }
  done
  echo /usr/bin/python3
}

build() {  # build PRESET [targets...]
  local preset=$1
  shift
  local extra=()
  [ "$preset" = gcc ] && extra+=("-DPython3_EXECUTABLE=$(python_for_module)")
  cmake --preset "$preset" "${extra[@]}" >/dev/null
  cmake --build --preset "$preset" "$@"
}

case "${1:-}" in
  demo)
    install_missing
    build gcc --target quickstart train_moe_dualpipev
    ./build/gcc/examples/quickstart
    echo
    mkdir -p build/demo
    ./build/gcc/examples/train_moe_dualpipev build/demo
    ;;
  test)
    install_missing
    for preset in gcc clang tsan; do
      echo "== $preset"
      start=$SECONDS
      build "$preset"
      built=$SECONDS
      ctest --preset "$preset"
      echo "== $preset: built in $((built - start)) s, tested in $((SECONDS - built)) s"
    done
    ;;
  bench)
    install_missing
    build bench
    ./build/bench/bench/verify_runtime --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
    ./build/bench/bench/simulate_throughput --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
    ./build/bench/bench/streams_overhead --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
    bench/compile_time.sh
    CXX=clang++ bench/compile_time.sh
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # Open MPI refuses root else
    mpirun --oversubscribe -np 2 ./build/bench/bench/mpi_comm p2p
    mpirun --oversubscribe -np 4 ./build/bench/bench/mpi_comm a2a
    mpirun --oversubscribe -np 4 ./build/bench/bench/mpi_moe
    ;;
  *)
    echo "usage: scripts/dev.sh demo|test|bench" >&2
    exit 2
    ;;
esac
