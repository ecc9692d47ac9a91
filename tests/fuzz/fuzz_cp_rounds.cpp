// libFuzzer harness: CP plan validation over any plan, and the promise behind it: a plan that
// passes `validate` runs on cp_attention to the end (no hang, no error), forward and backward.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <weft/cp/attention.hpp>
#include <weft/cp/rounds.hpp>

namespace {
struct bytes {
  const std::uint8_t* d;
  std::size_t n, at = 0;
  int next(int mod) { return at < n ? d[at++] % mod : 0; }
  bool more() const { return at < n; }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bytes in{data, size};
  const int cp = 1 + in.next(4), per = 2, s = cp * per;
  // A mask from the input's bits (each query attends to itself: no empty rows needed, but
  // allowed), the identity order, its grid.
  weft::cp::dense_mask mask(s);
  for (int q = 0; q < s; ++q)
    for (int k = 0; k < s; ++k) mask.set(q, k, in.next(2) == 1);
  const weft::cp::dense_mask g = weft::cp::grid(mask, weft::cp::identity_order(s), cp);
  // A plan from the rest: tasks, rounds, who runs what, the transfers; often malformed.
  weft::cp::round_assignment pl;
  pl.cp = cp + (in.next(8) == 0 ? 1 : 0);
  pl.cap = in.next(8);
  const int tasks = in.next(cp * cp + 2);
  for (int t = 0; t < tasks; ++t) pl.tasks.push_back({in.next(cp + 1), in.next(cp + 1)});
  pl.rounds = in.next(6);
  pl.run.assign(static_cast<std::size_t>(pl.rounds),
                std::vector<int>(static_cast<std::size_t>(cp)));
  for (auto& row : pl.run)
    for (int& x : row) x = in.next(tasks + 2) - 1;
  pl.moves.assign(static_cast<std::size_t>(pl.rounds + (in.next(8) == 0 ? 0 : 1)),
                  std::vector<weft::cp::transfers>(static_cast<std::size_t>(cp)));
  for (auto& row : pl.moves)
    for (weft::cp::transfers& t : row)
      for (auto* list : {&t.recv_q_src, &t.recv_kv_src, &t.recv_o_src, &t.send_q_dst,
                         &t.send_kv_dst, &t.send_o_dst})
        for (int k = in.next(3); k > 0; --k) list->push_back(in.next(cp + 1) - (in.next(5) == 0));
  if (!weft::cp::validate(pl, g).empty()) return 0;
  // Valid: it must run.
  weft::cp::cp_attention_options o;
  o.timeout = weft::seconds(5);
  weft::cp::cp_attention run(mask, weft::cp::identity_order(s), pl, o);
  weft::nn::matrix<float> q = weft::nn::matrix<float>::Ones(s, 2);
  (void)run.forward(q, q, q);
  (void)run.backward(q);
  return 0;
}
