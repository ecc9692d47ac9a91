// Everything of weft that needs nothing beyond the `weft::weft` target (the standard library):
// schedules and their vocabulary, the checker, the generators, transfers, the
// stream program, both simulators, metrics, calibration, PyTorch CSV, text, SVG pictures. The
// Chrome trace (weft/io/chrome_trace.hpp, nlohmann-json) is included where it is written.
// The rest comes in by part, each with the target that carries its dependencies:
//   weft/runtime.hpp  streams, the in-process backend, the runner (weft::weft: threads)
//   weft/exec.hpp     the built-in models and executors, reference kernels (weft::exec: Eigen)
//   weft/cp.hpp       adaptive context parallelism (weft::nn: Eigen)
// Single headers can be included on their own to keep builds fast.
#pragma once

#include <weft/core/binding.hpp>
#include <weft/core/kinds.hpp>
#include <weft/core/link.hpp>
#include <weft/core/op.hpp>
#include <weft/generators/dualpipe.hpp>
#include <weft/generators/interleaved.hpp>
#include <weft/generators/one_f_one_b.hpp>
#include <weft/generators/registry.hpp>
#include <weft/generators/zero_bubble_v.hpp>
#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/io/svg.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/live_activations.hpp>
#include <weft/schedule/lower.hpp>
#include <weft/schedule/model.hpp>
#include <weft/schedule/program.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/semantics.hpp>
#include <weft/schedule/text.hpp>
#include <weft/schedule/transfers.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/sim/calibrate.hpp>
#include <weft/sim/contract.hpp>
#include <weft/sim/cost.hpp>
#include <weft/sim/metrics.hpp>
#include <weft/sim/shared_workers.hpp>
#include <weft/sim/simulate.hpp>
