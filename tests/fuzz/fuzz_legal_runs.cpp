// libFuzzer harness: legal means it runs. The input builds a whole-block schedule of 1-3 ranks
// (a loop or a V, 1-3 micro-batches), each rank's ops in an order the input picks (mostly among
// those whose own rank's producers came before, at times any), backwards fused or split into dX
// and dW, forwards overlapped with backwards in pairs, transfers lowered as PyTorch places them.
// Every schedule the checker calls legal must run on the in-process runtime to the end, with the
// loss and every gradient equal bit for bit to the serial step's.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/exec/executor.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft;
  fuzz::choices c{data, size};
  const std::uint8_t shape = c.byte();
  const int R = 1 + shape % 3, M = 1 + (shape / 3) % 3;
  const bool vee = (shape / 9) % 2 == 1;
  const model_desc m{.ranks = R,
                     .chunks_per_rank = vee ? 2 : 1 + (shape / 18) % 2,
                     .place = vee ? placement::vee : placement::loop,
                     .micro = M};
  const int C = m.chunks();
  const std::uint8_t split_bits = c.byte();
  schedule s(m);
  // Placed on this rank so far: forwards, and backwards' dX (fused or not), per (mb, chunk).
  std::vector<char> fwd(static_cast<std::size_t>(M * C), 0), bwd(fwd);
  const auto at = [&](int mb, int ch) { return static_cast<std::size_t>(mb * C + ch); };
  for (int r = 0; r < R; ++r) {
    s.add_rank();
    std::vector<op> left;
    for (int ch = 0; ch < C; ++ch)
      if (m.rank_of(ch) == r)
        for (int mb = 0; mb < M; ++mb) {
          left.push_back(make_op(kind::block, phase::F, mb, ch));
          if ((split_bits >> ((mb + ch) % 8)) & 1) {
            left.push_back(make_op(kind::block, phase::dX, mb, ch));
            left.push_back(make_op(kind::block, phase::dW, mb, ch));
          } else {
            left.push_back(make_op(kind::block, phase::B, mb, ch));
          }
        }
    // Ready on this rank: what its producers on this rank allow (other ranks' are the checker's).
    const auto ready = [&](const op& o) {
      if (o.ph == phase::F)
        return o.chunk == 0 || m.rank_of(o.chunk - 1) != r || fwd[at(o.mb, o.chunk - 1)];
      if (o.ph == phase::dW) return bwd[at(o.mb, o.chunk)] != 0;
      return fwd[at(o.mb, o.chunk)] &&
             (o.chunk + 1 == C || m.rank_of(o.chunk + 1) != r || bwd[at(o.mb, o.chunk + 1)]);
    };
    const auto take = [&](std::size_t i) {
      const op o = left[i];
      left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
      if (o.ph == phase::F) fwd[at(o.mb, o.chunk)] = 1;
      if (o.ph == phase::B || o.ph == phase::dX) bwd[at(o.mb, o.chunk)] = 1;
      return o;
    };
    while (!left.empty()) {
      const std::uint8_t how = c.byte();
      std::vector<std::size_t> pick;
      for (std::size_t i = 0; i < left.size(); ++i)
        if ((how & 7) == 0 || ready(left[i])) pick.push_back(i);
      if (pick.empty())
        for (std::size_t i = 0; i < left.size(); ++i) pick.push_back(i);
      const op o = take(pick[c.byte() % pick.size()]);
      s.push(o);
      if (o.ph == phase::F && (how & 0x30) == 0) {  // a pair: this forward with a fused backward
        for (std::size_t i = 0; i < left.size(); ++i)
          if (left[i].ph == phase::B && ready(left[i])) {
            op b = take(i);
            b.lane = 1;  // side by side: two compute streams
            s.push(b);
            break;
          }
      }
      s.close_slot();
    }
  }
  if (c.byte() % 2 == 0) {
    try {
      s = with_transfers(s);
    } catch (const config_error&) {
      return 0;  // no rank can issue its next slot: nothing to lower
    }
  }
  if (!check(s, {.max_violations = 1}).ok()) return 0;
  exec::dense_model<float> model({.stages = C, .tokens = 4, .width = 8, .ffn = 8, .micro = M});
  exec::run_options opt;
  opt.timeout = std::chrono::seconds(15);
  const exec::run_result<float> run = exec::dense_executor<float>(model, opt).run(s);
  const float loss = model.serial_step();
  if (run.loss != loss || exec::max_grad_rel_err(run, model) != 0) __builtin_trap();
  return 0;
}
