#pragma once
#include <weft/io/picture.hpp>
