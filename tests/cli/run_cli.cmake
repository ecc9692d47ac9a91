# Runs the weft tool with ARGS (a ;-list), then checks its exit code and output.
#   cmake -DWEFT=<exe> -DARGS=<list> -DRC=<code> -DEXPECT=<regex> -P run_cli.cmake
# stderr's lines must each start "weft" at most once as a prefix: no "weft: ...weft: ".
execute_process(COMMAND ${WEFT} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "weft ${ARGS}: exit code ${rc}, expected ${RC}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "weft ${ARGS}: output does not match '${EXPECT}':\n${out}${err}")
endif()
# A failure says "weft:" once per line, never "weft: weft:" from a message wrapped twice.
if("${err}" MATCHES "weft: [^\n]*weft: ")
  message(FATAL_ERROR "weft ${ARGS}: a line says 'weft:' twice:\n${err}")
endif()
