// Header-only by default. Defining WEFT_SEPARATE_COMPILATION (linking `weft::compiled` or
// `weft::exec_compiled` does) takes the heavy run-time parts from libraries compiled once
// instead: lowering (the legality check and the program builder) and the runner's loop from
// `weft::compiled`; the built-in models and their executors for float and double from
// `weft::exec_compiled`. A file that uses them then parses their declarations only.
#pragma once

#ifdef WEFT_SEPARATE_COMPILATION
#define WEFT_DECL
#else
#define WEFT_DECL inline
#endif
