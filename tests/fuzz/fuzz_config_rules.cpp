// libFuzzer harness: the generators' configuration rules. The input picks a generator and its
// parameters (small values mostly, the edges of every range at times: 0, negative, the limits
// and one past them); each call must end in a `config_error` naming the rule, or a schedule the
// checker proves legal. AMPipe's rules (`resolve`) likewise: a refusal, or a layout in range.
#include <cstddef>
#include <cstdint>
#include <limits>

#include <weft/core/error.hpp>
#include <weft/generators/ampipe.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/schedule/verify.hpp>

#include "fuzz_input.hpp"

namespace {

/// Mostly 1..small; one time in eight an edge of the int range or of weft's limits.
int number(weft::fuzz::choices& c, int small) {
  const std::uint8_t b = c.byte();
  if (b < 224) return 1 + b % small;
  constexpr int edges[] = {0,
                           -1,
                           255,
                           256,
                           65535,
                           65536,
                           std::numeric_limits<int>::max(),
                           std::numeric_limits<int>::min()};
  return edges[b % 8];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft;
  fuzz::choices c{data, size};
  const int which = c.byte() % 8;
  if (which == 7) {  // AMPipe's rules
    ampipe_config a;
    a.seq = c.flag() ? 0 : static_cast<long long>(number(c, 64)) * 64;
    a.tp = number(c, 8);
    a.cp = number(c, 4);
    a.sequence_parallel = c.flag();
    a.local_experts = number(c, 16);
    a.degree = number(c, 16);
    a.tp_sp_overlap = c.flag();
    a.pipe_experts = c.flag();
    a.multi_data = number(c, 16);
    a.multi_stream = c.flag();
    try {
      const ampipe_layout l = resolve(a);
      if (l.splits != a.degree || l.pieces < 1 || l.splits * l.pieces > 255) __builtin_trap();
    } catch (const config_error&) {
    }
    return 0;
  }
  pipeline_params p;
  p.ranks = number(c, 6);
  p.micro = number(c, 16);
  p.layers = number(c, 3);
  const int chunks = number(c, 4);  // only the interleaved schedule reads its chunks
  const std::uint8_t stages = c.byte() % 3;
  p.stages = stages == 0   ? stage_set::whole_block()
             : stages == 1 ? stage_set::moe()
                           : stage_set::moe_with_shared();
  if (c.flag()) p.overlap = overlap_options::all();
  p.transfers = c.flag();
  p.splits = c.flag() ? number(c, 4) : 1;
  p.pieces = c.flag() ? number(c, 4) : 1;
  p.overlap.pipeline_splits = p.splits > 1;
  p.overlap.multi_stream_all_to_all = c.flag();
  const std::uint8_t bits = c.byte();
  p.p2p = {.megatron = (bits & 1) != 0,
           .blocking = (bits & 2) != 0,
           .overlap_p2p = (bits & 4) != 0,
           .multi_stream = (bits & 8) != 0,
           .log_allreduce = (bits & 16) != 0,
           .async_log_allreduce = (bits & 32) != 0};
  const int per_rank = which == 6 ? chunks : 1;
  // Sizes beyond a few thousand ops are the limits' business (tested elsewhere); here only when
  // some value is out of its range, where the rules must refuse before anything is built.
  const auto in = [](int v, int most) { return v >= 1 && v <= most; };
  const bool in_range = in(p.ranks, 255) && in(p.micro, 65535) && in(p.layers, 65535) &&
                        in(per_rank, 255) && in(p.splits, 255) && in(p.pieces, 255);
  const double ops = static_cast<double>(p.ranks) * p.micro * p.layers * per_rank * p.splits *
                     p.pieces * static_cast<double>(p.stages.size() + 1);
  if (in_range && ops > 20'000) return 0;
  schedule s;
  try {
    switch (which) {
      case 0:
        s = gpipe(p);
        break;
      case 1:
        s = one_f_one_b(p);
        break;
      case 2:
        s = zb_h1(p);
        break;
      case 3:
        s = zb_v(p);
        break;
      case 4:
        s = dualpipe(p);
        break;
      case 5:
        s = dualpipev(p);
        break;
      default: {
        interleaved_params q = gen::with_chunks(p, chunks);
        q.extra_warmup = c.flag();
        s = interleaved(q);
      }
    }
  } catch (const config_error&) {
    return 0;  // refused, by name
  }
  if (!check(s, {.max_violations = 1}).ok()) __builtin_trap();  // accepted, so legal
  return 0;
}
