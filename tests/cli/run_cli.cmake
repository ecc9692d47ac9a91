# Runs the weft tool with ARGS (a ;-list), then checks its exit code and output.
#   cmake -DWEFT=<exe> -DARGS=<list> -DRC=<code> -DEXPECT=<regex> -P run_cli.cmake
execute_process(COMMAND ${WEFT} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "weft ${ARGS}: exit code ${rc}, expected ${RC}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "weft ${ARGS}: output does not match '${EXPECT}':\n${out}${err}")
endif()
