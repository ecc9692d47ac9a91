// The built-in models and their executors — dense pipeline stages and MoE layers with experts
// over expert-parallel replicas, gradients equal to a serial run — with the reference kernels
// they are made of, the optimizer, and everything in weft/weft.hpp and weft/runtime.hpp. Needs
// the `weft::exec` target (Eigen 3).
#pragma once

#include <weft/exec/dense_model.hpp>
#include <weft/exec/executor.hpp>
#include <weft/exec/moe_executor.hpp>
#include <weft/exec/moe_layer.hpp>
#include <weft/exec/moe_model.hpp>
#include <weft/exec/optimizer.hpp>
#include <weft/exec/run_result.hpp>
#include <weft/exec/seeded.hpp>
#include <weft/exec/serial.hpp>
#include <weft/nn/attention.hpp>
#include <weft/nn/experts.hpp>
#include <weft/nn/linear.hpp>
#include <weft/nn/norm.hpp>
#include <weft/nn/tensor.hpp>
#include <weft/runtime.hpp>
#include <weft/weft.hpp>
