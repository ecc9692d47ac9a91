// Deprecated: schedule/live_activations.hpp (plan/memory.hpp is the job's bytes).
#pragma once

#include <weft/schedule/live_activations.hpp>
