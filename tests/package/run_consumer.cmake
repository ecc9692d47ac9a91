# Builds and runs a tiny consumer of weft. MODE=install: `cmake --install` weft into a fresh
# prefix, then find_package(weft CONFIG REQUIRED [COMPONENTS ...]). MODE=subdirectory:
# add_subdirectory(weft). COMPONENT: core (weft::weft, no Eigen) or exec. FIND_COMPONENTS: what
# find_package asks for; EXTRA: more configure arguments (;-separated); EXPECT_ERROR: the
# consumer's configuration must fail with a message matching this regex.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()

set(consumer "${CMAKE_CURRENT_LIST_DIR}/consumer")
if(NOT COMPONENT)
  set(COMPONENT core)
endif()
set(args -DCMAKE_CXX_COMPILER=${CXX} -DWEFT_COMPONENT=${COMPONENT}
         "-DWEFT_FIND_COMPONENTS=${FIND_COMPONENTS}" ${EXTRA})
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install "${WEFT_BUILD}" --prefix "${WORK}/prefix")
  list(APPEND args "-DCMAKE_PREFIX_PATH=${WORK}/prefix" -DWEFT_CONSUME=package)
else()
  list(APPEND args "-DWEFT_SOURCE=${WEFT_SOURCE}" -DWEFT_CONSUME=subdirectory)
endif()
if(EXPECT_ERROR)
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${consumer}" -B "${WORK}/build" ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the consumer configured, but should have failed with: ${EXPECT_ERROR}")
  endif()
  if(NOT "${out}${err}" MATCHES "${EXPECT_ERROR}")
    message(FATAL_ERROR "the consumer failed without saying `${EXPECT_ERROR}`:\n${out}\n${err}")
  endif()
  message(STATUS "refused as expected: ${EXPECT_ERROR}")
  return()
endif()
run(${CMAKE_COMMAND} -S "${consumer}" -B "${WORK}/build" ${args})
run(${CMAKE_COMMAND} --build "${WORK}/build")
run("${WORK}/build/consumer")
message(STATUS "consumer built and ran (${MODE}, ${COMPONENT})")
