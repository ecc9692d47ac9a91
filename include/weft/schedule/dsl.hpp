// The hand-written form: `slots(attn(F, mb{1}) | combine(B, mb{0}), ...)`, one rank's ordered
// slots, each slot the ops issued together. Fixed-size, so a hand-written schedule is a
// `constexpr` variable; it converts to `schedule` for checking and running.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <weft/core/op.hpp>
#include <weft/schedule/schedule.hpp>

namespace weft {

/// Ops issued at once on distinct streams.
template <std::size_t N>
struct slot_ops {
  std::array<op, N> ops;
};

template <class T>
inline constexpr bool is_op_like = std::is_convertible_v<T, op> && !std::is_same_v<T, op>;

template <kind_tag K1, phase_tag P1, kind_tag K2, phase_tag P2>
constexpr slot_ops<2> operator|(typed_op<K1, P1> a, typed_op<K2, P2> b) noexcept {
  return {{a.value, b.value}};
}
template <std::size_t N, kind_tag K, phase_tag P>
constexpr slot_ops<N + 1> operator|(const slot_ops<N>& a, typed_op<K, P> b) noexcept {
  slot_ops<N + 1> r{};
  for (std::size_t i = 0; i < N; ++i) r.ops[i] = a.ops[i];
  r.ops[N] = b.value;
  return r;
}

/// Ranks x slots x ops, fixed at compile time. `model` is inferred unless one is attached.
template <std::size_t Ranks, std::size_t Slots, std::size_t Ops>
struct fixed_schedule {
  std::array<op, Ops> ops{};
  std::array<std::uint32_t, Slots> slot_end{};
  std::array<std::uint32_t, Ranks> rank_end{};
  model_desc model{};
  bool has_model = false;

  constexpr operator schedule() const {  // NOLINT: checking and running take `schedule`
    schedule s;
    s.ops.assign(ops.begin(), ops.end());
    s.slot_end.assign(slot_end.begin(), slot_end.end());
    for (std::size_t r = 0; r < Ranks; ++r) s.rank_begin.push_back(r == 0 ? 0 : rank_end[r - 1]);
    s.model = has_model ? model : infer_model(s);
    return s;
  }
};

namespace detail {
template <class T>
struct slot_size : std::integral_constant<std::size_t, 1> {};
template <std::size_t N>
struct slot_size<slot_ops<N>> : std::integral_constant<std::size_t, N> {};

template <class T>
inline constexpr bool is_slot_arg = is_op_like<T> || !std::is_same_v<slot_size<T>, slot_size<int>>;

template <std::size_t N>
constexpr const std::array<op, N>& slot_array(const slot_ops<N>& s) noexcept {
  return s.ops;
}
template <class T>
requires is_op_like<T>
constexpr std::array<op, 1> slot_array(const T& o) noexcept { return {op(o)}; }
}  // namespace detail

/// One rank's slots, in order.
template <class... Slots>
requires(sizeof...(Slots) > 0 &&
         (detail::is_slot_arg<Slots> && ...)) constexpr auto slots(const Slots&... ss) noexcept {
  fixed_schedule<1, sizeof...(Slots), (detail::slot_size<Slots>::value + ...)> r{};
  std::size_t n = 0, k = 0;
  const auto append = [&](const auto& arr) {
    for (const op& o : arr) r.ops[n++] = o;
    r.slot_end[k++] = static_cast<std::uint32_t>(n);
  };
  (append(detail::slot_array(ss)), ...);
  r.rank_end[0] = static_cast<std::uint32_t>(k);
  return r;
}

/// Several ranks, each given by `slots(...)`, rank 0 first.
template <std::size_t... S, std::size_t... O>
constexpr auto ranks(const fixed_schedule<1, S, O>&... rs) noexcept {
  fixed_schedule<sizeof...(rs), (S + ...), (O + ...)> r{};
  std::size_t n = 0, k = 0, rank = 0;
  const auto append = [&](const auto& one) {
    const std::uint32_t base = static_cast<std::uint32_t>(n);
    for (const op& o : one.ops) r.ops[n++] = o;
    for (std::uint32_t e : one.slot_end) r.slot_end[k++] = base + e;
    r.rank_end[rank++] = static_cast<std::uint32_t>(k);
  };
  (append(rs), ...);
  return r;
}

/// Attaches a model description instead of the inferred one.
template <std::size_t R, std::size_t S, std::size_t O>
constexpr fixed_schedule<R, S, O> with_model(fixed_schedule<R, S, O> f,
                                             const model_desc& m) noexcept {
  f.model = m;
  f.has_model = true;
  return f;
}
constexpr schedule with_model(schedule s, const model_desc& m) {
  s.model = m;
  return s;
}

}  // namespace weft
