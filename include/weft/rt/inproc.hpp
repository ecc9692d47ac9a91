// The in-process backend: every rank is a set of streams in one process, data moves by copy the
// moment both sides have posted, and the operation's event fires after the time the alpha-beta
// model gives it (at once without a model) — so a cross-node or cross-data-centre link can be
// emulated on one machine, with a timer, not a sleeping worker.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/link.hpp>
#include <weft/rt/comm.hpp>
#include <weft/rt/timer.hpp>

namespace weft::rt {

/// How long an operation takes on the emulated link: none (instant), or the alpha-beta model;
/// with sites, transfers between two of them on the `far` link.
struct delay_model {
  std::optional<link_model> on;
  /// Sites (data centres): world ranks [0, site_ranks) are the first, and so on; 0: one site.
  int site_ranks = 0;
  link_model far{};

  bool crosses_sites(int a, int b) const noexcept {
    return site_ranks > 0 && a / site_ranks != b / site_ranks;
  }
  /// The link a transfer from `src` to `dst` takes, if any.
  std::optional<link_model> link(int src, int dst) const {
    if (on && crosses_sites(src, dst)) return far;
    return on;
  }
  seconds p2p(std::size_t bytes, int src = 0, int dst = 0) const {
    const auto l = link(src, dst);
    return l ? collective::p2p(*l, static_cast<double>(bytes)) : seconds{0};
  }
  /// A receive's clear-to-send crosses the link before the data may flow (rendezvous): all of
  /// it for a receive posted after its send.
  seconds handshake(int src, int dst) const {
    const auto l = link(src, dst);
    return l ? l->alpha : seconds{0};
  }
  seconds all_to_all(int p, std::size_t bytes_per_rank) const {
    return on ? collective::pairwise_all_to_all(*on, p, static_cast<double>(bytes_per_rank))
              : seconds{0};
  }
  seconds all_reduce(int p, std::size_t bytes) const {
    return on ? collective::ring_all_reduce(*on, p, static_cast<double>(bytes)) : seconds{0};
  }
  seconds all_gather(int p, std::size_t bytes) const {
    return on ? collective::ring_all_gather(*on, p, static_cast<double>(bytes)) : seconds{0};
  }
};

class inproc_world {
 public:
  explicit inproc_world(int ranks, delay_model delay = {}) : delay_(delay) {
    if (ranks < 1) throw config_error("weft: inproc: a world needs at least one rank");
    for (int r = 0; r < ranks; ++r) comms_.push_back(std::make_unique<endpoint>(*this, r));
  }
  inproc_world(const inproc_world&) = delete;
  inproc_world& operator=(const inproc_world&) = delete;

  int size() const noexcept { return static_cast<int>(comms_.size()); }
  communicator& at(int rank) { return *comms_.at(static_cast<std::size_t>(rank)); }

 private:
  struct endpoint;

  // A posted point-to-point operation waiting for its partner, and when it was posted.
  struct posted {
    const_data send;
    mutable_data recv;
    event done;
    std::chrono::steady_clock::time_point at{};
  };
  struct channel {
    std::deque<posted> sends, recvs;
  };
  // A collective in progress: one slot per member, filled as members arrive.
  struct meeting {
    /// `refused`: a member's call was refused by its own checks (communicator::refused).
    enum op_t { a2a, reduce, gather, scatter, sync, refused } op;
    struct part {
      const_data in{};
      mutable_data out{};
      std::span<const std::size_t> send_counts{}, recv_counts{};
      event done{};
      bool arrived = false;
    };
    std::vector<part> parts;
    int arrived = 0;
  };

  void complete_after(seconds t, const event& e) {
    if (t <= seconds{0}) return e.fire();
    timer_.fire_after(t, e);
  }

  event send(int src, int dst, int tag, const_data data) {
    event done;
    std::unique_lock lock(m_);
    channel& ch = channels_[{src, dst, tag}];
    if (ch.recvs.empty()) {
      ch.sends.push_back({data, {}, done});
      return done;
    }
    posted r = ch.recvs.front();
    ch.recvs.pop_front();
    lock.unlock();
    // The receive's clear-to-send left when it was posted: what of its crossing is still ahead.
    const seconds crossed = std::chrono::steady_clock::now() - r.at;
    const seconds ahead = delay_.handshake(src, dst) - crossed;
    match(src, dst, tag, data, r.recv, done, r.done, std::max(ahead, seconds{0}));
    return done;
  }
  event recv(int dst, int src, int tag, mutable_data data) {
    event done;
    std::unique_lock lock(m_);
    channel& ch = channels_[{src, dst, tag}];
    if (ch.sends.empty()) {
      ch.recvs.push_back({{}, data, done, std::chrono::steady_clock::now()});
      return done;
    }
    posted s = ch.sends.front();
    ch.sends.pop_front();
    lock.unlock();
    match(src, dst, tag, s.send, data, s.done, done, delay_.handshake(src, dst));
    return done;
  }
  // `handshake`: what the sender still waits for the receive's clear-to-send, which crosses the
  // link from the moment the receive is posted (rendezvous: nothing flows before the receiver
  // has a buffer ready) — all of it for a receive posted after its send, what is left of it for
  // one posted less than a link latency before, as `cost_model::transfer_start` has it.
  void match(int src, int dst, int tag, const_data from, mutable_data to, const event& sent,
             const event& received, seconds handshake) {
    if (from.count != to.count || from.type != to.type) {
      sent.fire();  // nobody waits forever; the caller's task fails and stops the run
      received.fire();
      throw config_error("weft: inproc: a send of " + std::to_string(from.count) + " " +
                         name_of(from.type) + " values from rank " + std::to_string(src) +
                         " to rank " + std::to_string(dst) + " (tag " + std::to_string(tag) +
                         ") meets a receive of " + std::to_string(to.count) + " " +
                         name_of(to.type));
    }
    if (from.count > 0) std::memcpy(to.data, from.data, from.bytes());
    const seconds t = delay_.p2p(from.bytes(), src, dst) + handshake;
    complete_after(t, sent);
    complete_after(t, received);
  }
  /// Joins the group's current meeting (`rank` is in `members`: the front end checked); the last
  /// member to arrive carries it out.
  event meet(int rank, meeting::op_t op, std::span<const int> members, int channel,
             meeting::part mine) {
    const auto me = std::find(members.begin(), members.end(), rank);
    const auto index = static_cast<std::size_t>(me - members.begin());
    std::vector<int> key(members.begin(), members.end());
    key.push_back(channel);  // a (group, channel) is a communicator of its own
    event done;
    mine.done = done;
    mine.arrived = true;
    std::unique_lock lock(m_);
    std::size_t& seq = sequence_[{key, rank}];
    meeting& mt = meetings_[{key, seq++}];
    if (mt.parts.empty()) {
      mt.op = op;
      mt.parts.resize(members.size());
    }
    if (mt.op == meeting::refused) {  // another member's call of it was refused: so is this one
      if (++mt.arrived == static_cast<int>(members.size())) meetings_.erase({key, seq - 1});
      throw config_error("weft: inproc: another member's call of this collective was refused");
    }
    if (mt.op != op) {  // release the members already waiting: nobody waits forever
      meeting broken = std::move(mt);
      meetings_.erase({key, seq - 1});
      lock.unlock();
      for (auto& part : broken.parts)
        if (part.arrived) part.done.fire();
      throw config_error("weft: inproc: members of a group call different collectives");
    }
    mt.parts[index] = mine;
    if (++mt.arrived < static_cast<int>(members.size())) return done;
    meeting ready = std::move(mt);
    meetings_.erase({key, seq - 1});
    lock.unlock();
    carry_out(ready);
    return done;
  }
  /// A member's call that its own checks refused still takes its place in the group's meeting,
  /// which it breaks: the members already there are released (their events fire, their buffers
  /// untouched), and those still to come are refused, so nobody waits for a call that will not
  /// come and the group's next collective meets as usual.
  void refuse(int rank, std::span<const int> members, int channel) {
    std::vector<int> key(members.begin(), members.end());
    key.push_back(channel);
    std::vector<event> waiting;
    {
      std::lock_guard lock(m_);
      std::size_t& seq = sequence_[{key, rank}];
      const std::pair<std::vector<int>, std::size_t> at{key, seq++};
      meeting& mt = meetings_[at];
      if (mt.parts.empty()) mt.parts.resize(members.size());
      for (const auto& part : mt.parts)
        if (part.arrived) waiting.push_back(part.done);
      mt.op = meeting::refused;
      if (++mt.arrived == static_cast<int>(members.size())) meetings_.erase(at);
    }
    for (const event& e : waiting) e.fire();
  }
  void carry_out(meeting& mt) {
    const auto p = static_cast<int>(mt.parts.size());
    const auto finish = [&](seconds t) {
      for (auto& part : mt.parts) complete_after(t, part.done);
    };
    const auto refuse = [&](const std::string& why) {
      finish(seconds{0});
      throw config_error("weft: inproc: " + why);
    };
    const element type = mt.op == meeting::reduce ? mt.parts[0].out.type : mt.parts[0].in.type;
    for (const auto& part : mt.parts)
      if ((mt.op != meeting::reduce && mt.op != meeting::sync && part.in.type != type) ||
          (mt.op != meeting::sync && part.out.type != type))
        refuse("members of a collective pass different element types");
    const std::size_t size = size_of(type);
    switch (mt.op) {
      case meeting::a2a: {
        for (std::size_t i = 0; i < mt.parts.size(); ++i)
          for (std::size_t j = 0; j < mt.parts.size(); ++j)
            if (mt.parts[i].send_counts[j] != mt.parts[j].recv_counts[i])
              refuse("all-to-all member " + std::to_string(i) + " sends " +
                     std::to_string(mt.parts[i].send_counts[j]) + " values to member " +
                     std::to_string(j) + ", which expects " +
                     std::to_string(mt.parts[j].recv_counts[i]));
        std::size_t bytes = 0;
        for (std::size_t j = 0; j < mt.parts.size(); ++j) {
          std::size_t at = 0;
          for (std::size_t i = 0; i < mt.parts.size(); ++i) {
            std::size_t from = 0;
            for (std::size_t k = 0; k < j; ++k) from += mt.parts[i].send_counts[k];
            const std::size_t n = mt.parts[i].send_counts[j];
            if (n > 0)
              std::memcpy(static_cast<std::byte*>(mt.parts[j].out.data) + at * size,
                          static_cast<const std::byte*>(mt.parts[i].in.data) + from * size,
                          n * size);
            at += n;
          }
          bytes = std::max(bytes, at * size);
        }
        return finish(delay_.all_to_all(p, bytes));
      }
      case meeting::reduce: {
        const std::size_t n = mt.parts[0].out.count;
        for (auto& part : mt.parts)
          if (part.out.count != n) refuse("all-reduce buffers differ in length");
        // Member order: the same sum on every run.
        if (type == element::f32)
          all_reduce<float>(mt, n);
        else
          all_reduce<double>(mt, n);
        return finish(delay_.all_reduce(p, n * size));
      }
      case meeting::gather: {
        const std::size_t n = mt.parts[0].in.count;
        for (auto& part : mt.parts)
          if (part.in.count != n || part.out.count != n * mt.parts.size())
            refuse("all-gather buffers do not fit");
        for (auto& part : mt.parts)
          for (std::size_t i = 0; i < mt.parts.size(); ++i)
            if (n > 0)
              std::memcpy(static_cast<std::byte*>(part.out.data) + i * n * size,
                          mt.parts[i].in.data, n * size);
        return finish(delay_.all_gather(p, n * size));
      }
      case meeting::scatter: {
        const std::size_t n = mt.parts[0].out.count;
        for (auto& part : mt.parts)
          if (part.out.count != n || part.in.count != n * mt.parts.size())
            refuse("reduce-scatter buffers do not fit");
        if (type == element::f32)
          reduce_scatter<float>(mt, n);
        else
          reduce_scatter<double>(mt, n);
        return finish(delay_.all_gather(p, n * size));
      }
      case meeting::sync:
        return finish(delay_.all_reduce(p, 0));
      case meeting::refused:  // never carried out: `meet` and `refuse` end such a meeting
        return;
    }
  }
  template <wire_value T>
  static void all_reduce(meeting& mt, std::size_t n) {
    std::vector<T> sum(n);
    sum_in_member_order<T>(
        mt.parts.size(), [&](std::size_t j) { return static_cast<const T*>(mt.parts[j].out.data); },
        std::span<T>(sum));
    for (auto& part : mt.parts) std::copy(sum.begin(), sum.end(), static_cast<T*>(part.out.data));
  }
  template <wire_value T>
  static void reduce_scatter(meeting& mt, std::size_t n) {
    for (std::size_t j = 0; j < mt.parts.size(); ++j)
      sum_in_member_order<T>(
          mt.parts.size(),
          [&](std::size_t i) { return static_cast<const T*>(mt.parts[i].in.data) + j * n; },
          std::span<T>(static_cast<T*>(mt.parts[j].out.data), n));
  }

  struct endpoint final : communicator {
    endpoint(inproc_world& w, int r) : world(w), me(r) {}
    int rank() const noexcept override { return me; }
    int size() const noexcept override { return world.size(); }

   protected:
    const char* backend() const noexcept override { return "inproc"; }
    event start_send(const_data data, int dst, int tag) override {
      return world.send(me, dst, tag, data);
    }
    event start_recv(mutable_data data, int src, int tag) override {
      return world.recv(me, src, tag, data);
    }
    event start_all_to_all(const_data send, std::span<const std::size_t> send_counts,
                           mutable_data recv, std::span<const std::size_t> recv_counts,
                           std::span<const int> members, int channel) override {
      return world.meet(
          me, meeting::a2a, members, channel,
          {.in = send, .out = recv, .send_counts = send_counts, .recv_counts = recv_counts});
    }
    event start_all_reduce(mutable_data data, std::span<const int> members, int channel) override {
      return world.meet(me, meeting::reduce, members, channel, {.out = data});
    }
    event start_all_gather(const_data mine, mutable_data all, std::span<const int> members,
                           int channel) override {
      return world.meet(me, meeting::gather, members, channel, {.in = mine, .out = all});
    }
    event start_reduce_scatter(const_data all, mutable_data mine, std::span<const int> members,
                               int channel) override {
      return world.meet(me, meeting::scatter, members, channel, {.in = all, .out = mine});
    }
    event start_barrier(std::span<const int> members, int channel) override {
      return world.meet(me, meeting::sync, members, channel, {});
    }
    void refused(std::span<const int> members, int channel) override {
      world.refuse(me, members, channel);
    }

   public:
    inproc_world& world;
    int me;
  };

  delay_model delay_;
  std::mutex m_;
  std::map<std::tuple<int, int, int>, channel> channels_;
  std::map<std::pair<std::vector<int>, int>, std::size_t> sequence_;
  std::map<std::pair<std::vector<int>, std::size_t>, meeting> meetings_;
  std::vector<std::unique_ptr<endpoint>> comms_;
  timer timer_;  // last: destroyed first, firing whatever is pending
};

}  // namespace weft::rt
