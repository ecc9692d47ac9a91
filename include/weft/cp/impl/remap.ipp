// The sequence re-mapping of remap.hpp: PCA and k-means over Eigen. Inline in header-only
// builds, compiled once into `weft::nn_compiled` with WEFT_SEPARATE_COMPILATION (config.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <weft/core/error.hpp>
#include <weft/cp/mask.hpp>
#include <weft/cp/remap.hpp>

namespace weft::cp {

namespace detail {

/// The mask's rows as bitsets.
struct mask_rows {
  int n = 0, words = 0;
  std::vector<std::uint64_t> bits;  // n x words
  explicit mask_rows(const dense_mask& m) : n(m.size()), words((m.size() + 63) / 64) {
    bits.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(words), 0);
    for (int q = 0; q < n; ++q) {
      const auto row = m.row(q);
      std::uint64_t* out = &bits[static_cast<std::size_t>(q) * static_cast<std::size_t>(words)];
      for (int k = 0; k < n; ++k)
        out[k / 64] |= static_cast<std::uint64_t>(row[static_cast<std::size_t>(k)]) << (k % 64);
    }
  }
};

/// The grid of an order, from bitsets: n x cp x words word operations.
inline dense_mask fast_grid(const mask_rows& r, const std::vector<int>& order, int cp) {
  const int per = r.n / cp;
  std::vector<int> slice(static_cast<std::size_t>(r.n));
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(cp * r.words), 0);
  for (int p = 0; p < r.n; ++p) {
    const int t = order[static_cast<std::size_t>(p)];
    slice[static_cast<std::size_t>(t)] = p / per;
    keys[static_cast<std::size_t>((p / per) * r.words + t / 64)] |= std::uint64_t{1} << (t % 64);
  }
  dense_mask g(cp);
  for (int q = 0; q < r.n; ++q) {
    const int i = slice[static_cast<std::size_t>(q)];
    const std::uint64_t* row = &r.bits[static_cast<std::size_t>(q * r.words)];
    for (int j = 0; j < cp; ++j) {
      if (g(i, j)) continue;
      const std::uint64_t* key = &keys[static_cast<std::size_t>(j * r.words)];
      for (int w = 0; w < r.words; ++w)
        if (row[w] & key[w]) {
          g.set(i, j);
          break;
        }
    }
  }
  return g;
}

/// The rows' coordinates on the top `k` principal components: a randomised range finder
/// (Halko et al.), two products of the mask with thin matrices, the centring folded in as a
/// rank-one correction.
inline Eigen::MatrixXf principal_scores(const dense_mask& m, int k, std::uint64_t seed) {
  using mat = Eigen::MatrixXf;
  const int n = m.size(), l = std::min(n, k + 5);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x(n, n);
  for (int q = 0; q < n; ++q) {  // row by row: contiguous writes
    const auto row = m.row(q);
    std::copy(row.begin(), row.end(), x.row(q).data());
  }
  const Eigen::RowVectorXf mean = x.colwise().mean();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  mat omega(n, l);
  for (Eigen::Index i = 0; i < omega.size(); ++i) omega.data()[i] = normal(rng);
  mat y = x * omega;
  y.rowwise() -= mean * omega;
  const mat basis = Eigen::HouseholderQR<mat>(y).householderQ() * mat::Identity(n, l);
  mat b = basis.transpose() * x;  // l x n
  b -= (basis.transpose() * Eigen::VectorXf::Ones(n)) * mean;
  Eigen::JacobiSVD<mat> svd(b, Eigen::ComputeThinU);
  const int keep = std::min<int>(k, static_cast<int>(svd.singularValues().size()));
  return basis * svd.matrixU().leftCols(keep) * svd.singularValues().head(keep).asDiagonal();
}

/// k-means on the rows of `x` (n x d, row-major copy taken) with k-means++ seeding from `rng`;
/// returns each point's cluster.
inline std::vector<int> kmeans(const Eigen::MatrixXf& points, int k, int max_iterations,
                               std::mt19937_64& rng) {
  const auto n = static_cast<int>(points.rows()), d = static_cast<int>(points.cols());
  std::vector<float> x(static_cast<std::size_t>(n * d)), centre(static_cast<std::size_t>(k * d));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) x[static_cast<std::size_t>(i * d + j)] = points(i, j);
  const auto dist = [&](int i, int c) {
    const float* a = &x[static_cast<std::size_t>(i * d)];
    const float* b = &centre[static_cast<std::size_t>(c * d)];
    float s = 0;
    for (int j = 0; j < d; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
    return s;
  };
  const auto set_centre = [&](int c, int i) {
    std::copy_n(&x[static_cast<std::size_t>(i * d)], d, &centre[static_cast<std::size_t>(c * d)]);
  };
  std::vector<float> d2(static_cast<std::size_t>(n), std::numeric_limits<float>::max());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int pick = static_cast<int>(u(rng) * n) % n;
  for (int c = 0; c < k; ++c) {
    set_centre(c, pick);
    double total = 0;
    for (int i = 0; i < n; ++i) {
      d2[static_cast<std::size_t>(i)] = std::min(d2[static_cast<std::size_t>(i)], dist(i, c));
      total += d2[static_cast<std::size_t>(i)];
    }
    if (total <= 0) {  // fewer distinct points than clusters: reuse the first ones
      pick = (c + 1) % n;
      continue;
    }
    double target = u(rng) * total;
    pick = n - 1;
    for (int i = 0; i < n; ++i)
      if ((target -= d2[static_cast<std::size_t>(i)]) < 0) {
        pick = i;
        break;
      }
  }
  std::vector<int> label(static_cast<std::size_t>(n), -1), size(static_cast<std::size_t>(k));
  std::vector<double> sum(static_cast<std::size_t>(k * d));
  // Distances as |x|^2 - 2 x.c + |c|^2: one product of thin matrices per iteration.
  using rowmat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const rowmat> xs(x.data(), n, d);
  for (int it = 0; it < max_iterations; ++it) {
    const Eigen::Map<const rowmat> cs(centre.data(), k, d);
    const Eigen::VectorXf c2 = cs.rowwise().squaredNorm();
    const rowmat dots = xs * cs.transpose();  // n x k
    bool moved = false;
    for (int i = 0; i < n; ++i) {
      int best = 0;
      float best_d = c2[0] - 2 * dots(i, 0);
      for (int c = 1; c < k; ++c)
        if (const float e = c2[c] - 2 * dots(i, c); e < best_d) {
          best_d = e;
          best = c;
        }
      moved = moved || label[static_cast<std::size_t>(i)] != best;
      label[static_cast<std::size_t>(i)] = best;
    }
    if (!moved) break;
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(size.begin(), size.end(), 0);
    for (int i = 0; i < n; ++i) {
      const int c = label[static_cast<std::size_t>(i)];
      ++size[static_cast<std::size_t>(c)];
      for (int j = 0; j < d; ++j)
        sum[static_cast<std::size_t>(c * d + j)] += x[static_cast<std::size_t>(i * d + j)];
    }
    for (int c = 0; c < k; ++c)
      if (size[static_cast<std::size_t>(c)] > 0)
        for (int j = 0; j < d; ++j)
          centre[static_cast<std::size_t>(c * d + j)] = static_cast<float>(
              sum[static_cast<std::size_t>(c * d + j)] / size[static_cast<std::size_t>(c)]);
  }
  return label;
}

/// Tokens grouped by cluster, clusters in the order of their mean position, each cluster's
/// tokens in their original order: neighbours stay neighbours where they can.
inline std::vector<int> grouped(const std::vector<int>& label, int k) {
  std::vector<double> mean(static_cast<std::size_t>(k), 0.0);
  std::vector<int> size(static_cast<std::size_t>(k), 0);
  for (std::size_t t = 0; t < label.size(); ++t) {
    mean[static_cast<std::size_t>(label[t])] += static_cast<double>(t);
    ++size[static_cast<std::size_t>(label[t])];
  }
  std::vector<int> rank(static_cast<std::size_t>(k));
  std::iota(rank.begin(), rank.end(), 0);
  std::stable_sort(rank.begin(), rank.end(), [&](int a, int b) {
    const auto ma = size[static_cast<std::size_t>(a)]
                        ? mean[static_cast<std::size_t>(a)] / size[static_cast<std::size_t>(a)]
                        : 0.0;
    const auto mb = size[static_cast<std::size_t>(b)]
                        ? mean[static_cast<std::size_t>(b)] / size[static_cast<std::size_t>(b)]
                        : 0.0;
    return ma < mb;
  });
  std::vector<int> position(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i)
    position[static_cast<std::size_t>(rank[static_cast<std::size_t>(i)])] = i;
  std::vector<int> order(label.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return position[static_cast<std::size_t>(label[static_cast<std::size_t>(a)])] <
           position[static_cast<std::size_t>(label[static_cast<std::size_t>(b)])];
  });
  return order;
}

}  // namespace detail

WEFT_DECL remap_result remap(const dense_mask& coarse, int cp, remap_options o) {
  const int n = coarse.size();
  if (cp < 1 || n % cp != 0)
    throw config_error("weft: remap: " + std::to_string(n) + " tokens do not split into " +
                       std::to_string(cp) + " equal slices");
  const int lo = o.min_clusters > 0 ? o.min_clusters : cp;
  const int hi = std::min(n, o.max_clusters > 0 ? o.max_clusters : 2 * cp);
  if (lo > hi)
    throw config_error("weft: remap: the cluster range [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "] is empty");
  if (o.components < 1) throw config_error("weft: remap: keep at least one component");
  const detail::mask_rows rows(coarse);
  remap_result best;
  best.order = identity_order(n);
  best.before = best.after = score(detail::fast_grid(rows, best.order, cp));
  if (best.before.tasks == 0) return best;
  const Eigen::MatrixXf x = detail::principal_scores(coarse, o.components, o.seed);
  std::mt19937_64 rng(o.seed);
  for (int k = lo; k <= hi; ++k) {
    const std::vector<int> order = detail::grouped(detail::kmeans(x, k, o.max_iterations, rng), k);
    const grid_score s = score(detail::fast_grid(rows, order, cp));
    if (s < best.after) {
      best.after = s;
      best.order = order;
      best.clusters = k;
    }
  }
  return best;
}
}  // namespace weft::cp
