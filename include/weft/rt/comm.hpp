// The communication interface the runtime speaks: nonblocking point-to-point and collectives
// over groups of ranks, each returning an event that fires when the operation is complete. A
// comm stream issues an operation and then waits on its event, holding no thread meanwhile.
// Backends: in-process (ranks are threads, rt/inproc.hpp) and MPI (one process per rank,
// mpi/communicator.hpp); callers do not change between them.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/rt/stream.hpp>

namespace weft::rt {

/// What the runtime moves: fp32 or fp64 values.
template <class T>
concept wire_value = std::same_as<T, float> || std::same_as<T, double>;

enum class element : std::uint8_t { f32, f64 };
template <wire_value T>
inline constexpr element element_of = std::same_as<T, float> ? element::f32 : element::f64;
constexpr std::size_t size_of(element e) noexcept { return e == element::f32 ? 4 : 8; }
constexpr const char* name_of(element e) noexcept { return e == element::f32 ? "fp32" : "fp64"; }

/// A buffer an operation reads (a send, a collective's input): where, how many, of what. Built
/// from a span, a vector or a pointer and count of float or double.
struct const_data {
  const void* data = nullptr;
  std::size_t count = 0;
  element type = element::f32;

  constexpr const_data() noexcept = default;
  template <class T, std::size_t E>
  requires wire_value<std::remove_const_t<T>>
  constexpr const_data(std::span<T, E> s) noexcept  // NOLINT: any span of values
      : data(s.data()), count(s.size()), type(element_of<std::remove_const_t<T>>) {}
  template <wire_value T>
  constexpr const_data(const T* p, std::size_t n) noexcept
      : data(p), count(n), type(element_of<T>) {}
  template <wire_value T>
  const_data(const std::vector<T>& v) noexcept  // NOLINT: any vector of values
      : const_data(v.data(), v.size()) {}

  constexpr std::size_t bytes() const noexcept { return count * size_of(type); }
};

/// A buffer an operation writes (a receive, a collective's output).
struct mutable_data {
  void* data = nullptr;
  std::size_t count = 0;
  element type = element::f32;

  constexpr mutable_data() noexcept = default;
  template <wire_value T, std::size_t E>
  constexpr mutable_data(std::span<T, E> s) noexcept  // NOLINT: any span of values
      : data(s.data()), count(s.size()), type(element_of<T>) {}
  template <wire_value T>
  constexpr mutable_data(T* p, std::size_t n) noexcept : data(p), count(n), type(element_of<T>) {}
  template <wire_value T>
  mutable_data(std::vector<T>& v) noexcept  // NOLINT: any vector of values
      : mutable_data(v.data(), v.size()) {}

  constexpr std::size_t bytes() const noexcept { return count * size_of(type); }
  constexpr operator const_data() const noexcept {  // NOLINT: what is written can be read
    const_data c;
    c.data = data;
    c.count = count;
    c.type = type;
    return c;
  }
};

/// One rank's end of a world of ranks. Buffers passed to an operation must stay valid, and must
/// not be read (receive side) or written (send side), until its event fires — as with MPI's
/// nonblocking calls. `members` lists the ranks of a collective's group, the same list on every
/// member; `channel` tells apart streams that issue a group's collectives concurrently (each
/// (group, channel) is a communicator of its own, as MPI's duplicated communicators are); each
/// member calls the collectives of a (group, channel) in the same order.
///
/// The operations are this class's own: they check what one rank can check — peers inside the
/// world, this rank in the group, a count per member, counts that fit the buffers, one element
/// type — with one wording for every backend, then hand the operation to the backend's
/// transport (`start_*`), which checks only what needs the other ranks (a send and its
/// receive of one length, members passing alike buffers) and sums in member order
/// (`sum_in_member_order`). Backends: `rt/inproc.hpp`, `mpi/communicator.hpp`.
class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  /// The k-th send from rank a to rank b with `tag` pairs with the k-th receive at b from a with
  /// `tag`; the two must have the same length and element type.
  event isend(const_data data, int dst, int tag) {
    check_peer(dst, "send to");
    return start_send(data, dst, tag);
  }
  event irecv(mutable_data data, int src, int tag) {
    check_peer(src, "receive from");
    return start_recv(data, src, tag);
  }

  /// All-to-all(v): `send` holds `send_counts[j]` values for member j, in member order;
  /// `recv` receives `recv_counts[j]` values from member j, in member order. Every member's
  /// buffers hold one element type.
  event all_to_all_v(const_data send, std::span<const std::size_t> send_counts, mutable_data recv,
                     std::span<const std::size_t> recv_counts, std::span<const int> members,
                     int channel) {
    check_group(members);
    const auto refuse = [&](const std::string& why) {
      refused(members, channel);
      throw config_error(prefix() + why);
    };
    if (send_counts.size() != members.size() || recv_counts.size() != members.size())
      refuse("all-to-all needs a count per member");
    if (send.type != recv.type) refuse("all-to-all sends and receives one element type");
    std::size_t sent = 0, received = 0;
    bool fit = true;
    for (std::size_t j = 0; j < members.size() && fit; ++j) {
      // Compared with what is left, not added first: absurd counts cannot wrap the sums.
      fit = send_counts[j] <= send.count - sent && recv_counts[j] <= recv.count - received;
      sent += fit ? send_counts[j] : 0;
      received += fit ? recv_counts[j] : 0;
    }
    if (!fit || sent != send.count || received != recv.count)
      refuse("all-to-all counts do not add up to the buffers (" + std::to_string(send.count) +
             " values to send, " + std::to_string(recv.count) + " to receive)");
    return start_all_to_all(send, send_counts, recv, recv_counts, members, channel);
  }
  /// Element-wise sum over the members, in place, in member order: the same bits on every
  /// member and every run.
  event all_reduce_sum(mutable_data data, std::span<const int> members, int channel) {
    check_group(members);
    return start_all_reduce(data, members, channel);
  }
  /// `all` receives every member's `mine`, in member order.
  event all_gather(const_data mine, mutable_data all, std::span<const int> members, int channel) {
    check_group(members);
    check_slices(all.count, mine.count, all.type != mine.type, members, channel, "all-gather");
    return start_all_gather(mine, all, members, channel);
  }
  /// The element-wise sum of every member's `all`, in member order; member j receives the j-th
  /// slice in `mine`.
  event reduce_scatter_sum(const_data all, mutable_data mine, std::span<const int> members,
                           int channel) {
    check_group(members);
    check_slices(all.count, mine.count, all.type != mine.type, members, channel, "reduce-scatter");
    return start_reduce_scatter(all, mine, members, channel);
  }
  event barrier(std::span<const int> members, int channel) {
    check_group(members);
    return start_barrier(members, channel);
  }

  /// Why this world cannot finish what it started, once the backend knows — a peer announced a
  /// failure, the launcher is ending the job, a call failed where no caller could be told — or
  /// empty. A runner waiting for a peer polls it, so that it stops at once instead of at its
  /// timeout. In-process ranks share one run, which sees its failures itself.
  virtual std::string fault() const { return {}; }
  /// One round of completing what is in flight, for a backend that completes operations by
  /// polling (MPI): the runner calls it whenever a worker finishes a unit of compute, so the
  /// thread that has a core moves communication on instead of waiting for the backend's own
  /// thread to get one. Cheap when there is nothing to do; in-process ranks need none.
  virtual void poll() {}
  /// This rank's run failed: tell the other ranks (their `fault()` then names this rank and
  /// `what`), so that none of them waits for it. A backend of one process has nobody to tell.
  virtual void announce_failure(std::string_view /*what*/) {}

 protected:
  /// The backend's name in messages ("inproc", "mpi").
  virtual const char* backend() const noexcept = 0;
  /// The transport, called with what the operations above have checked.
  virtual event start_send(const_data data, int dst, int tag) = 0;
  virtual event start_recv(mutable_data data, int src, int tag) = 0;
  virtual event start_all_to_all(const_data send, std::span<const std::size_t> send_counts,
                                 mutable_data recv, std::span<const std::size_t> recv_counts,
                                 std::span<const int> members, int channel) = 0;
  virtual event start_all_reduce(mutable_data data, std::span<const int> members, int channel) = 0;
  virtual event start_all_gather(const_data mine, mutable_data all, std::span<const int> members,
                                 int channel) = 0;
  virtual event start_reduce_scatter(const_data all, mutable_data mine,
                                     std::span<const int> members, int channel) = 0;
  virtual event start_barrier(std::span<const int> members, int channel) = 0;

  /// A collective of this rank that the checks above refused, before it throws: a backend whose
  /// members wait for each other in one place (in-process) releases those already waiting, so
  /// that nobody waits for a call that will not come. Over MPI the refused call is never made,
  /// as a wrong MPI call fails on its own rank.
  virtual void refused(std::span<const int> /*members*/, int /*channel*/) {}

  /// "weft: <backend>: ", the start of every message of this backend.
  std::string prefix() const { return std::string("weft: ") + backend() + ": "; }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size())
      throw config_error(prefix() + what + " rank " + std::to_string(peer) +
                         ", outside a world of " + std::to_string(size()));
  }

 private:
  void check_group(std::span<const int> members) const {
    if (std::find(members.begin(), members.end(), rank()) == members.end())
      throw config_error(prefix() + "rank " + std::to_string(rank()) +
                         " joins a collective of a group it is not in");
    for (const int r : members) check_peer(r, "meet");
  }
  // A buffer of one slice per member beside the slice: `whole` = `slice` x members, one type.
  void check_slices(std::size_t whole, std::size_t slice, bool types_differ,
                    std::span<const int> members, int channel, const char* what) {
    // Divided, not multiplied: an absurd slice cannot wrap its product into agreement.
    const std::size_t m = members.size();
    if (types_differ || whole % m != 0 || whole / m != slice) {
      refused(members, channel);
      throw config_error(prefix() + what + " buffers do not fit");
    }
  }
};

/// out[k] = 0 + s_0[k] + s_1[k] + ... : `parts` slices of `out`'s length, added in member order,
/// `slice(j)` the j-th. Every backend sums so, which makes a sum the same bits on every member
/// and every run.
template <wire_value T, class Slice>
void sum_in_member_order(std::size_t parts, Slice&& slice, std::span<T> out) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    T sum = 0;
    for (std::size_t j = 0; j < parts; ++j) sum += slice(j)[k];
    out[k] = sum;
  }
}

}  // namespace weft::rt
