// The communication interface the runtime speaks: nonblocking point-to-point and collectives
// over groups of ranks, each returning an event that fires when the operation is complete. A
// comm stream issues an operation and then waits on its event, holding no thread meanwhile.
// Backends: in-process (ranks are threads, rt/inproc.hpp) and, later, MPI (one process per
// rank); callers do not change between them.
#pragma once

#include <cstddef>
#include <span>

#include <weft/rt/stream.hpp>

namespace weft::rt {

/// One rank's end of a world of ranks. Buffers passed to an operation must stay valid, and must
/// not be read (receive side) or written (send side), until its event fires — as with MPI's
/// nonblocking calls. `members` lists the ranks of a collective's group, the same list on every
/// member; each member calls a group's collectives in the same order.
class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  /// The k-th send from rank a to rank b with `tag` pairs with the k-th receive at b from a with
  /// `tag`; the two must have the same length.
  virtual event isend(std::span<const float> data, int dst, int tag) = 0;
  virtual event irecv(std::span<float> data, int src, int tag) = 0;

  /// All-to-all(v): `send` holds `send_counts[j]` values for member j, in member order;
  /// `recv` receives `recv_counts[j]` values from member j, in member order.
  virtual event all_to_all_v(std::span<const float> send, std::span<const std::size_t> send_counts,
                             std::span<float> recv, std::span<const std::size_t> recv_counts,
                             std::span<const int> members) = 0;
  /// Element-wise sum over the members, in place.
  virtual event all_reduce_sum(std::span<float> data, std::span<const int> members) = 0;
  /// `all` receives every member's `mine`, in member order.
  virtual event all_gather(std::span<const float> mine, std::span<float> all,
                           std::span<const int> members) = 0;
  /// The element-wise sum of every member's `all`; member j receives the j-th slice in `mine`.
  virtual event reduce_scatter_sum(std::span<const float> all, std::span<float> mine,
                                   std::span<const int> members) = 0;
  virtual event barrier(std::span<const int> members) = 0;
};

}  // namespace weft::rt
