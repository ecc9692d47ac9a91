// weft's quick start: prove two schedules legal at compile time and print their slots.
#include <iostream>

#include <weft/weft.hpp>

using namespace weft;

// DeepSeek's forward/backward pairing for one MoE layer: forward of micro-batch 1 overlapped with
// backward of micro-batch 0, one compute op and one comm op per slot (the figure in MindSpeed's
// moe-fb-overlap note).
constexpr auto layer_fb =
    slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}) | dispatch(F, mb{1}),
          mlp(F, mb{1}) | dispatch(B, mb{0}), attn(B, mb{0}) | combine(F, mb{1}));
// A fragment of the steady phase, verified against what it assumes ran before it.
static_assert(proven<diagnose(layer_fb, assuming(done(F, mb{0})))>);

// A 1F1B pipeline on 4 ranks, 8 micro-batches, each chunk 2 MoE layers of four sub-stages.
constexpr one_f_one_b_params pipeline{
    .ranks = 4, .micro = 8, .layers = 2, .stages = stage_set::moe()};
static_assert(proven<diagnose(one_f_one_b(pipeline))>);

// DualPipeV on 4 ranks with DeepSeek's fb-overlap inside every forward/backward pair, shared
// experts hiding the all-to-alls of warm-up and cool-down, explicit pipeline transfers.
constexpr pipeline_params dual{.ranks = 4,
                               .micro = 8,
                               .stages = stage_set::moe_with_shared(),
                               .transfers = true,
                               .overlap = overlap_options::all()};
static_assert(verify(dualpipev(dual)));

int main() {
  std::cout << "DeepSeek fb-overlap layer (proven at compile time):\n";
  print_slots(std::cout, layer_fb);

  const schedule pp = one_f_one_b({.ranks = 4, .micro = 8});
  std::cout << "\n1F1B, 4 ranks x 8 micro-batches (proven at compile time with 2 MoE layers per "
               "chunk):\n";
  print_slots(std::cout, pp);
  const auto peak = peak_live_activations(pp);
  std::cout << "\npeak live activations per rank:";
  for (int p : peak) std::cout << ' ' << p;
  std::cout << '\n' << check(pp);

  std::cout << "\nDualPipeV, 4 ranks x 10 micro-batches, as PyTorch writes it:\n";
  write_pytorch_csv(std::cout, dualpipev({.ranks = 4, .micro = 10}));
  const schedule moe = dualpipev(dual);
  std::cout << "\nthe same with MoE fb-overlap (4 ranks x 8): " << moe.ops.size() << " ops in "
            << moe.slot_end.size() << " slots; " << check(moe);
}
