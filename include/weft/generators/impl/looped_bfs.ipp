// The generators of looped_bfs.hpp at run time: inline in header-only builds, compiled once into
// `weft::compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <weft/generators/looped_bfs.hpp>

namespace weft::detail {

WEFT_DECL schedule looped_bfs_at_run_time(const interleaved_params& p) {
  return gen::build_looped_bfs(p);
}

}  // namespace weft::detail
