// MPI for the life of a process: initialised at the thread level weft's communicator wants,
// finalised at the end, aborted as a whole job when a run fails — and, while it lives, a launcher
// ending the job (mpirun's SIGTERM when another rank exited or was killed) becomes a fault the
// communicators report, so that a rank says what it was waiting at before it goes.
#pragma once

#include <mpi.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include <weft/core/error.hpp>

namespace weft::mpi {

/// How the communicator calls MPI. `automatic`: from the callers' threads when MPI provides
/// MPI_THREAD_MULTIPLE, else through one progress thread that owns every MPI call.
enum class threading : unsigned char { automatic, multiple, progress_thread };

/// An MPI call that failed, with MPI's own description of the error: a failed run, as the
/// runtime's own (`run_error`), so that a program handles both in one place.
struct mpi_error : run_error {
  using run_error::run_error;
};

namespace detail {
inline std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len));
}
/// Throws `mpi_error` naming `what` unless `code` is MPI_SUCCESS.
inline void check(int code, const char* what) {
  if (code != MPI_SUCCESS)
    throw mpi_error(std::string("weft: mpi: ") + what + ": " + error_string(code));
}
/// Set from the SIGTERM handler; lock-free, so the handler may store it.
inline std::atomic<bool> launcher_ending{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" inline void on_sigterm(int) { launcher_ending.store(true); }
}  // namespace detail

/// MPI initialised for this process (or adopted, when the program initialised it already).
class environment {
 public:
  struct options {
    threading threads = threading::automatic;
    /// Catch the launcher's SIGTERM: communicators then report the job is ending (naming the
    /// op each rank waits at) instead of dying silently. Open MPI sends it to every rank when
    /// one exits or is killed, and kills a second later.
    bool report_termination = true;
  };

  environment(int* argc, char*** argv, options opt) : opt_(opt) {
    int initialised = 0;
    detail::check(MPI_Initialized(&initialised), "MPI_Initialized");
    if (initialised) {
      detail::check(MPI_Query_thread(&provided_), "MPI_Query_thread");
    } else {
      const int want =
          opt.threads == threading::progress_thread ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
      detail::check(MPI_Init_thread(argc, argv, want, &provided_), "MPI_Init_thread");
      owned_ = true;
    }
    if (opt.threads == threading::multiple && provided_ < MPI_THREAD_MULTIPLE) {
      if (owned_) MPI_Finalize();
      throw mpi_error(
          "weft: mpi: MPI_THREAD_MULTIPLE was asked for, the MPI library provides "
          "level " +
          std::to_string(provided_));
    }
    if (provided_ < MPI_THREAD_SERIALIZED) {
      if (owned_) MPI_Finalize();
      throw mpi_error("weft: mpi: the MPI library provides thread level " +
                      std::to_string(provided_) +
                      "; weft's progress thread needs at least MPI_THREAD_SERIALIZED");
    }
    // Errors come back as codes, and become exceptions and faults: nothing aborts behind the
    // caller's back.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (opt.report_termination) previous_ = std::signal(SIGTERM, detail::on_sigterm);
  }
  environment(int* argc, char*** argv) : environment(argc, argv, options{}) {}
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  ~environment() {
    if (opt_.report_termination) std::signal(SIGTERM, previous_ == SIG_ERR ? SIG_DFL : previous_);
    if (owned_) MPI_Finalize();
  }

  /// The thread level MPI provides (MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE).
  int thread_level() const noexcept { return provided_; }
  threading threads() const noexcept {
    if (opt_.threads != threading::automatic) return opt_.threads;
    return provided_ >= MPI_THREAD_MULTIPLE ? threading::multiple : threading::progress_thread;
  }
  int world_rank() const {
    int r = 0;
    detail::check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
    return r;
  }
  int world_size() const {
    int n = 0;
    detail::check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
    return n;
  }

  /// Ends every rank of the job with `code` (what a failed run does: its peers may be waiting
  /// in MPI for data that never comes, so a clean finalise is not an option).
  [[noreturn]] static void abort(int code) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; should it, the process still ends
  }
  /// True once the launcher has started ending the job.
  static bool launcher_ending() noexcept { return detail::launcher_ending.load(); }

 private:
  options opt_;
  int provided_ = 0;
  bool owned_ = false;
  void (*previous_)(int) = SIG_DFL;
};

}  // namespace weft::mpi
