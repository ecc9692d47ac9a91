// 1F1B (PipeDream-flush): after a warm-up of (ranks - rank - 1) forwards, each rank alternates
// one forward and one backward, so at most `ranks - rank` micro-batches are live on a rank.
#pragma once

#include <weft/core/error.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedules/stage_ops.hpp>

namespace weft {

struct one_f_one_b_params {
  int ranks = 1;
  int micro = 1;
  int layers = 1;  ///< layers per rank
  stage_set stages = stage_set::whole_block();
  bool transfers = false;  ///< emit explicit send/recv ops
};

constexpr schedule one_f_one_b(const one_f_one_b_params& p) {
  if (p.ranks < 1 || p.ranks > 255) throw config_error("weft: 1f1b: ranks must be in [1, 255]");
  if (p.micro < 1 || p.micro > 65535) throw config_error("weft: 1f1b: micro must be in [1, 65535]");
  if (p.layers < 1) throw config_error("weft: 1f1b: layers must be >= 1");
  schedule s(
      model_desc{.ranks = p.ranks, .micro = p.micro, .layers = p.layers, .stages = p.stages});
  if (validate(s.model) != model_error::none)
    throw config_error("weft: 1f1b: stages do not form a layer (see weft::validate)");
  const int per_chunk = p.layers * p.stages.size() * 2 + (p.transfers ? 4 : 0);
  s.reserve(static_cast<std::size_t>(p.ranks * p.micro * per_chunk),
            static_cast<std::size_t>(p.ranks * p.micro * per_chunk));
  const gen::layer_kinds lk = gen::layer_kinds_of(p.stages);
  gen::chain fwd, bwd;
  const auto forward = [&](int m, int r) {
    if (p.transfers) gen::append_transfer(s, kind::recv, phase::F, m, r);
    gen::append_chain(s, fwd, m);
    if (p.transfers) gen::append_transfer(s, kind::send, phase::F, m, r);
  };
  const auto backward = [&](int m, int r) {
    if (p.transfers) gen::append_transfer(s, kind::recv, phase::B, m, r);
    gen::append_chain(s, bwd, m);
    if (p.transfers) gen::append_transfer(s, kind::send, phase::B, m, r);
  };
  for (int r = 0; r < p.ranks; ++r) {
    s.add_rank();
    fwd = gen::chain_of(s.model, lk, phase::F, r);
    bwd = gen::chain_of(s.model, lk, phase::B, r);
    const int warmup = p.ranks - r - 1 < p.micro ? p.ranks - r - 1 : p.micro;
    for (int m = 0; m < warmup; ++m) forward(m, r);
    for (int i = 0; i + warmup < p.micro; ++i) {
      forward(i + warmup, r);
      backward(i, r);
    }
    for (int m = p.micro - warmup; m < p.micro; ++m) backward(m, r);
  }
  return s;
}

}  // namespace weft
