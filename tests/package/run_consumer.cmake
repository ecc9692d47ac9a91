# Builds and runs a tiny consumer of weft. MODE=install: `cmake --install` weft into a fresh
# prefix, then find_package(weft CONFIG REQUIRED). MODE=subdirectory: add_subdirectory(weft).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()

set(consumer "${CMAKE_CURRENT_LIST_DIR}/consumer")
set(args -DCMAKE_CXX_COMPILER=${CXX})
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install "${WEFT_BUILD}" --prefix "${WORK}/prefix")
  list(APPEND args "-DCMAKE_PREFIX_PATH=${WORK}/prefix" -DWEFT_CONSUME=package)
else()
  list(APPEND args "-DWEFT_SOURCE=${WEFT_SOURCE}" -DWEFT_CONSUME=subdirectory)
endif()
run(${CMAKE_COMMAND} -S "${consumer}" -B "${WORK}/build" ${args})
run(${CMAKE_COMMAND} --build "${WORK}/build")
run("${WORK}/build/consumer")
message(STATUS "consumer built and ran (${MODE})")
