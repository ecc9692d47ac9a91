// The parts of a layer that selective recomputation runs again, as Megatron-LM names them
// (`--recompute-modules`, with `--recompute-granularity selective`; Megatron's default is
// attention's core alone). A layer's kernels carry the part they belong to (perf/layer.hpp), so
// that recomputing a part re-prices exactly its kernels; plan/memory.hpp drops what the part
// no longer keeps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::perf {

enum class recompute_module : std::uint8_t {
  none,         ///< a kernel no module recomputes
  core_attn,    ///< attention's core: the scores, softmax, dropout and weighted sum
  layernorm,    ///< the attention's and the MLP's input norms
  mla_up_proj,  ///< multi-latent attention's up projections and their rotary embeddings
  moe_act,      ///< the experts' activation function
  mlp,          ///< a dense layer's whole MLP
};

/// As Megatron spells them, in the enum's order (`none` has no name).
inline constexpr std::array<std::string_view, 6> recompute_module_names{
    "", "core_attn", "layernorm", "mla_up_proj", "moe_act", "mlp"};

/// A set of modules, one bit each.
using recompute_set = std::uint8_t;
constexpr recompute_set bit(recompute_module m) noexcept {
  return static_cast<recompute_set>(1u << static_cast<unsigned>(m));
}
constexpr bool has(recompute_set s, recompute_module m) noexcept { return (s & bit(m)) != 0; }

/// Megatron's modules when none are named: attention's core.
inline constexpr recompute_set default_recompute_modules = bit(recompute_module::core_attn);

/// The module called `name`, or none.
constexpr std::optional<recompute_module> recompute_module_named(std::string_view name) noexcept {
  for (std::size_t i = 1; i < recompute_module_names.size(); ++i)
    if (recompute_module_names[i] == name) return static_cast<recompute_module>(i);
  return std::nullopt;
}

}  // namespace weft::perf
