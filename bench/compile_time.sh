#!/usr/bin/env bash
# Compile time and peak compiler memory, with $CXX (default g++; clang++ works too), medians of
# REPS runs (default 5):
#   proofs   static_assert-verifying 1F1B schedules with MoE sub-stages (P ranks x M micro-batches
#            x L layers x 8 sub-stage ops), and the containers behind them (-fsyntax-only)
#   headers  a file per public header using what it offers (bench/compile_use/), compiled and
#            optimised (-O2) as a trainer's build compiles it; the executors header-only and with
#            weft::exec_compiled (WEFT_SEPARATE_COMPILATION); a trainer's planning file at -O2
#            and -O3, header-only and with weft::compiled
#   floor    the least any proof of rules 1-2 costs the evaluator, beside generation
#            (bench/constexpr_floor.cpp: place every op, read one dependency per op)
#   contract a performance contract (lowered, simulated, measured) beside a proof of legality
#            (bench/compile_time_contract.cpp, whole-block DualPipeV with unit costs)
# Usage: [CXX=clang++] bench/compile_time.sh [REPS] [proofs|headers|floor|contract|all]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
what=${2:-all}
cxx=${CXX:-g++}
# What it takes beyond the compiler's default constexpr limits (docs/legality.md).
if "$cxx" --version | grep -q clang; then
  big_flags="-fconstexpr-steps=2000000000"
  contract_flags=$big_flags
  default_limit=512
else
  big_flags="-fconstexpr-ops-limit=1073741824 -fconstexpr-loop-limit=4194304"
  contract_flags="-fconstexpr-ops-limit=4294967295 -fconstexpr-loop-limit=4194304"
  default_limit=512
fi
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT

median() { sort -n | sed -n "$(((reps + 1) / 2))p"; }

# measure SRC FLAGS... -> "<seconds> s <MB> MB" (medians), or "over limits" if it does not compile
# (-fsyntax-only unless FLAGS ask for more, e.g. -c -O2 -o /dev/null)
measure() {
  local src=$1 times=() mems=() out mode=-fsyntax-only
  shift
  [[ " $* " == *" -c "* ]] && mode=
  for _ in $(seq "$reps"); do
    if ! /usr/bin/time -o "$timing" -f "%e %M" "$cxx" -std=c++20 -Iinclude $mode "$@" "$src" \
        >/dev/null 2>&1; then
      echo "over limits"
      return
    fi
    out=$(tail -1 "$timing")
    times+=("${out% *}")
    mems+=("${out#* }")
  done
  echo "$(printf '%s\n' "${times[@]}" | median) s $(($(printf '%s\n' "${mems[@]}" | median) / 1024)) MB"
}

echo "$("$cxx" --version | head -1), $(nproc) cores, medians of $reps runs"

if [ "$what" = headers ] || [ "$what" = all ]; then
  eigen=(-isystem /usr/include/eigen3)
  printf '%-44s %-22s\n' "a file using (bench/compile_use/), -O2" "time, peak memory"
  for use in simulator weft runtime exec moe_executor cp; do
    printf '%-44s %-22s\n' "$use.cpp" \
      "$(measure bench/compile_use/$use.cpp "${eigen[@]}" -O2 -c -o /dev/null)"
  done
  for use in exec moe_executor; do
    printf '%-44s %-22s\n' "$use.cpp with weft::exec_compiled" \
      "$(measure bench/compile_use/$use.cpp "${eigen[@]}" -DWEFT_SEPARATE_COMPILATION -O2 -c \
         -o /dev/null)"
  done
  printf '%-44s %-22s\n' "simulator.cpp with weft::compiled" \
    "$(measure bench/compile_use/simulator.cpp -DWEFT_SEPARATE_COMPILATION -O2 -c -o /dev/null)"
  # A trainer's planning file: four generators, simulate, measure, search; sizes as constants
  # (which g++ may try to fold at compile time) or from argv.
  for opt in -O2 -O3; do
    for constant in 1 0; do
      sizes=$([ "$constant" = 1 ] && echo "constant sizes" || echo "sizes from argv")
      printf '%-44s %-22s\n' "trainer.cpp $opt, $sizes" \
        "$(measure bench/compile_use/trainer.cpp -DWEFT_BENCH_CONSTANT=$constant $opt -c -o /dev/null)"
      printf '%-44s %-22s\n' "  with weft::compiled" \
        "$(measure bench/compile_use/trainer.cpp -DWEFT_BENCH_CONSTANT=$constant \
           -DWEFT_SEPARATE_COMPILATION $opt -c -o /dev/null)"
    done
  done
  for part in core generators search simulate runner exec_float exec_double; do  # built once
    printf '%-44s %-22s\n' "src/$part.cpp" \
      "$(measure src/$part.cpp "${eigen[@]}" -DWEFT_SEPARATE_COMPILATION -O2 -c -o /dev/null)"
  done
  echo
fi
[ "$what" = headers ] && exit 0

if [ "$what" = floor ] || [ "$what" = all ]; then
  printf '%-12s %8s %-18s %-18s %-18s %-18s\n' "P,M,L" "ops" "generate" "+ place" \
    "+ one dependency" "the same, arrays"
  for cfg in "8 32 4" "16 64 4" "16 128 8"; do
    set -- $cfg
    row=()
    for mode in 1 2 3 4; do
      defs=(-DWEFT_BENCH_P="$1" -DWEFT_BENCH_M="$2" -DWEFT_BENCH_L="$3" -DWEFT_BENCH_MODE="$mode")
      row+=("$(measure bench/constexpr_floor.cpp "${defs[@]}" $big_flags)")
    done
    printf '%-12s %8s %-18s %-18s %-18s %-18s\n' "$1,$2,$3" "$((8 * $1 * $2 * $3))" "${row[@]}"
  done
  echo
fi
[ "$what" = floor ] && exit 0

if [ "$what" = contract ] || [ "$what" = all ]; then
  printf '%-12s %-22s %-22s\n' "DualPipeV" "verify" "contract"
  for cfg in "4 16" "8 32" "16 64"; do
    set -- $cfg
    row=()
    for mode in 1 2; do
      defs=(-DWEFT_BENCH_P="$1" -DWEFT_BENCH_M="$2" -DWEFT_BENCH_MODE="$mode")
      row+=("$(measure bench/compile_time_contract.cpp "${defs[@]}" $contract_flags)")
    done
    printf '%-12s %-22s %-22s\n' "$1 x $2" "${row[@]}"
  done
  echo "flags: $contract_flags"
  echo
fi
[ "$what" = contract ] && exit 0

printf '%-12s %8s %-22s %-22s %-22s\n' "P,M,L" "ops" "headers only" "generate" "verify"
for cfg in "4 8 2" "8 32 4" "16 64 4" "16 128 8"; do
  set -- $cfg
  ops=$((8 * $1 * $2 * $3))
  flags=()
  [ "$ops" -gt "$default_limit" ] && flags=($big_flags)
  row=()
  for mode in 0 1 2; do
    defs=(-DWEFT_BENCH_P="$1" -DWEFT_BENCH_M="$2" -DWEFT_BENCH_L="$3" -DWEFT_BENCH_MODE="$mode")
    row+=("$(measure bench/compile_time_verify.cpp "${defs[@]}" "${flags[@]}")")
  done
  printf '%-12s %8s %-22s %-22s %-22s\n' "$1,$2,$3" "$ops" "${row[@]}"
done
echo "flags beyond the defaults, for more than $default_limit ops: $big_flags"

# Why weft's containers use weft::buffer: appending N values in constant evaluation.
n=100000
echo
printf '%-34s %-22s\n' "append $n values, then read them" "time, peak memory"
names=("std::vector push_back" "weft::buffer push_back" "weft::buffer extend + index")
for mode in 0 1 2; do
  printf '%-34s %-22s\n' "${names[$mode]}" \
    "$(measure bench/constexpr_containers.cpp -DWEFT_BENCH_MODE="$mode" -DWEFT_BENCH_N="$n" $big_flags)"
done
