// Every generator by name, with the shape of pipeline it makes: the one list the tool's choices,
// the search's starting points and the docs' tables read. A new generator is its header and a
// row here.
#pragma once

#include <string>
#include <string_view>

#include <weft/core/error.hpp>
#include <weft/generators/controllable_memory.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/interleaved_zero_bubble.hpp>
#include <weft/generators/looped_bfs.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/params.hpp>
#include <weft/generators/zero_bubble_v.hpp>

namespace weft {

/// A generator's arguments under one name: `pipeline_params`, and what only some generators
/// read (model chunks per rank and the extra warm-up micro-batch: the interleaved schedule's).
struct generator_args : pipeline_params {
  int chunks = 2;             ///< model chunks per rank, where the generator takes them
  bool extra_warmup = false;  ///< one more warm-up micro-batch, where the generator has it
  bool nanopipe = false;      ///< NanoPipe's deferred dW, where the generator has it
};

/// A generator and the pipeline it makes.
struct generator_info {
  std::string_view name;     ///< as the tool spells it (`--schedule`)
  std::string_view summary;  ///< one line, for help and tables
  placement place;           ///< where its chunks sit
  bool bidirectional;        ///< micro-batches from both ends (DualPipe)
  /// Chunks per rank it makes: a fixed count, or 0 when it takes `generator_args::chunks`.
  int chunks_per_rank;
  bool has_extra_warmup;  ///< reads `generator_args::extra_warmup`
  bool has_nanopipe;      ///< reads `generator_args::nanopipe`
  bool splits_backward;   ///< emits dX and dW rather than fused backwards
  schedule (*make)(const generator_args&);
  /// Does it take a chunk count (`generator_args::chunks`, the tool's `--chunks`)?
  constexpr bool takes_chunk_count() const noexcept { return chunks_per_rank == 0; }
};

namespace gen {
/// The arguments of the schedules that take chunks per rank.
constexpr interleaved_params chunked(const generator_args& a) {
  interleaved_params p = with_chunks(a, a.chunks);
  p.extra_warmup = a.extra_warmup;
  p.nanopipe = a.nanopipe;
  return p;
}
}  // namespace gen

/// Every generator, in the order the tool lists them.
inline constexpr generator_info generators[] = {
    {"gpipe", "every forward, then every backward", placement::loop, false, 1, false, false, false,
     [](const generator_args& a) { return gpipe(a); }},
    {"1f1b", "one forward, one backward (PipeDream-flush, Megatron's default)", placement::loop,
     false, 1, false, false, false, [](const generator_args& a) { return one_f_one_b(a); }},
    {"interleaved", "Megatron's virtual pipeline: several chunks per rank in a loop",
     placement::loop, false, 0, true, true, false,
     [](const generator_args& a) { return interleaved(gen::chunked(a)); }},
    {"looped-bfs", "PyTorch's looped BFS: each chunk takes every micro-batch before the next",
     placement::loop, false, 0, false, false, false,
     [](const generator_args& a) { return looped_bfs(gen::chunked(a)); }},
    {"interleaved-zb", "PyTorch's interleaved zero bubble (ZB1P): interleaved with dX and dW",
     placement::loop, false, 0, false, false, true,
     [](const generator_args& a) { return interleaved_zero_bubble(gen::chunked(a)); }},
    {"zb-h1", "1F1B with backwards split into dX and dW, dW deferred into the cool-down",
     placement::loop, false, 1, false, false, true,
     [](const generator_args& a) { return zb_h1(a); }},
    {"zb-v", "zero bubble on a V: two chunks per rank, dX and dW", placement::vee, false, 2, false,
     false, true, [](const generator_args& a) { return zb_v(a); }},
    {"v-half", "a V with half of 1F1B's activation memory (controllable-memory V-Half)",
     placement::vee, false, 2, false, false, true,
     [](const generator_args& a) { return v_half(a); }},
    {"v-min", "a V with the least activation memory (controllable-memory V-Min)", placement::vee,
     false, 2, false, false, true, [](const generator_args& a) { return v_min(a); }},
    {"dualpipe", "DeepSeek's DualPipe: micro-batches from both ends, forward/backward pairs",
     placement::vee, true, 2, false, false, true,
     [](const generator_args& a) { return dualpipe(a); }},
    {"dualpipev", "DualPipe folded onto a V: half the devices' parameters", placement::vee, false,
     2, false, false, true, [](const generator_args& a) { return dualpipev(a); }},
};

/// The generator named `name`, or null.
constexpr const generator_info* find_generator(std::string_view name) noexcept {
  for (const generator_info& g : generators)
    if (g.name == name) return &g;
  return nullptr;
}

/// The schedule generator `name` makes from `a`; `config_error` for a name no generator has (and
/// the generator's own for arguments it refuses).
inline schedule generate(std::string_view name, const generator_args& a) {
  const generator_info* g = find_generator(name);
  if (!g) {
    std::string known;
    for (const generator_info& x : generators)
      known += (known.empty() ? "" : ", ") + std::string(x.name);
    throw config_error("weft: no generator named '" + excerpt(name) + "' (there are " + known +
                       ")");
  }
  if (a.nanopipe && !g->has_nanopipe)
    throw config_error("weft: " + std::string(name) +
                       ": nanopipe is MindSpeed's change to the interleaved schedule (at one "
                       "chunk per rank too: --schedule interleaved --chunks 1)");
  return g->make(a);
}

}  // namespace weft
