// A performance contract: 1F1B on 4 ranks with 8 micro-batches, forward 1 and backward 2 units,
// takes (8 + 4 - 1) x 3 = 33 units; a bound of 32 is broken, and the compiler says by how much.
#include <weft/generators/one_f_one_b.hpp>
#include <weft/sim/contract.hpp>
using namespace weft;

constexpr auto costs = unit_cost_model::pipeline({.F = 1, .B = 2});
#ifdef WEFT_KO
constexpr double bound = 32;
#else
constexpr double bound = 33;
#endif
static_assert(kept<contract(one_f_one_b({.ranks = 4, .micro = 8}), costs, {.makespan = bound})>);
int main() {}
