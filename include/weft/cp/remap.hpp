// Sequence re-mapping (MindSpeed's adaptive-cp note): tokens whose attention rows look alike are
// grouped so that a sparse mask becomes locally dense and whole (query slice, key slice) blocks
// fall empty. PCA of the coarse mask's rows (a randomised range finder: two passes over the
// non-zeros), k-means++ for every cluster count in a range, each result scored on the cp x cp grid:
// fewest tasks, then the most even work per rank. The original order stays unless a result is
// strictly better.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <weft/config.hpp>
#include <weft/cp/mask.hpp>

namespace weft::cp {

struct remap_options {
  int components = 10;      ///< PCA components kept (K)
  int min_clusters = 0;     ///< 0: cp
  int max_clusters = 0;     ///< 0: 2 cp
  int max_iterations = 50;  ///< k-means (Lloyd) iterations per cluster count, at most
  std::uint64_t seed = 20241;
};

/// How good a grid is: fewer tasks first, then less spread of work between ranks.
struct grid_score {
  int tasks = 0;
  double deviation = 0;  ///< standard deviation over ranks of tasks in the rank's row and column
  friend bool operator<(const grid_score& a, const grid_score& b) {
    return a.tasks != b.tasks ? a.tasks < b.tasks : a.deviation < b.deviation - 1e-12;
  }
};

inline grid_score score(const dense_mask& g) {
  const int cp = g.size();
  grid_score s;
  std::vector<int> per(static_cast<std::size_t>(cp), 0);
  for (int i = 0; i < cp; ++i)
    for (int j = 0; j < cp; ++j)
      if (g(i, j)) {
        ++s.tasks;
        ++per[static_cast<std::size_t>(i)];
        if (i != j) ++per[static_cast<std::size_t>(j)];
      }
  const double mean = std::accumulate(per.begin(), per.end(), 0.0) / cp;
  for (const int c : per) s.deviation += (c - mean) * (c - mean);
  s.deviation = std::sqrt(s.deviation / cp);
  return s;
}

struct remap_result {
  std::vector<int> order;  ///< order[p]: the (coarse) token at position p
  grid_score before, after;
  int clusters = 0;  ///< the cluster count chosen; 0 when the original order was kept
};

/// Re-maps the tokens of a (coarse) mask for `cp` ranks. Deterministic for a given seed.
/// The PCA and k-means behind it are Eigen's (impl/remap.ipp): compiled once into
/// `weft::nn_compiled` with WEFT_SEPARATE_COMPILATION, so a file that re-maps does not
/// instantiate the SVD again.
WEFT_DECL remap_result remap(const dense_mask& coarse, int cp, remap_options o = {});

}  // namespace weft::cp

#ifndef WEFT_SEPARATE_COMPILATION
#include <weft/cp/impl/remap.ipp>
#endif
