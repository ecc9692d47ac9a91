// The in-process communication backend: point-to-point matching, collectives over groups,
// modelled delays, and clear errors for mismatched calls.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include <weft/rt/await.hpp>
#include <weft/rt/inproc.hpp>

using namespace weft;
using namespace weft::rt;
using namespace std::chrono_literals;

namespace {
/// Runs `fn(rank)` on one thread per rank.
template <class Fn>
void on_every_rank(int ranks, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}
}  // namespace

TEST_CASE("point-to-point: the k-th send meets the k-th receive of its channel") {
  inproc_world w(2);
  std::vector<float> a{1, 2, 3}, b{4, 5, 6}, got_a(3), got_b(3), got_tagged(3);
  // Receives posted before the sends, and a tagged pair in between that must not mix.
  event r1 = w.at(1).irecv(got_a, 0, 0);
  event r2 = w.at(1).irecv(got_b, 0, 0);
  event s1 = w.at(0).isend(a, 1, 0);
  event st = w.at(0).isend(b, 1, 7);
  event s2 = w.at(0).isend(b, 1, 0);
  event rt = w.at(1).irecv(got_tagged, 0, 7);
  for (const event& e : {r1, r2, s1, s2, st, rt}) e.wait();
  CHECK(got_a == a);
  CHECK(got_b == b);
  CHECK(got_tagged == b);
}

TEST_CASE("point-to-point: mismatched lengths and unknown peers are errors") {
  inproc_world w(2);
  std::vector<float> three(3), two(2);
  event r = w.at(1).irecv(two, 0, 0);
  CHECK_THROWS_WITH_AS(w.at(0).isend(three, 1, 0),
                       "weft: inproc: a send of 3 fp32 values from rank 0 to rank 1 (tag 0) meets "
                       "a receive of 2 fp32",
                       config_error);
  CHECK(r.done());  // nobody waits forever
  CHECK_THROWS_WITH_AS(w.at(0).isend(three, 5, 0),
                       "weft: inproc: send to rank 5, outside a world of 2", config_error);
  CHECK_THROWS_AS(inproc_world(0), weft::config_error);
}

TEST_CASE("fp64: point-to-point and sums keep every bit; a type mismatch is an error") {
  inproc_world w(2);
  // 1 + 2^-40 is not a float: a trip through fp32 would round it to 1.
  const double fine = 1.0 + std::ldexp(1.0, -40);
  std::vector<double> a{fine, -fine, 3}, got(3);
  event r = w.at(1).irecv(got, 0, 0);
  event s = w.at(0).isend(a, 1, 0);
  r.wait();
  s.wait();
  CHECK(got == a);
  std::vector<double> x0{fine, 1}, x1{fine, 2};
  const std::vector<int> both{0, 1};
  event e0 = w.at(0).all_reduce_sum(x0, both, 0);
  event e1 = w.at(1).all_reduce_sum(x1, both, 0);
  e0.wait();
  e1.wait();
  CHECK(x0 == std::vector<double>{2 * fine, 3});
  CHECK(x1 == x0);
  std::vector<float> narrow(3);
  event rn = w.at(1).irecv(narrow, 0, 1);
  CHECK_THROWS_WITH_AS(w.at(0).isend(a, 1, 1),
                       "weft: inproc: a send of 3 fp64 values from rank 0 to rank 1 (tag 1) meets "
                       "a receive of 3 fp32",
                       config_error);
  CHECK(rn.done());
  std::vector<float> g0(2);
  std::vector<double> g1(2);
  event m0 = w.at(0).all_reduce_sum(g0, both, 0);
  CHECK_THROWS_WITH_AS(w.at(1).all_reduce_sum(g1, both, 0),
                       "weft: inproc: members of a collective pass different element types",
                       config_error);
  CHECK(m0.done());
}

TEST_CASE("collectives over a group: all-to-all(v), all-reduce, all-gather, reduce-scatter") {
  constexpr int n = 4;
  inproc_world w(n);
  const std::vector<int> group{0, 1, 2, 3}, pair{1, 3};
  std::vector<std::vector<float>> a2a_out(n), reduced(n), gathered(n), scattered(n), pair_sum(n);
  on_every_rank(n, [&](int r) {
    communicator& c = w.at(r);
    // Rank r sends j + 1 values to member j, each 100 r + j; receives r + 1 from each.
    std::vector<std::size_t> send_counts, recv_counts(n, static_cast<std::size_t>(r + 1));
    std::vector<float> send;
    for (int j = 0; j < n; ++j) {
      send_counts.push_back(static_cast<std::size_t>(j + 1));
      for (int k = 0; k <= j; ++k) send.push_back(static_cast<float>(100 * r + j));
    }
    auto& out = a2a_out[static_cast<std::size_t>(r)];
    out.resize(static_cast<std::size_t>(n * (r + 1)));
    c.all_to_all_v(send, send_counts, out, recv_counts, group, 0).wait();

    auto& red = reduced[static_cast<std::size_t>(r)];
    red = {static_cast<float>(r), 1.0f};
    c.all_reduce_sum(red, group, 0).wait();

    auto& gat = gathered[static_cast<std::size_t>(r)];
    gat.resize(n);
    const float mine = static_cast<float>(10 * r);
    c.all_gather(std::span<const float>(&mine, 1), gat, group, 0).wait();

    std::vector<float> all(n, static_cast<float>(r));
    auto& sc = scattered[static_cast<std::size_t>(r)];
    sc.resize(1);
    c.reduce_scatter_sum(all, sc, group, 0).wait();

    if (r == 1 || r == 3) {
      auto& ps = pair_sum[static_cast<std::size_t>(r)];
      ps = {static_cast<float>(r)};
      c.all_reduce_sum(ps, pair, 0).wait();
    }
    c.barrier(group, 0).wait();
  });
  for (int r = 0; r < n; ++r) {
    const auto& out = a2a_out[static_cast<std::size_t>(r)];
    std::size_t at = 0;
    for (int i = 0; i < n; ++i)
      for (int k = 0; k <= r; ++k) CHECK(out[at++] == static_cast<float>(100 * i + r));
    CHECK(reduced[static_cast<std::size_t>(r)] == std::vector<float>{6, 4});
    CHECK(gathered[static_cast<std::size_t>(r)] == std::vector<float>{0, 10, 20, 30});
    CHECK(scattered[static_cast<std::size_t>(r)][0] == 6.0f);
  }
  CHECK(pair_sum[1] == std::vector<float>{4});
  CHECK(pair_sum[3] == std::vector<float>{4});
}

TEST_CASE("collectives: a non-member and mismatched counts are errors") {
  inproc_world w(2);
  std::vector<float> x(1);
  const std::vector<int> only_zero{0};
  CHECK_THROWS_WITH_AS(w.at(1).all_reduce_sum(x, only_zero, 0),
                       "weft: inproc: rank 1 joins a collective of a group it is not in",
                       weft::config_error);
  const std::vector<int> both{0, 1};
  std::vector<float> send(2), recv(2);
  const std::vector<std::size_t> one_each{1, 1}, wrong{2, 0};
  event first = w.at(0).all_to_all_v(send, one_each, recv, one_each, both, 0);
  CHECK_THROWS_WITH_AS(w.at(1).all_to_all_v(send, wrong, recv, one_each, both, 0),
                       "weft: inproc: all-to-all member 1 sends 2 values to member 0, which "
                       "expects 1",
                       config_error);
  CHECK(first.done());
}

TEST_CASE("all-to-all counts must add up to the buffers: nothing is read or written past them") {
  // Counts of 2 + 2 over buffers of 2 would read and write past them; absurd counts must not
  // wrap their sum into agreement. Both are refused on the caller's rank, before any transfer.
  inproc_world w(2);
  const std::vector<int> both{0, 1};
  std::vector<float> send(2), recv(2);
  const std::vector<std::size_t> one_each{1, 1}, too_many{2, 2},
      wraps{std::numeric_limits<std::size_t>::max(), 3};
  for (const auto& counts : {too_many, wraps}) {
    CHECK_THROWS_WITH_AS(w.at(0).all_to_all_v(send, counts, recv, one_each, both, 0),
                         "weft: inproc: all-to-all counts do not add up to the buffers (2 values "
                         "to send, 2 to receive)",
                         weft::config_error);
    CHECK_THROWS_AS(w.at(0).all_to_all_v(send, one_each, recv, counts, both, 0),
                    weft::config_error);
  }
  const std::vector<std::size_t> one{1};
  CHECK_THROWS_WITH_AS(w.at(0).all_to_all_v(send, one, recv, one_each, both, 0),
                       "weft: inproc: all-to-all needs a count per member", weft::config_error);
  std::vector<double> recv64(2);
  CHECK_THROWS_WITH_AS(w.at(0).all_to_all_v(send, one_each, recv64, one_each, both, 0),
                       "weft: inproc: all-to-all sends and receives one element type",
                       weft::config_error);
}

TEST_CASE("channels: one group's collectives on two streams meet by channel, in any order") {
  // Member 0 issues channel 1's sum before channel 0's, member 1 the other way round: by order
  // alone they would pair the wrong calls; by channel each meets its own.
  inproc_world w(2);
  const std::vector<int> both{0, 1};
  std::vector<float> a0{1}, b0{10}, a1{2}, b1{20};
  event e0 = w.at(0).all_reduce_sum(b0, both, 1);
  event e1 = w.at(0).all_reduce_sum(a0, both, 0);
  event e2 = w.at(1).all_reduce_sum(a1, both, 0);
  event e3 = w.at(1).all_reduce_sum(b1, both, 1);
  for (event* e : {&e0, &e1, &e2, &e3}) e->wait();
  CHECK(a0 == std::vector<float>{3});
  CHECK(a1 == std::vector<float>{3});
  CHECK(b0 == std::vector<float>{30});
  CHECK(b1 == std::vector<float>{30});
}

TEST_CASE("a modelled link delays completion by alpha + n beta") {
  inproc_world w(2, delay_model{weft::link_model{.alpha = weft::seconds(0.03)}});
  std::vector<float> a(8, 1.0f), b(8);
  const auto t0 = std::chrono::steady_clock::now();
  event r = w.at(1).irecv(b, 0, 0);
  event s = w.at(0).isend(a, 1, 0);
  CHECK_FALSE(r.done());
  r.wait();
  s.wait();
  CHECK(std::chrono::steady_clock::now() - t0 >= 30ms);
  CHECK(b == a);
}

TEST_CASE("sites: a transfer between them takes the far link; a late receive its latency more") {
  // Ranks 0-1 and 2-3; inside a site 1 ms, between sites 40 ms.
  const delay_model d{.on = weft::link_model{.alpha = weft::seconds(0.001)},
                      .site_ranks = 2,
                      .far = weft::link_model{.alpha = weft::seconds(0.04)}};
  CHECK(d.p2p(64, 0, 1) == weft::seconds(0.001));
  CHECK(d.p2p(64, 1, 2) == weft::seconds(0.04));
  CHECK(d.handshake(3, 0) == weft::seconds(0.04));
  inproc_world w(4, d);
  std::vector<float> a(8, 1.0f), b(8);
  // The receive well ahead (its clear-to-send has crossed): the data leaves when the send is
  // posted, 40 ms on the far link.
  event r = w.at(2).irecv(b, 1, 0);
  std::this_thread::sleep_for(50ms);
  auto t0 = std::chrono::steady_clock::now();
  event s = w.at(1).isend(a, 2, 0);
  r.wait();
  s.wait();
  CHECK(std::chrono::steady_clock::now() - t0 >= 40ms);
  // The receive about 20 ms ahead: its clear-to-send is still the rest of 40 ms from the
  // sender (60 ms in all when the sleep is exact; measured, as a busy machine sleeps longer).
  const auto posted = std::chrono::steady_clock::now();
  r = w.at(2).irecv(b, 1, 0);
  std::this_thread::sleep_for(20ms);
  t0 = std::chrono::steady_clock::now();
  s = w.at(1).isend(a, 2, 0);
  r.wait();
  s.wait();
  const auto ahead = t0 - posted;
  if (ahead < 40ms)  // else the machine slept past the whole crossing: nothing to show
    CHECK(std::chrono::steady_clock::now() - t0 >= 40ms + (40ms - ahead));
  // The send first: the receive's clear-to-send crosses first, 80 ms in all.
  t0 = std::chrono::steady_clock::now();
  s = w.at(1).isend(a, 2, 0);
  r = w.at(2).irecv(b, 1, 0);
  r.wait();
  s.wait();
  CHECK(std::chrono::steady_clock::now() - t0 >= 80ms);
  CHECK(b == a);
}

TEST_CASE("collectives: buffers that do not fit, and different collectives, are errors") {
  const std::vector<int> both{0, 1};
  {
    inproc_world w(2);
    std::vector<float> one(1), two(2);
    event first = w.at(0).all_reduce_sum(one, both, 0);
    CHECK_THROWS_WITH_AS(w.at(1).all_reduce_sum(two, both, 0),
                         "weft: inproc: all-reduce buffers differ in length", config_error);
    CHECK(first.done());
  }
  {
    // Buffers that do not fit the caller's own call: refused there, with the message every
    // backend gives (the communicator's front end checks both alike). A member already waiting
    // is released, one still to come is refused, and the group meets again afterwards.
    inproc_world w(3);
    const std::vector<int> three{0, 1, 2};
    std::vector<float> one(1), all3(3), all_wrong(2);
    event waiting = w.at(0).all_gather(one, all3, three, 0);
    CHECK_THROWS_WITH_AS(w.at(1).all_gather(one, all_wrong, three, 0),
                         "weft: inproc: all-gather buffers do not fit", config_error);
    CHECK(waiting.done());
    CHECK_THROWS_WITH_AS(w.at(2).all_gather(one, all3, three, 0),
                         "weft: inproc: another member's call of this collective was refused",
                         config_error);
    std::vector<event> again;
    for (int r = 0; r < 3; ++r) again.push_back(w.at(r).barrier(three, 0));
    for (const event& e : again) e.wait();
  }
  {
    // Buffers that fit each call but not the other member's: the meeting refuses them, and
    // releases the member already waiting.
    inproc_world w(2);
    std::vector<float> mine(1), all_two(2), mine_two(2), all_four(4);
    event first = w.at(0).all_gather(mine, all_two, both, 0);
    CHECK_THROWS_WITH_AS(w.at(1).all_gather(mine_two, all_four, both, 0),
                         "weft: inproc: all-gather buffers do not fit", config_error);
    CHECK(first.done());
  }
  {
    inproc_world w(2);
    std::vector<float> all(4), mine(1), all_two(2), mine_two(2);
    CHECK_THROWS_WITH_AS(w.at(0).reduce_scatter_sum(all, mine, both, 0),
                         "weft: inproc: reduce-scatter buffers do not fit", config_error);
    CHECK_THROWS_WITH_AS(w.at(1).reduce_scatter_sum(all_two, mine, both, 0),
                         "weft: inproc: another member's call of this collective was refused",
                         config_error);
    event first = w.at(0).reduce_scatter_sum(all_two, mine, both, 0);
    CHECK_THROWS_WITH_AS(w.at(1).reduce_scatter_sum(all, mine_two, both, 0),
                         "weft: inproc: reduce-scatter buffers do not fit", config_error);
    CHECK(first.done());
  }
  {
    inproc_world w(2);
    std::vector<float> x(1);
    event first = w.at(0).all_reduce_sum(x, both, 0);
    CHECK_THROWS_WITH_AS(w.at(1).barrier(both, 0),
                         "weft: inproc: members of a group call different collectives",
                         config_error);
    CHECK(first.done());
  }
}

TEST_CASE("the one wait: done, stopped or timed out, and budgets it cannot count") {
  using weft::rt::await;
  using weft::rt::await_end;
  using weft::rt::deadline;
  event fired;
  fired.fire();
  CHECK(await(fired, deadline::after(weft::seconds(1))) == await_end::done);
  const event never;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(await(never, deadline::after(weft::seconds(0.05))) == await_end::timed_out);
  CHECK(std::chrono::steady_clock::now() - t0 >= 50ms);
  CHECK(await(never, deadline::after(weft::seconds(60)), [] { return true; }) ==
        await_end::stopped);
  CHECK(deadline::after(weft::seconds(0.2)).budget_words() == "0.2 s");
  // No limit: a budget past what steady_clock counts, infinity included, does not overflow.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(deadline::after(weft::seconds(inf)).at == std::chrono::steady_clock::time_point::max());
  CHECK(deadline::after(weft::seconds(1e30)).at == std::chrono::steady_clock::time_point::max());
  CHECK_THROWS_WITH_AS(deadline::after(weft::seconds(-1)),
                       "weft: a wait's time-out must be 0 s or more, got -1 s", weft::config_error);
  CHECK_THROWS_AS(deadline::after(weft::seconds(std::nan(""))), weft::config_error);
}

TEST_CASE("all-gather and reduce-scatter slices that would wrap their product are refused") {
  inproc_world w(3);
  const std::vector<int> all{0, 1, 2};
  // A slice of ~0.6 x 2^64 values times 3 members wraps to ~0.8 x 2^64: the check divides.
  const std::size_t slice = std::numeric_limits<std::size_t>::max() / 5 * 3;
  const std::size_t whole = slice * 3;  // wraps
  float x = 0;
  const weft::rt::const_data mine(&x, slice);
  const weft::rt::mutable_data all_wrong(&x, whole);
  CHECK_THROWS_WITH_AS(w.at(0).all_gather(mine, all_wrong, all, 0),
                       "weft: inproc: all-gather buffers do not fit", config_error);
  CHECK_THROWS_WITH_AS(
      w.at(0).reduce_scatter_sum(all_wrong, weft::rt::mutable_data(&x, slice), all, 0),
      "weft: inproc: reduce-scatter buffers do not fit", config_error);
}
