// After a run over a world of processes (run_options::comm) each unit of work — a (replica,
// micro-batch, chunk) — has its results (its loss, its weight gradients) on the rank that ran
// it. Rank 0 reports the run, so every other rank sends its units' results there, unit by unit in
// one order, and rank 0 adds them up exactly as an in-process run does: the same values in the
// same order, so the same sums bit for bit.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <weft/exec/runner.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/rt/comm.hpp>

namespace weft::exec {

/// Brings the results of `units` units to world rank 0. `owner(u)`: the world rank that ran
/// unit u; `pack(u, out)`: appends its results to `out` — the same length on every rank (rank 0
/// packs its own copy to size what it receives); `unpack(u, values)`: stores them on rank 0.
template <rt::wire_value T, class Owner, class Pack, class Unpack>
void collect_to_root(rt::communicator& comm, std::size_t units, const Owner& owner,
                     const Pack& pack, const Unpack& unpack, seconds timeout) {
  const int me = comm.rank();
  const rt::deadline deadline = rt::deadline::after(timeout);
  std::vector<std::vector<T>> values(units);
  std::vector<rt::event> pending;
  for (std::size_t u = 0; u < units; ++u) {
    const int o = owner(u);
    if (o == 0 || (me != 0 && me != o)) continue;
    pack(u, values[u]);
    // FIFO per (source, destination, tag): rank 0 receives each owner's units in the order
    // the owner sends them.
    pending.push_back(me == 0 ? comm.irecv(values[u], o, result_tag)
                              : comm.isend(values[u], 0, result_tag));
  }
  for (const rt::event& e : pending)
    detail::await_world(comm, e, deadline, me, "rank " + std::to_string(me),
                        me == 0 ? "receiving the results" : "sending the results");
  if (me != 0) return;
  for (std::size_t u = 0; u < units; ++u)
    if (owner(u) != 0) unpack(u, values[u]);
}

/// The executors' units: each has its part of the loss (`loss`) and its weight gradients
/// (`grad`, one layer per element, each layer's parameters in `each_param` order); `owner(u)`
/// is the world rank that ran unit u.
template <rt::wire_value T, class Unit, class Owner>
void collect_units(rt::communicator& comm, std::vector<Unit>& units, const Owner& owner,
                   seconds timeout) {
  const auto pack = [&](std::size_t u, std::vector<T>& out) {
    out.push_back(units[u].loss);
    for (auto& layer : units[u].grad)
      layer.each_param([&](nn::param<T>& p) {
        out.insert(out.end(), p.grad.data(), p.grad.data() + p.grad.size());
      });
  };
  const auto unpack = [&](std::size_t u, const std::vector<T>& in) {
    units[u].loss = in[0];
    const T* at = in.data() + 1;
    for (auto& layer : units[u].grad)
      layer.each_param([&](nn::param<T>& p) {
        std::copy(at, at + p.grad.size(), p.grad.data());
        at += p.grad.size();
      });
  };
  collect_to_root<T>(comm, units.size(), owner, pack, unpack, timeout);
}

}  // namespace weft::exec
