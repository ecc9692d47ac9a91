// Compile-time cost of appending N values in constant evaluation and reading them back:
// std::vector::push_back (WEFT_BENCH_MODE 0), weft::buffer::push_back (1), weft::buffer::extend
// and indexing (2). Compiled by bench/compile_time.sh; why weft's containers use weft::buffer.
#include <vector>

#include <weft/core/buffer.hpp>

constexpr unsigned fill_and_sum(unsigned n) {
#if WEFT_BENCH_MODE == 0
  std::vector<unsigned> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(i);
#elif WEFT_BENCH_MODE == 1
  weft::buffer<unsigned> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(i);
#else
  weft::buffer<unsigned> v;
  unsigned* p = v.extend(n);
  for (unsigned i = 0; i < n; ++i) p[i] = i;
#endif
  unsigned sum = 0;
  for (unsigned i = 0; i < n; ++i) sum += v[i];
  return sum;
}
static_assert(fill_and_sum(WEFT_BENCH_N) == unsigned{WEFT_BENCH_N} / 2 * (WEFT_BENCH_N - 1u));

int main() {}
