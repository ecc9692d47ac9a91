// Header-only by default. Defining WEFT_SEPARATE_COMPILATION (linking `weft::exec_compiled`
// does) takes the executors' heavy parts — the runner's loop, the built-in models and their
// executors for float and double — from a compiled library instead: a file that runs them then
// parses their declarations only, and compiles in seconds rather than tens of seconds.
#pragma once

#ifdef WEFT_SEPARATE_COMPILATION
#define WEFT_DECL
#else
#define WEFT_DECL inline
#endif
