// Adaptive context parallelism: plan a causal mask for 4 ranks.
#include <weft/cp.hpp>

int main() {
  const auto plan = weft::cp::adapt_layout(weft::cp::masks::causal(1024), 4, {.coarse = 256});
  return plan.token_order().size() == 1024 ? 0 : 1;
}
