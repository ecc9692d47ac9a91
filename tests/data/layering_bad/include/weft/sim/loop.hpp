#pragma once
#include <weft/rt/picture.hpp>
