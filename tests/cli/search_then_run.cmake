# weft search --out FILE.csv, then weft run --schedule-file FILE.csv: the plan found (strictly
# better than every generator here: transfers of 1 under 1F1B's memory) runs on the tiny dense
# model with the serial run's gradients exactly.
execute_process(COMMAND ${WEFT} search --pp 4 --micro 8 --cost F=1,B=2,W=1,P2P=1 --max-live 4
                        --evaluations 2000 --out ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft search failed (${rc}):\n${out}${err}")
endif()
if(NOT out MATCHES "faster than the best generator")
  message(FATAL_ERROR "the search found nothing better than the generators:\n${out}")
endif()
execute_process(COMMAND ${WEFT} run --schedule-file ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "max gradient relative error 0\n")
  message(FATAL_ERROR "weft run --schedule-file failed (${rc}):\n${out}${err}")
endif()
