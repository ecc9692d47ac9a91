// Compile-time cost of proving a generated schedule legal with static_assert. Compiled by
// bench/compile_time.sh with WEFT_BENCH_{P,M,L} (ranks, micro-batches, layers per chunk) and
// WEFT_BENCH_MODE: 0 headers only, 1 generate, 2 verify.
#include <weft/generators/one_f_one_b.hpp>
#include <weft/schedule/verify.hpp>

[[maybe_unused]] constexpr weft::one_f_one_b_params params{.ranks = WEFT_BENCH_P,
                                                           .micro = WEFT_BENCH_M,
                                                           .layers = WEFT_BENCH_L,
                                                           .stages = weft::stage_set::moe()};
[[maybe_unused]] constexpr std::size_t expected_ops =
    std::size_t{8} * WEFT_BENCH_P * WEFT_BENCH_M * WEFT_BENCH_L;

#if WEFT_BENCH_MODE == 1
static_assert(weft::one_f_one_b(params).ops.size() == expected_ops);
#elif WEFT_BENCH_MODE == 2
static_assert(weft::verify(weft::one_f_one_b(params)));
#endif

int main() {}
