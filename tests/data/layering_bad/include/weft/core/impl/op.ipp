// A body below core including a layer above it: the layering check reads .ipp files too.
#pragma once

#include <weft/sim/loop.hpp>
