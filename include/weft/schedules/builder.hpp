// Pipeline-level actions (a chunk's forward, its fused or split backward, a forward overlapped
// with a backward) appended to a schedule as slots. Generators speak in these actions; the
// builder expands each into the chunk's chain of layer ops, so every generator gets layers and
// sub-stages for free (and explicit transfers from `with_transfers`, transfers.hpp).
#pragma once

#include <cstdint>

#include <weft/core/buffer.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedules/stage_ops.hpp>
#include <weft/schedules/transfers.hpp>

namespace weft::gen {

class pipeline_builder {
 public:
  explicit constexpr pipeline_builder(const model_desc& m) : s_(m) {
    const layer_kinds lk = layer_kinds_of(m.stages);
    chains_.resize(static_cast<std::size_t>(m.chunks() * phase_count));
    for (int c = 0; c < m.chunks(); ++c)
      for (int p = 0; p < phase_count; ++p)
        chains_[index(c, static_cast<phase>(p))] = chain_of(m, lk, static_cast<phase>(p), c);
  }

  constexpr void reserve(std::size_t ops) { s_.reserve(ops, ops); }
  constexpr void add_rank() { s_.add_rank(); }

  /// The forward of (mb, chunk).
  constexpr void forward(int mb, int chunk) { append_chain(s_, chain_for(chunk, phase::F), mb); }
  /// The fused backward (B) of (mb, chunk).
  constexpr void backward(int mb, int chunk) { append_chain(s_, chain_for(chunk, phase::B), mb); }
  /// The input-gradient half (dX, PyTorch's I) of a split backward.
  constexpr void backward_input(int mb, int chunk) {
    append_chain(s_, chain_for(chunk, phase::dX), mb);
  }
  /// The weight-gradient half (dW, PyTorch's W) of a split backward.
  constexpr void backward_weight(int mb, int chunk) {
    append_chain(s_, chain_for(chunk, phase::dW), mb);
  }

  /// The forward of (fmb, fchunk) issued together with the fused backward of (bmb, bchunk), op by
  /// op: slot j holds the j-th op of each chain. For MoE layers that is DeepSeek's pairing
  /// (attn-F with combine-B, dispatch-F with mlp-B, ...). The backward op takes lane 1 when it
  /// shares a stream class with its partner, so the pair never fights for one stream.
  constexpr void overlapped(int fmb, int fchunk, int bmb, int bchunk) {
    const buffer<op>& f = chain_for(fchunk, phase::F).ops;
    const buffer<op>& b = chain_for(bchunk, phase::B).ops;
    const std::size_t n = f.size() > b.size() ? f.size() : b.size();
    for (std::size_t j = 0; j < n; ++j) {
      if (j < f.size()) {
        op o = f[j];
        o.mb = static_cast<std::uint16_t>(fmb);
        s_.push(o);
      }
      if (j < b.size()) {
        op o = b[j];
        o.mb = static_cast<std::uint16_t>(bmb);
        if (j < f.size() && stream_of(o.k) == stream_of(f[j].k)) o.lane = 1;
        s_.push(o);
      }
      s_.close_slot();
    }
  }

  constexpr const model_desc& model() const noexcept { return s_.model; }
  constexpr schedule take() { return static_cast<schedule&&>(s_); }

 private:
  constexpr std::size_t index(int chunk, phase ph) const noexcept {
    return static_cast<std::size_t>(chunk * phase_count + static_cast<int>(ph));
  }
  constexpr const chain& chain_for(int chunk, phase ph) const noexcept {
    return chains_[index(chunk, ph)];
  }
  schedule s_;
  buffer<chain> chains_;
};

/// The schedule built so far, lowered to explicit transfers when `transfers` asks for them.
constexpr schedule finish(pipeline_builder& b, bool transfers) {
  schedule s = b.take();
  if (transfers) return with_transfers(s);
  return s;
}

}  // namespace weft::gen
