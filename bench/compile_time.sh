#!/usr/bin/env bash
# Compile time and peak compiler memory of static_assert-verifying 1F1B schedules with MoE
# sub-stages (P ranks x M micro-batches x L layers x 8 sub-stage ops), with g++.
# Medians of REPS runs (default 5). Usage: bench/compile_time.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
cxx=${CXX:-g++}
src=bench/compile_time_verify.cpp
big_flags="-fconstexpr-ops-limit=1073741824 -fconstexpr-loop-limit=4194304"

measure() {  # mode P M L flags... -> "seconds MB" (medians) or "limit" if it does not compile
  local mode=$1 p=$2 m=$3 l=$4
  shift 4
  local times=() mems=()
  for _ in $(seq "$reps"); do
    if ! /usr/bin/time -o /tmp/weft_ct_time -f "%e %M" "$cxx" -std=c++20 -Iinclude -fsyntax-only "$@" \
        -DWEFT_BENCH_P="$p" -DWEFT_BENCH_M="$m" -DWEFT_BENCH_L="$l" -DWEFT_BENCH_MODE="$mode" \
        "$src" >/dev/null 2>&1; then
      echo "limit"
      return
    fi
    local out
    out=$(tail -1 /tmp/weft_ct_time)
    times+=("${out% *}")
    mems+=("${out#* }")
  done
  local t mem
  t=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
  mem=$(printf '%s\n' "${mems[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
  echo "$t $((mem / 1024))"
}

echo "$("$cxx" --version | head -1), $(nproc) cores, medians of $reps runs"
printf '%-12s %8s %-22s %-22s %-22s %-22s\n' "P,M,L" "ops" "headers only" "generate" "verify (fast path)" "precise checker"
for cfg in "8 32 4" "16 64 4" "16 128 8"; do
  set -- $cfg
  ops=$((8 * $1 * $2 * $3))
  flags=()
  [ "$ops" -gt 32768 ] && flags=($big_flags)
  row=()
  for mode in 0 1 2 3; do
    if [ "$mode" = 3 ] && [ "$ops" -gt 32768 ]; then
      r="skipped"
    elif [ "$mode" = 3 ]; then
      r=$(measure "$mode" "$@" $big_flags)
    else
      r=$(measure "$mode" "$@" "${flags[@]}")
    fi
    case "$r" in
      limit) row+=("over limits") ;;
      skipped) row+=("(not run)") ;;
      *) row+=("${r% *} s ${r#* } MB") ;;
    esac
  done
  printf '%-12s %8s %-22s %-22s %-22s %-22s\n' "$1,$2,$3" "$ops" "${row[@]}"
done
echo "flags beyond g++'s defaults, for more than 32768 ops and for the precise checker: $big_flags"
