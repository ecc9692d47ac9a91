// Pipeline-level actions (a chunk's forward, its fused or split backward, a forward overlapped
// with a backward) appended to a schedule as slots. Generators speak in these actions; the
// builder expands each into the chunk's layers and sub-stages (with MoE fb-overlap as the
// options say), so every generator gets them for free, and explicit transfers from
// `with_transfers` (transfers.hpp).
#pragma once

#include <weft/generators/params.hpp>
#include <weft/generators/stage_ops.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/transfers.hpp>

namespace weft::gen {

class pipeline_builder {
 public:
  constexpr pipeline_builder(const model_desc& m, overlap_options o)
      : s_(m),
        forward_(forward_pattern(m, o)),
        backward_(backward_pattern(m, o, phase::B)),
        input_(backward_pattern(m, o, phase::dX)),
        weight_(backward_pattern(m, o, phase::dW)),
        overlapped_(overlap_pattern(m, o)) {
    // Every (micro-batch, chunk) runs one forward and one backward, fused or split; reserving
    // once spares constant evaluation the copies of a growing array.
    const std::size_t split = input_.ops.size() + weight_.ops.size();
    const std::size_t per_unit =
        forward_.ops.size() + (split > backward_.ops.size() ? split : backward_.ops.size());
    const std::size_t slots_split = input_.slot_end.size() + weight_.slot_end.size();
    const std::size_t slots_per_unit =
        forward_.slot_end.size() +
        (slots_split > backward_.slot_end.size() ? slots_split : backward_.slot_end.size());
    const auto units = static_cast<std::size_t>(m.micro) * static_cast<std::size_t>(m.chunks()) /
                       (m.bidirectional ? 2u : 1u);
    s_.ops.reserve(units * per_unit);
    s_.slot_end.reserve(units * slots_per_unit);
  }

  constexpr void add_rank() { s_.add_rank(); }

  /// The forward of (mb, chunk), and after a micro-batch's last chunk the loss all-reduce for
  /// logging when the model has one (on its own lane, so nothing else queues behind it).
  constexpr void forward(int mb, int chunk) {
    stamp(s_, forward_, mb, chunk);
    if (s_.model.loss != loss_reduce::none && chunk + 1 == s_.model.end_chunk(mb))
      s_.add_slot(make_op(kind::all_reduce, phase::F, mb, chunk, 0, 0, loss_lane));
  }
  /// The fused backward (B) of (mb, chunk).
  constexpr void backward(int mb, int chunk) { stamp(s_, backward_, mb, chunk); }
  /// The input-gradient half (dX, PyTorch's I) of a split backward.
  constexpr void backward_input(int mb, int chunk) { stamp(s_, input_, mb, chunk); }
  /// The weight-gradient half (dW, PyTorch's W) of a split backward.
  constexpr void backward_weight(int mb, int chunk) { stamp(s_, weight_, mb, chunk); }
  /// The forward of (fmb, fchunk) overlapped with the backward of (bmb, bchunk).
  constexpr void overlapped(int fmb, int fchunk, int bmb, int bchunk) {
    stamp(s_, overlapped_, fmb, fchunk, bmb, bchunk);
  }

  /// An idle step: an empty slot, as PyTorch's schedules pad their steps with None.
  constexpr void idle() { s_.close_slot(); }

  constexpr schedule take() { return static_cast<schedule&&>(s_); }

 private:
  schedule s_;
  pattern forward_, backward_, input_, weight_, overlapped_;
};

/// The schedule built so far, lowered to explicit transfers when `p` asks for them (`transfers`,
/// or any p2p option); `interleaved`: Megatron's interleaved lowering for `p.p2p.megatron`, else
/// its 1F1B; each rank's warm-up forwards in `warmup` (Megatron's lowerings place transfers by
/// phase).
constexpr schedule finish(pipeline_builder& b, const pipeline_params& p, bool interleaved = false,
                          buffer<std::uint16_t> warmup = {}) {
  schedule s = b.take();
  if (!p.transfers && !p.p2p.lowers()) return s;
  transfer_options o = p.p2p.transfers(interleaved);
  o.warmup = static_cast<buffer<std::uint16_t>&&>(warmup);
  return with_transfers(s, static_cast<transfer_options&&>(o));
}

}  // namespace weft::gen
