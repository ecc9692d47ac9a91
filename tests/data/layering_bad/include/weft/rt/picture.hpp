#pragma once
#include <weft/sim/loop.hpp>
