// Deprecated: io/svg.hpp (the pictures; schedule/timeline.hpp is the result type).
#pragma once

#include <weft/io/svg.hpp>
