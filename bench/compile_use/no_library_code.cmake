# Fails when an object file defines code that weft::compiled provides: a generator's steps, the
# simulator's or the measure's work, the search, lowering, the checker, the transfers' lowering.
# Such code in a trainer's object means a constexpr function was compiled for run time in the
# trainer's file (its dispatch to the compiled copy is missing), which costs that file seconds of
# build time.
execute_process(COMMAND ${NM} --defined-only -C ${OBJECTS} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${OBJECTS}")
endif()
foreach(pattern "weft::gen::dualpipev\\(" "weft::gen::one_f_one_b\\(" "weft::gen::pipeline_builder" "weft::detail::simulated<"
                "weft::detail::measured<" "weft::search::find_schedule<"
                "weft::search::list_schedule<" "weft::detail::lower\\("
                "weft::detail::checker::" "weft::detail::add_transfers")
  string(REGEX MATCH "[^\n]*${pattern}[^\n]*" found "${symbols}")
  if(found)
    message(FATAL_ERROR "the trainer's object compiles library code: ${found}")
  endif()
endforeach()
# And it calls the library's copies: code inlined at -O2 would leave no symbol above, but then
# the object would not need these either.
execute_process(COMMAND ${NM} --undefined-only -C ${OBJECTS} OUTPUT_VARIABLE calls
                RESULT_VARIABLE rc)
foreach(pattern "weft::detail::compiled_steps<[^\n]*weft::gen::dualpipev"
                "weft::detail::compiled_steps<[^\n]*weft::gen::one_f_one_b"
                "weft::detail::simulate_at_run_time<" "weft::detail::measure_at_run_time<"
                "weft::search::find_schedule<" "weft::detail::lower_at_run_time")
  string(REGEX MATCH "${pattern}" at "${calls}")
  if(NOT at)
    message(FATAL_ERROR "the trainer's object does not call the library's ${pattern}")
  endif()
endforeach()
message(STATUS "no library code in ${OBJECTS}, and it calls the library's")
