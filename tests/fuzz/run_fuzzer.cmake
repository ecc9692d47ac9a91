# Runs a libFuzzer harness for SECONDS on a fresh corpus in WORK seeded from SEEDS; a finding
# fails the test and is left in WORK as crash-*/timeout-*/oom-* for regressions/.
#   cmake -DFUZZER=<exe> -DSEEDS=<dir> -DWORK=<dir> -DSECONDS=<n> -P run_fuzzer.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=20 -rss_limit_mb=2048
                        -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus ${SEEDS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${err}")
message("${FUZZER}: ${runs}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} found a failing input (left in ${WORK}):\n${err}")
endif()
