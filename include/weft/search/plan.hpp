// Deprecated: search/step_order.hpp (`search::plan` is now `search::step_order`).
#pragma once

#include <weft/search/step_order.hpp>
