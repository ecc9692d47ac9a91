// The least a compile-time proof can cost: the evaluator's price of the work any checker of rules
// 1-2 must do, side by side with generating the schedule. Compiled by bench/compile_time.sh
// (floor) with WEFT_BENCH_{P,M,L} as compile_time_verify.cpp and WEFT_BENCH_MODE:
//   1  generate the schedule (the reference)
//   2  + place: one pass over the ops, each op's dense id from its fields, written to a table
//   3  + one dependency: a second pass reading each op's in-layer predecessor from the table
//   4  as 3, the tables fixed-size arrays inside a struct (indexed as arrays, not pointers)
#include <cstdint>

#include <weft/generators/one_f_one_b.hpp>

namespace {

constexpr weft::one_f_one_b_params params{.ranks = WEFT_BENCH_P,
                                          .micro = WEFT_BENCH_M,
                                          .layers = WEFT_BENCH_L,
                                          .stages = weft::stage_set::moe()};
constexpr std::uint32_t capacity =
    2u * WEFT_BENCH_M * WEFT_BENCH_P * WEFT_BENCH_L * weft::kind_count;

struct tables {
  std::uint32_t pos[capacity];
};

// The op's dense id over (phase, mb, chunk, layer, kind): arithmetic on its fields, no calls.
constexpr std::uint32_t id_of(const weft::op& o) {
  return ((((static_cast<std::uint32_t>(o.ph) * WEFT_BENCH_M + o.mb) * WEFT_BENCH_P + o.chunk) *
               WEFT_BENCH_L +
           o.layer) *
          weft::kind_count) +
         static_cast<std::uint32_t>(o.k);
}

constexpr bool floor_pass() {
  const weft::schedule s = weft::one_f_one_b(params);
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  const weft::op* ops = s.ops.data();
  std::uint32_t found = 0;
  // Every id is written once first, in order: g++ keeps a heap array's elements in a sorted
  // list, and writing into a fresh one out of order costs a move of the list's tail per write.
  const std::uint32_t ids = 2 * WEFT_BENCH_M * WEFT_BENCH_P * WEFT_BENCH_L * weft::kind_count;
#if WEFT_BENCH_MODE == 4
  auto* t = new tables;
  for (std::uint32_t x = 0; x < ids; ++x) t->pos[x] = weft::npos;
  for (std::uint32_t i = 0; i < n; ++i) t->pos[id_of(ops[i])] = i;
  for (std::uint32_t i = 0; i < n; ++i)
    if (ops[i].k != weft::kind::attn) found += t->pos[id_of(ops[i]) - 1] < i ? 1u : 0u;
  delete t;
#elif WEFT_BENCH_MODE >= 2
  auto* pos = new std::uint32_t[capacity];
  for (std::uint32_t x = 0; x < ids; ++x) pos[x] = weft::npos;
  for (std::uint32_t i = 0; i < n; ++i) pos[id_of(ops[i])] = i;
#if WEFT_BENCH_MODE == 3
  for (std::uint32_t i = 0; i < n; ++i)
    if (ops[i].k != weft::kind::attn) found += pos[id_of(ops[i]) - 1] < i ? 1u : 0u;
#endif
  delete[] pos;
#endif
  return found <= n;
}

}  // namespace

static_assert(floor_pass());

int main() {}
