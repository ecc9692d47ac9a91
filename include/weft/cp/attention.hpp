// Distributed masked attention for adaptive context parallelism: cp ranks (threads of one
// process, talking through the communication interface) run a plan's tasks round by round, each
// task the attention of one query slice over one key/value slice; partial outputs meet at their
// owner and merge through their log-sum-exp statistics (the online softmax), so the result equals
// single-device masked attention. The backward runs the same plan. A rank that fails (its kernel
// throws, or it waits past the deadline) stops every rank; the error names the rank and round.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/time.hpp>
#include <weft/cp/mask.hpp>
#include <weft/cp/rounds.hpp>
#include <weft/nn/blockwise_attention.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/rt/await.hpp>
#include <weft/rt/comm.hpp>
#include <weft/rt/inproc.hpp>

namespace weft::cp {

/// A failed distributed run: weft's run-time error (core/error.hpp: the rank that failed first
/// and the exception it raised, `cause`, none for a timeout) with the step (forward or backward)
/// and round it was in, CP attention's rounds having no ops.
struct cp_run_error : run_error {
  int round;
  std::string step;
  cp_run_error(int rank_, int round_, std::string step_, const std::string& why,
               std::exception_ptr cause_ = nullptr)
      : run_error("weft: cp attention: rank " + std::to_string(rank_) + ", " + step_ + " round " +
                      std::to_string(round_) + ": " + why,
                  rank_, std::nullopt, std::move(cause_)),
        round(round_),
        step(std::move(step_)) {}
};

struct cp_attention_options {
  rt::delay_model delay{};  ///< the emulated link between ranks
  /// How long a rank waits for a round's transfers before the run fails with a timeout.
  seconds timeout{60};
  /// Called on a rank's thread before each task it runs (rank, round, backward?): tracing,
  /// fault injection. An exception it throws fails the run like a kernel's.
  std::function<void(int, int, bool)> on_task;
};

/// Runs attention over `cp` in-process ranks following `plan` (built for the grid of `mask`
/// under `order`). Rank r holds rows order[r S/cp .. (r+1) S/cp) of Q, K and V; results come back
/// in the original token order. `T` is the element type of the tensors and of what the ranks
/// exchange (float or double; `cp_attention` is the float one).
template <rt::wire_value T>
class basic_cp_attention {
 public:
  using mat = nn::matrix<T>;

  basic_cp_attention(const dense_mask& mask, std::vector<int> order, round_assignment plan,
                     rt::delay_model delay = {})
      : basic_cp_attention(mask, std::move(order), std::move(plan), with_delay(delay)) {}

  basic_cp_attention(const dense_mask& mask, std::vector<int> order, round_assignment plan,
                     cp_attention_options options)
      : mask_(mask), order_(std::move(order)), plan_(std::move(plan)), opt_(std::move(options)) {
    const int s = mask_.size(), cp = plan_.cp;
    if (cp < 1 || s % cp != 0)
      throw config_error("weft: cp attention: " + std::to_string(s) + " tokens do not split into " +
                         std::to_string(cp) + " equal slices");
    const dense_mask g = grid(mask_, order_, cp);  // also checks the order
    const std::vector<std::string> bad = validate(plan_, g);
    if (!bad.empty()) throw config_error(bad.front() + " (the plan does not fit the mask)");
  }

  struct forward_result {
    mat o;               ///< in token order
    std::vector<T> lse;  ///< per token
  };
  struct backward_result {
    mat dq, dk, dv;  ///< in token order
  };

  forward_result forward(const mat& q, const mat& k, const mat& v) {
    check_rows(q, "Q");
    check_rows(k, "K");
    check_rows(v, "V");
    q_ = slices(q);
    k_ = slices(k);
    v_ = slices(v);
    out_.assign(static_cast<std::size_t>(plan_.cp), {});
    try {
      run([this](int p, rt::communicator& c, where& at) { forward_rank(p, c, at); }, "forward");
    } catch (...) {
      out_.clear();  // no forward to run the backward of
      throw;
    }
    forward_result r{mat(q.rows(), v.cols()), std::vector<T>(static_cast<std::size_t>(q.rows()))};
    for (int p = 0; p < plan_.cp; ++p)
      for (int a = 0; a < per(); ++a) {
        const int t = order_[static_cast<std::size_t>(p * per() + a)];
        r.o.row(t) = out_[static_cast<std::size_t>(p)].o.row(a);
        r.lse[static_cast<std::size_t>(t)] =
            out_[static_cast<std::size_t>(p)].lse[static_cast<std::size_t>(a)];
      }
    return r;
  }

  /// Gradients for the last forward, given dO (token order).
  backward_result backward(const mat& d_o) {
    check_rows(d_o, "dO");
    if (out_.empty()) throw config_error("weft: cp attention: backward before forward");
    do_ = slices(d_o);
    dq_.assign(static_cast<std::size_t>(plan_.cp), {});
    dk_ = dq_;
    dv_ = dq_;
    run([this](int p, rt::communicator& c, where& at) { backward_rank(p, c, at); }, "backward");
    backward_result r{mat(d_o.rows(), q_[0].cols()), mat(d_o.rows(), k_[0].cols()),
                      mat(d_o.rows(), v_[0].cols())};
    for (int p = 0; p < plan_.cp; ++p)
      for (int a = 0; a < per(); ++a) {
        const int t = order_[static_cast<std::size_t>(p * per() + a)];
        r.dq.row(t) = dq_[static_cast<std::size_t>(p)].row(a);
        r.dk.row(t) = dk_[static_cast<std::size_t>(p)].row(a);
        r.dv.row(t) = dv_[static_cast<std::size_t>(p)].row(a);
      }
    return r;
  }

 private:
  static cp_attention_options with_delay(rt::delay_model delay) {
    cp_attention_options o;
    o.delay = delay;
    return o;
  }
  int per() const noexcept { return mask_.size() / plan_.cp; }

  void check_rows(const mat& m, const char* what) const {
    if (m.rows() != mask_.size())
      throw config_error(std::string("weft: cp attention: ") + what + " has " +
                         std::to_string(m.rows()) + " rows, the mask " +
                         std::to_string(mask_.size()) + " tokens");
  }
  std::vector<mat> slices(const mat& m) const {
    std::vector<mat> out(static_cast<std::size_t>(plan_.cp), mat(per(), m.cols()));
    for (int p = 0; p < plan_.cp; ++p)
      for (int a = 0; a < per(); ++a)
        out[static_cast<std::size_t>(p)].row(a) =
            m.row(order_[static_cast<std::size_t>(p * per() + a)]);
    return out;
  }
  /// Whether query row a of slice i attends to key row b of slice j.
  auto attends(int i, int j) const {
    return [this, i, j](Eigen::Index a, Eigen::Index b) {
      return mask_(order_[static_cast<std::size_t>(i * per() + a)],
                   order_[static_cast<std::size_t>(j * per() + b)]);
    };
  }

  /// Thrown on a rank that stops because another failed.
  struct stopped {};

  /// What a rank is doing, for the error if it fails.
  struct where {
    int round = 0;
  };

  /// Runs `body(rank, communicator, where)` on cp threads over one in-process world. The first
  /// rank to fail stops the others (their waits see `failed_`); its error is rethrown here.
  /// Buffers handed to the world live in `arena_` until every thread has joined, so a transfer
  /// matched after a rank stopped never touches freed memory.
  template <class Body>
  void run(Body&& body, const char* step) {
    arena_.assign(static_cast<std::size_t>(plan_.cp), {});
    failed_.store(false);
    first_failure_ = nullptr;
    {
      rt::inproc_world world(plan_.cp, opt_.delay);
      std::vector<std::exception_ptr> errors(static_cast<std::size_t>(plan_.cp));
      std::atomic<int> first{-1};
      std::vector<std::thread> threads;
      for (int p = 0; p < plan_.cp; ++p)
        threads.emplace_back([&, p] {
          where at;
          try {
            body(p, world.at(p), at);
          } catch (const stopped&) {
          } catch (const cp_run_error&) {
            errors[static_cast<std::size_t>(p)] = std::current_exception();
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(p)] = std::make_exception_ptr(
                cp_run_error(p, at.round, step, e.what(), std::current_exception()));
          } catch (...) {
            errors[static_cast<std::size_t>(p)] = std::make_exception_ptr(
                cp_run_error(p, at.round, step, "an unknown exception", std::current_exception()));
          }
          if (errors[static_cast<std::size_t>(p)]) {
            int none = -1;
            first.compare_exchange_strong(none, p);
            failed_.store(true);
          }
        });
      for (std::thread& t : threads) t.join();
      if (first.load() >= 0) first_failure_ = errors[static_cast<std::size_t>(first.load())];
    }
    arena_.clear();
    if (first_failure_) std::rethrow_exception(first_failure_);
  }

  /// A buffer of rank `p` that outlives the run's threads.
  mat& keep(int p, mat m) {
    std::deque<mat>& a = arena_[static_cast<std::size_t>(p)];
    a.push_back(std::move(m));
    return a.back();
  }

  /// Waits for a round's transfers; fails with a timeout naming what is missing, or stops when
  /// another rank failed.
  void await(std::vector<std::pair<rt::event, std::string>>& pending, int p, int round,
             const char* step) const {
    const rt::deadline deadline = rt::deadline::after(opt_.timeout);
    for (auto& [e, what] : pending)
      switch (rt::await(e, deadline, [&] { return failed_.load(); })) {
        case rt::await_end::done:
          break;
        case rt::await_end::stopped:
          throw stopped{};
        case rt::await_end::timed_out:
          throw cp_run_error(p, round, step,
                             "timed out after " + deadline.budget_words() + " waiting to " + what);
      }
  }

  enum channel : int { q_chan = 0, kv_chan = 1, ret_chan = 2, ret_kv_chan = 3 };
  static int tag(int round, channel c) { return round * 4 + c; }

  static std::span<T> span_of(mat& m) { return {m.data(), static_cast<std::size_t>(m.size())}; }
  static std::span<const T> span_of(const mat& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }

  static std::string from(const char* what, int rank) {
    return std::string("receive ") + what + " from rank " + std::to_string(rank);
  }
  static std::string to(const char* what, int rank) {
    return std::string("send ") + what + " to rank " + std::to_string(rank);
  }
  /// The buffer a task's operand arrived in; `validate` guarantees it did.
  static const mat& arrived(const mat* m, const char* what) {
    if (!m) throw internal_error(std::string("weft: cp attention: ") + what + " never arrived");
    return *m;
  }

  // The forward. Messages: Q (rows x d), KV (K then V), a partial output with its lse column.
  void forward_rank(int p, rt::communicator& comm, where& at) {
    const int R = plan_.rounds, dq = static_cast<int>(q_[0].cols()),
              dv = static_cast<int>(v_[0].cols());
    std::vector<std::pair<int, nn::partial<T>>> mine;  // (kv slice, partial) for my queries
    struct pending_return {
      int to = 0;
      const mat* packed = nullptr;  // the output, its lse, and the key/value slice it covers
    };
    std::vector<pending_return> returns;  // computed in the last round, sent in this one
    mat& kv_mine = keep(p, mat(per(), k_[0].cols() + dv));
    kv_mine << k_[static_cast<std::size_t>(p)], v_[static_cast<std::size_t>(p)];
    for (int r = 0; r <= R; ++r) {
      at.round = r;
      const transfers& t = plan_.moves[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)];
      std::vector<std::pair<rt::event, std::string>> wait;
      const mat *q_in = nullptr, *kv_in = nullptr;
      std::vector<const mat*> o_in;
      for (const int src : t.recv_q_src) {
        mat& in = keep(p, mat(per(), dq));
        q_in = &in;
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, q_chan)), from("Q", src));
      }
      for (const int src : t.recv_kv_src) {
        mat& in = keep(p, mat(per(), kv_mine.cols()));
        kv_in = &in;
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, kv_chan)), from("KV", src));
      }
      for (const int src : t.recv_o_src) {
        mat& in = keep(p, mat(per(), dv + 2));
        o_in.push_back(&in);
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, ret_chan)), from("an output", src));
      }
      for (const int dst : t.send_q_dst)
        wait.emplace_back(comm.isend(span_of(q_[static_cast<std::size_t>(p)]), dst, tag(r, q_chan)),
                          to("Q", dst));
      for (const int dst : t.send_kv_dst)
        wait.emplace_back(comm.isend(span_of(kv_mine), dst, tag(r, kv_chan)), to("KV", dst));
      for (const pending_return& x : returns)
        wait.emplace_back(comm.isend(span_of(*x.packed), x.to, tag(r, ret_chan)),
                          to("an output", x.to));
      await(wait, p, r, "forward");
      returns.clear();
      for (const mat* packed : o_in) {  // a partial of my queries, from the rank that ran it
        nn::partial<T> part{packed->leftCols(dv), std::vector<T>(static_cast<std::size_t>(per()))};
        for (int a = 0; a < per(); ++a) part.lse[static_cast<std::size_t>(a)] = (*packed)(a, dv);
        mine.emplace_back(static_cast<int>((*packed)(0, dv + 1)), std::move(part));
      }
      if (r == R) break;
      const int x = plan_.run[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)];
      if (x < 0) continue;
      if (opt_.on_task) opt_.on_task(p, r, false);
      const cp_task task = plan_.tasks[static_cast<std::size_t>(x)];
      const mat& qs = task.q == p ? q_[static_cast<std::size_t>(p)] : arrived(q_in, "Q");
      const mat& kv = task.kv == p ? kv_mine : arrived(kv_in, "KV");
      nn::partial<T> part =
          nn::attend<T>(qs, kv.leftCols(k_[0].cols()), kv.rightCols(dv), attends(task.q, task.kv));
      if (task.q == p) {
        mine.emplace_back(task.kv, std::move(part));
        continue;
      }
      mat& packed = keep(p, mat(per(), dv + 2));
      packed.leftCols(dv) = part.o;
      for (int a = 0; a < per(); ++a) {
        packed(a, dv) = part.lse[static_cast<std::size_t>(a)];
        packed(a, dv + 1) = static_cast<T>(task.kv);  // which partial: merge order
      }
      returns.push_back({task.q, &packed});
    }
    // Merge in key/value slice order: the same sums, whatever order the partials arrived in.
    std::sort(mine.begin(), mine.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    nn::partial<T> all{mat::Zero(per(), dv), std::vector<T>(static_cast<std::size_t>(per()),
                                                            -std::numeric_limits<T>::infinity())};
    for (const auto& [kv, part] : mine) nn::merge(all, part);
    out_[static_cast<std::size_t>(p)] = std::move(all);
  }

  // The backward, on the same plan. The query side travels as a bundle (Q, dO, lse, D); dQ goes
  // back where the forward returned O, dK and dV go back to their owner when the task pulled KV.
  void backward_rank(int p, rt::communicator& comm, where& at) {
    const int R = plan_.rounds, dqc = static_cast<int>(q_[0].cols()),
              dkc = static_cast<int>(k_[0].cols()), dvc = static_cast<int>(v_[0].cols());
    const nn::partial<T>& o = out_[static_cast<std::size_t>(p)];
    mat& bundle = keep(p, mat(per(), dqc + dvc + 2));  // Q, dO, lse, D
    bundle.leftCols(dqc) = q_[static_cast<std::size_t>(p)];
    bundle.middleCols(dqc, dvc) = do_[static_cast<std::size_t>(p)];
    for (int a = 0; a < per(); ++a) {
      bundle(a, dqc + dvc) = o.lse[static_cast<std::size_t>(a)];
      bundle(a, dqc + dvc + 1) = do_[static_cast<std::size_t>(p)].row(a).dot(o.o.row(a));
    }
    mat& kv_mine = keep(p, mat(per(), dkc + dvc));
    kv_mine << k_[static_cast<std::size_t>(p)], v_[static_cast<std::size_t>(p)];
    std::vector<std::pair<int, mat>> dq_parts, dkv_parts;  // (other slice, gradient)
    std::vector<gradient_return> returns;
    for (int r = 0; r <= R; ++r) {
      at.round = r;
      const transfers& t = plan_.moves[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)];
      std::vector<std::pair<rt::event, std::string>> wait;
      const mat *q_in = nullptr, *kv_in = nullptr;
      std::vector<const mat*> dq_in, dkv_in;
      for (const int src : t.recv_q_src) {
        mat& in = keep(p, mat(per(), bundle.cols()));
        q_in = &in;
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, q_chan)), from("Q", src));
      }
      for (const int src : t.recv_kv_src) {
        mat& in = keep(p, mat(per(), kv_mine.cols()));
        kv_in = &in;
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, kv_chan)), from("KV", src));
      }
      for (const int src : t.recv_o_src) {
        mat& in = keep(p, mat(per(), dqc + 1));
        dq_in.push_back(&in);
        wait.emplace_back(comm.irecv(span_of(in), src, tag(r, ret_chan)), from("dQ", src));
      }
      // dK/dV come back the round after a task that pulled this rank's KV.
      if (r > 0)
        for (const int dst :
             plan_.moves[static_cast<std::size_t>(r - 1)][static_cast<std::size_t>(p)]
                 .send_kv_dst) {
          mat& in = keep(p, mat(per(), dkc + dvc + 1));
          dkv_in.push_back(&in);
          wait.emplace_back(comm.irecv(span_of(in), dst, tag(r, ret_kv_chan)), from("dKV", dst));
        }
      for (const int dst : t.send_q_dst)
        wait.emplace_back(comm.isend(span_of(bundle), dst, tag(r, q_chan)), to("Q", dst));
      for (const int dst : t.send_kv_dst)
        wait.emplace_back(comm.isend(span_of(kv_mine), dst, tag(r, kv_chan)), to("KV", dst));
      for (const gradient_return& x : returns)
        wait.emplace_back(comm.isend(span_of(*x.packed), x.to, tag(r, x.ch)),
                          to(x.ch == ret_chan ? "dQ" : "dKV", x.to));
      await(wait, p, r, "backward");
      returns.clear();
      for (const mat* m : dq_in)
        dq_parts.emplace_back(static_cast<int>((*m)(0, dqc)), m->leftCols(dqc));
      for (const mat* m : dkv_in)
        dkv_parts.emplace_back(static_cast<int>((*m)(0, dkc + dvc)), m->leftCols(dkc + dvc));
      if (r == R) break;
      const int x = plan_.run[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)];
      if (x < 0) continue;
      if (opt_.on_task) opt_.on_task(p, r, true);
      const cp_task task = plan_.tasks[static_cast<std::size_t>(x)];
      const mat& qb = task.q == p ? bundle : arrived(q_in, "Q");
      const mat& kv = task.kv == p ? kv_mine : arrived(kv_in, "KV");
      backward_task(p, task, qb, kv, dq_parts, dkv_parts, returns);
    }
    sum_gradients(p, std::move(dq_parts), std::move(dkv_parts));
  }

  /// Where a gradient computed for another rank goes: to `to` on `ch`, the gradient's rows then
  /// the other slice's number last.
  struct gradient_return {
    int to = 0;
    channel ch = ret_chan;
    const mat* packed = nullptr;
  };

  /// Rank p's task of the backward on the query bundle `qb` (Q, dO, lse, D) and key/values `kv`:
  /// the gradients of its own slices kept, the others' packed to return the round after.
  void backward_task(int p, const cp_task& task, const mat& qb, const mat& kv,
                     std::vector<std::pair<int, mat>>& dq_parts,
                     std::vector<std::pair<int, mat>>& dkv_parts,
                     std::vector<gradient_return>& returns) {
    const int dqc = static_cast<int>(q_[0].cols()), dkc = static_cast<int>(k_[0].cols()),
              dvc = static_cast<int>(v_[0].cols());
    std::vector<T> lse(static_cast<std::size_t>(per())), D(lse.size());
    for (int a = 0; a < per(); ++a) {
      lse[static_cast<std::size_t>(a)] = qb(a, dqc + dvc);
      D[static_cast<std::size_t>(a)] = qb(a, dqc + dvc + 1);
    }
    mat g_q, g_k, g_v;
    nn::attend_backward<T>(qb.leftCols(dqc), kv.leftCols(dkc), kv.rightCols(dvc),
                           qb.middleCols(dqc, dvc), lse, D, attends(task.q, task.kv), g_q, g_k,
                           g_v);
    if (task.q == p) {
      dq_parts.emplace_back(task.kv, std::move(g_q));
    } else {
      mat& packed = keep(p, mat(per(), dqc + 1));
      packed << g_q, mat::Constant(per(), 1, static_cast<T>(task.kv));
      returns.push_back({task.q, ret_chan, &packed});
    }
    mat g_kv(per(), dkc + dvc);
    g_kv << g_k, g_v;
    if (task.kv == p) {
      dkv_parts.emplace_back(task.q, std::move(g_kv));
    } else {
      mat& packed = keep(p, mat(per(), dkc + dvc + 1));
      packed << g_kv, mat::Constant(per(), 1, static_cast<T>(task.q));
      returns.push_back({task.kv, ret_kv_chan, &packed});
    }
  }

  /// Rank p's dQ, dK, dV: its parts summed in slice order, the same sums whatever order the
  /// parts arrived in.
  void sum_gradients(int p, std::vector<std::pair<int, mat>> dq_parts,
                     std::vector<std::pair<int, mat>> dkv_parts) {
    const int dqc = static_cast<int>(q_[0].cols()), dkc = static_cast<int>(k_[0].cols()),
              dvc = static_cast<int>(v_[0].cols());
    const auto by_slice = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::sort(dq_parts.begin(), dq_parts.end(), by_slice);
    std::sort(dkv_parts.begin(), dkv_parts.end(), by_slice);
    mat dq = mat::Zero(per(), dqc), dkv = mat::Zero(per(), dkc + dvc);
    for (const auto& part : dq_parts) dq += part.second;
    for (const auto& part : dkv_parts) dkv += part.second;
    dq_[static_cast<std::size_t>(p)] = dq;
    dk_[static_cast<std::size_t>(p)] = dkv.leftCols(dkc);
    dv_[static_cast<std::size_t>(p)] = dkv.rightCols(dvc);
  }

  dense_mask mask_;
  std::vector<int> order_;
  round_assignment plan_;
  cp_attention_options opt_;
  std::vector<mat> q_, k_, v_, do_, dq_, dk_, dv_;
  std::vector<std::deque<mat>> arena_;  // per rank: every buffer handed to the world
  std::atomic<bool> failed_{false};
  std::exception_ptr first_failure_;
  std::vector<nn::partial<T>> out_;
};

/// Context-parallel attention in single precision, the common case.
using cp_attention = basic_cp_attention<float>;

}  // namespace weft::cp
