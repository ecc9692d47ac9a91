# Fails when an object file defines code that weft::compiled provides: a generator's steps, the
# simulator's or the measure's work, the search, lowering. Such code in a trainer's object means
# a constexpr function was compiled for run time in the trainer's file (its dispatch to the
# compiled copy is missing), which costs that file seconds of build time.
execute_process(COMMAND ${NM} --defined-only -C ${OBJECTS} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${OBJECTS}")
endif()
foreach(pattern "weft::gen::build_" "weft::gen::pipeline_builder" "weft::detail::simulated<"
                "weft::detail::measured<" "weft::search::find_schedule<"
                "weft::search::list_schedule<" "weft::detail::lower\\(")
  string(REGEX MATCH "[^\n]*${pattern}[^\n]*" found "${symbols}")
  if(found)
    message(FATAL_ERROR "the trainer's object compiles library code: ${found}")
  endif()
endforeach()
message(STATUS "no library code in ${OBJECTS}")
