#include <doctest/doctest.h>

#include <type_traits>

#include <weft/core/binding.hpp>
#include <weft/core/paged.hpp>
#include <weft/schedule/dsl.hpp>

using namespace weft;

TEST_CASE("each kind knows its stream class") {
  for (kind k : {kind::block, kind::attn, kind::mlp, kind::shared})
    CHECK(stream_of(k) == stream_class::compute);
  for (kind k : {kind::dispatch, kind::combine, kind::send, kind::recv, kind::all_reduce,
                 kind::all_gather, kind::reduce_scatter})
    CHECK(stream_of(k) == stream_class::comm);
  static_assert(kinds::attn::stream == stream_class::compute);
  static_assert(kinds::dispatch::stream == stream_class::comm);
  CHECK(has_weights(kind::mlp));
  CHECK_FALSE(has_weights(kind::combine));
}

TEST_CASE("kinds and phases are types with values") {
  static_assert(kind_tag<kinds::mlp> && !kind_tag<int>);
  static_assert(phase_tag<phases::backward_dw> && !phase_tag<kinds::mlp>);
  static_assert(std::is_same_v<decltype(F), const phases::forward>);
  CHECK(name_of(kind::reduce_scatter) == "reduce_scatter");
  CHECK(name_of(phase::dW) == "dW");
}

TEST_CASE("stage calls build ops with fields in any order") {
  constexpr auto a = mlp(dX, layer{3}, mb{7}, split{1}, chunk{2}, lane{1});
  static_assert(std::is_same_v<decltype(a), const typed_op<kinds::mlp, phases::backward_dx>>);
  constexpr op o = a;
  CHECK(o == make_op(kind::mlp, phase::dX, 7, 2, 3, 1, 1));
  CHECK(o.same_work(make_op(kind::mlp, phase::dX, 7, 2, 3, 1, 0)));
  CHECK_FALSE(o.same_work(make_op(kind::mlp, phase::dW, 7, 2, 3, 1, 1)));
  CHECK(stream_of(o) == stream_id{stream_class::compute, 1});
}

TEST_CASE("slots and ranks lay ops out flat") {
  constexpr auto r0 = slots(attn(F, mb{1}) | combine(B, mb{0}), mlp(B, mb{0}));
  static_assert(r0.ops.size() == 3 && r0.slot_end.size() == 2);
  constexpr auto both = ranks(r0, slots(block(F, mb{0}, chunk{1})));
  const schedule s = both;
  REQUIRE(s.ranks() == 2);
  CHECK(s.slots(0) == 2);
  CHECK(s.slots(1) == 1);
  CHECK(s.slot(0, 0).size() == 2);
  CHECK(s.slot(0, 0)[1] == op(combine(B, mb{0})));
  CHECK(s.slot(1, 0)[0].chunk == 1);
  CHECK(s.rank_ops(0).size() == 3);
}

TEST_CASE("a hand-written schedule infers the smallest model it can mean") {
  const schedule s = slots(attn(F, mb{1}, layer{1}) | combine(B, mb{0}), mlp(B, mb{0}));
  CHECK(s.model.micro == 2);
  CHECK(s.model.layers == 2);
  CHECK(s.model.ranks == 1);
  CHECK(s.model.stages == stage_set{}.with(kind::attn).with(kind::mlp).with(kind::combine));
  const schedule b = slots(block(F, mb{0}));
  CHECK(b.model.stages == stage_set::whole_block());
}

TEST_CASE("uses() lists the (kind, phase) pairs of a schedule") {
  constexpr auto s = slots(attn(F, mb{0}), attn(B, mb{0}) | dispatch(F, mb{1}));
  constexpr kind_phase_set u = uses(s);
  static_assert(u.has(kind::attn, phase::F) && u.has(kind::attn, phase::B));
  static_assert(u.has(kind::dispatch, phase::F) && !u.has(kind::dispatch, phase::B));
  CHECK(u.bits != 0);
}

struct fwd_only {
  void operator()(kinds::block, phases::forward, kernel_call&) {}
};
TEST_CASE("binds_all accepts a model with every kernel a schedule uses") {
  static_assert(has_kernel<fwd_only, kinds::block, phases::forward>);
  static_assert(!has_kernel<fwd_only, kinds::block, phases::backward>);
  static_assert(binds_all<fwd_only, uses(slots(block(F, mb{0}), block(F, mb{1})))>);
  CHECK(true);
}

struct counting {
  int calls = 0;
  void operator()(kinds::attn, phases::forward, kernel_call& c) { calls += 1 + c.rank; }
};
TEST_CASE("at run time: binds answers per (kind, phase), invoke_kernel calls or refuses by name") {
  static_assert(binds<counting>(kind::attn, phase::F));
  static_assert(!binds<counting>(kind::attn, phase::B));
  static_assert(!binds<counting>(kind::mlp, phase::F));
  counting m;
  kernel_call call{make_op(kind::attn, phase::F, 0), 2};
  invoke_kernel(m, call.op, call);
  CHECK(m.calls == 3);
  call.op = make_op(kind::mlp, phase::dW, 0);
  CHECK_THROWS_WITH_AS(invoke_kernel(m, call.op, call),
                       "weft: model binding: the model has no kernel for mlp dW", config_error);
  CHECK(m.calls == 3);
}

namespace {
// Across several pages: growth keeps what was written, copies are equal, zeros are zeros.
constexpr bool paged_keeps_its_elements(std::uint32_t n) {
  weft::paged<std::uint32_t> a;
  for (std::uint32_t i = 0; i < n; ++i) a.push_back(3 * i + 1);
  weft::paged<std::uint32_t> b = a;
  b.resize_for_overwrite(n + 5);
  for (std::uint32_t i = n; i < n + 5; ++i) b[i] = 7;
  weft::paged<std::uint8_t> z;
  z.assign_zeros(n);
  bool ok = a.size() == n && b.size() == n + 5 && b.back() == 7 && z.size() == n;
  for (std::uint32_t i = 0; i < n; ++i)
    ok = ok && a[i] == 3 * i + 1 && b[i] == a[i] && z[i] == 0 &&
         a.pages()[i >> weft::paged<std::uint32_t>::page_shift]
                 .v[i & weft::paged<std::uint32_t>::page_mask] == a[i];
  return ok;
}
}  // namespace

TEST_CASE("paged arrays keep their elements across pages, at compile time and at run time") {
  static_assert(paged_keeps_its_elements(2500));  // three pages of 1024
  CHECK(paged_keeps_its_elements(5000));
}
