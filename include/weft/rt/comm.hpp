// The communication interface the runtime speaks: nonblocking point-to-point and collectives
// over groups of ranks, each returning an event that fires when the operation is complete. A
// comm stream issues an operation and then waits on its event, holding no thread meanwhile.
// Backends: in-process (ranks are threads, rt/inproc.hpp) and MPI (one process per rank,
// mpi/communicator.hpp); callers do not change between them.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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
class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  /// The k-th send from rank a to rank b with `tag` pairs with the k-th receive at b from a with
  /// `tag`; the two must have the same length and element type.
  virtual event isend(const_data data, int dst, int tag) = 0;
  virtual event irecv(mutable_data data, int src, int tag) = 0;

  /// All-to-all(v): `send` holds `send_counts[j]` values for member j, in member order;
  /// `recv` receives `recv_counts[j]` values from member j, in member order. Every member's
  /// buffers hold one element type.
  virtual event all_to_all_v(const_data send, std::span<const std::size_t> send_counts,
                             mutable_data recv, std::span<const std::size_t> recv_counts,
                             std::span<const int> members, int channel) = 0;
  /// Element-wise sum over the members, in place.
  virtual event all_reduce_sum(mutable_data data, std::span<const int> members, int channel) = 0;
  /// `all` receives every member's `mine`, in member order.
  virtual event all_gather(const_data mine, mutable_data all, std::span<const int> members,
                           int channel) = 0;
  /// The element-wise sum of every member's `all`; member j receives the j-th slice in `mine`.
  virtual event reduce_scatter_sum(const_data all, mutable_data mine, std::span<const int> members,
                                   int channel) = 0;
  virtual event barrier(std::span<const int> members, int channel) = 0;

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
};

}  // namespace weft::rt
