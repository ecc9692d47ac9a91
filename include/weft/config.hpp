// Header-only by default. Defining WEFT_SEPARATE_COMPILATION (linking `weft::compiled`,
// `weft::nn_compiled` or `weft::exec_compiled` does) takes the heavy run-time parts from libraries
// compiled once instead: the generators, the legality check, lowering (the check and the program
// builder), the transfers' lowering, the event simulator and the step's figures, the schedule
// search and the runner's loop from `weft::compiled`; the reference kernels (attention, the
// norms, the router, the expert MLP) and CP's sequence re-mapping from `weft::nn_compiled`; the
// MoE layer, the built-in models and their executors from `weft::exec_compiled` (the templates
// for float and double). A file that uses them then generates no code for them.
// The constexpr ones (generators, `check`, `lower`, `with_transfers`, `simulate`, `measure`)
// keep their bodies for constant evaluation and dispatch on `std::is_constant_evaluated()` to the
// compiled function at run time: the bodies are still parsed (and the templates instantiated),
// but neither optimised nor emitted — and g++ cannot try to evaluate a run-time call with
// constant arguments at compile time.
#pragma once

#ifdef WEFT_SEPARATE_COMPILATION
#define WEFT_DECL
#else
#define WEFT_DECL inline
#endif
