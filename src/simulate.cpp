// weft::compiled: the event simulator and the step's figures (sim/simulate.hpp, sim/metrics.hpp)
// for both time types, so that a trainer's file that simulates compiles neither.
#include <weft/sim/metrics.hpp>
#include <weft/sim/simulate.hpp>

#ifndef WEFT_SEPARATE_COMPILATION
#error "weft::compiled is built with WEFT_SEPARATE_COMPILATION"
#endif

namespace weft::detail {
template basic_timeline<units> simulate_at_run_time(const program&, const basic_cost_model<units>&,
                                                    const basic_sim_options<units>&);
template basic_timeline<seconds> simulate_at_run_time(const program&,
                                                      const basic_cost_model<seconds>&,
                                                      const basic_sim_options<seconds>&);
template basic_step_metrics<units> measure_at_run_time(const program&,
                                                       const basic_timeline<units>&);
template basic_step_metrics<seconds> measure_at_run_time(const program&,
                                                         const basic_timeline<seconds>&);
}  // namespace weft::detail
