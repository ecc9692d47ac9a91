// Rule 6: V placement with three chunks per rank is impossible (it pairs exactly two).
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
using namespace weft;

#ifdef WEFT_KO
constexpr model_desc m{.ranks = 1, .chunks_per_rank = 3, .place = placement::vee};
#else
constexpr model_desc m{.ranks = 1, .chunks_per_rank = 1};
#endif
static_assert(proven<diagnose(with_model(slots(block(F, mb{0}), block(B, mb{0})), m))>);
int main() {}
