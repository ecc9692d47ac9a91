// The runtime a model of one's own runs on: streams on a worker pool, the in-process
// communication backend, and the runner that executes a lowered stream program through the one
// semantics (docs/runtime.md). Needs the `weft::weft` target only (threads; no Eigen).
#pragma once

#include <weft/schedule/run_measures.hpp>
#include <weft/exec/runner.hpp>
#include <weft/rt/clock.hpp>
#include <weft/rt/comm.hpp>
#include <weft/rt/inproc.hpp>
#include <weft/rt/stream.hpp>
#include <weft/rt/timer.hpp>
