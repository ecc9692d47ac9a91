// AMPipe's switches as MindSpeed's ampipe note names them, checked by the note's rules and
// turned into what weft's generators take: the sequence splits of a micro-batch, the pieces of
// each split's routed-expert path, and the overlap options that order them.
#pragma once

#include <string>

#include <weft/core/error.hpp>
#include <weft/generators/stage_ops.hpp>

namespace weft {

/// The training configuration the note's rules speak of, and AMPipe's switches.
struct ampipe_config {
  long long seq = 0;  ///< --seq-length: tokens per micro-batch; 0: not known, not checked
  int tp = 1;         ///< tensor-parallel size
  int cp = 1;         ///< context-parallel size
  bool sequence_parallel = false;
  int local_experts = 1;  ///< routed experts per expert-parallel rank

  int degree = 1;              ///< --ampipe-degree
  bool tp_sp_overlap = false;  ///< --ampipe-tp-sp-comm-overlap
  bool pipe_experts = false;   ///< --use-pipe-experts
  int multi_data = 1;          ///< --pipe-experts-multi-data N
  bool multi_stream = false;   ///< --pipe-experts-multi-stream
};

/// What a configuration comes to in weft's terms.
struct ampipe_layout {
  int splits = 1;  ///< model_desc::splits (the AMPipe degree)
  int pieces = 1;  ///< model_desc::pieces (per split, of the routed-expert path)
  overlap_options overlap;
  bool pipe_experts = false;  ///< did pipe-experts apply (MindSpeed turns it off with a warning)
  std::string warning;        ///< why it did not, if it was asked for
};

/// Checks `c` against the note's rules and lays it out. Throws `config_error` naming the rule:
///  - the sequence divides into the degree (by 2 * degree * cp with context parallelism, so
///    each rank's two zig-zag halves split evenly; by degree * tp with sequence parallelism);
///  - pipe-experts multi-stream needs sequence parallelism when there is tensor parallelism
///    (MindSpeed's second stream carries the all-gather SP brings; with tp = 1 there is none);
///  - sizes in range.
/// MindSpeed allows only degree 2 with context parallelism, because its CP path hard-codes the
/// two zig-zag halves as the two chunks; weft's chunks are query rows of any mask (exact for any
/// degree, tests/unit/test_ampipe.cpp), so it takes any degree the sequence divides into.
/// Pipe-experts applies when multi-data N is a multiple of the degree D and N > D, or N >= D with
/// multi-stream; otherwise it is off and `warning` says why (the note's behaviour, without
/// MindSpeed's precedence slip that applied the second case without --use-pipe-experts). Each
/// split's expert path then runs in N / D pieces, times the local experts with tp-sp overlap
/// (its all-to-alls are per chunk and local expert).
inline ampipe_layout resolve(const ampipe_config& c) {
  const auto bad = [](const std::string& why) { throw config_error("weft: ampipe: " + why); };
  const std::string most = std::to_string(limits::parts);
  if (c.degree < 1 || c.degree > limits::parts) bad("--ampipe-degree must be in [1, " + most + "]");
  if (c.seq < 0) bad("--seq-length must be >= 0 (0: not known)");
  if (c.tp < 1 || c.cp < 1) bad("tp and cp must be >= 1");
  if (c.local_experts < 1) bad("local experts must be >= 1");
  if (c.multi_data < 1 || c.multi_data > limits::parts)
    bad("--pipe-experts-multi-data must be in [1, " + most + "]");
  const std::string S = std::to_string(c.seq), D = std::to_string(c.degree);
  const bool known = c.seq > 0;
  if (known && c.seq % c.degree != 0)
    bad("the sequence length (" + S + ") must be divisible by --ampipe-degree (" + D + ")");
  if (known && c.cp > 1 && c.seq % (2LL * c.degree * c.cp) != 0)
    bad("with context parallelism the sequence length (" + S + ") must be divisible by 2 x " +
        "degree x cp (" + std::to_string(2LL * c.degree * c.cp) + ")");
  if (known && c.sequence_parallel && c.seq % (static_cast<long long>(c.degree) * c.tp) != 0)
    bad("with sequence parallelism the sequence length (" + S + ") must be divisible by " +
        "degree x tp (" + std::to_string(static_cast<long long>(c.degree) * c.tp) + ")");
  if (c.multi_stream && c.tp > 1 && !c.sequence_parallel)
    bad("--pipe-experts-multi-stream needs --sequence-parallel");

  ampipe_layout out;
  out.splits = c.degree;
  out.overlap.pipeline_splits = c.degree > 1;
  if (c.pipe_experts) {
    const int N = c.multi_data;
    const bool divides = N % c.degree == 0;
    out.pipe_experts = divides && (N > c.degree || (c.multi_stream && N >= c.degree));
    if (out.pipe_experts) {
      out.pieces = N / c.degree;
      out.overlap.multi_stream_all_to_all = c.multi_stream;
    } else {
      out.warning = "weft: ampipe: pipe-experts is not applied: --pipe-experts-multi-data (" +
                    std::to_string(N) + ") must be a multiple of --ampipe-degree (" + D +
                    ") and larger than it, or at least it with --pipe-experts-multi-stream";
    }
  }
  // In 64 bits: local experts are any positive int, and their product with the pieces must not
  // wrap into range (2^31 experts gave -4 pieces, accepted).
  const long long pieces =
      static_cast<long long>(out.pieces) * (c.tp_sp_overlap ? c.local_experts : 1);
  if (out.splits * pieces > limits::parts)
    bad("degree x pieces (" + std::to_string(out.splits * pieces) +
        (c.tp_sp_overlap ? ", with tp-sp overlap a piece per local expert" : "") +
        ") must be at most " + most);
  out.pieces = static_cast<int>(pieces);
  return out;
}

}  // namespace weft
