// Compile-time cost of a performance contract beside a proof of legality: whole-block DualPipeV
// with unit costs, P ranks x M micro-batches (WEFT_BENCH_{P,M}). Compiled by
// bench/compile_time.sh (contract) with WEFT_BENCH_MODE: 1 verify, 2 the contract (lowered,
// simulated and measured by the compiler).
#include <weft/generators/dualpipe.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/contract.hpp>

constexpr weft::pipeline_params params{.ranks = WEFT_BENCH_P, .micro = WEFT_BENCH_M};
constexpr auto costs = weft::unit_cost_model::pipeline({.F = 1, .B = 2});

#if WEFT_BENCH_MODE == 1
static_assert(weft::verify(weft::dualpipev(params)));
#elif WEFT_BENCH_MODE == 2
static_assert(weft::kept<weft::contract(weft::dualpipev(params), costs, {.makespan = 1e9})>);
#endif

int main() {}
