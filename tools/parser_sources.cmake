# The command-line parser's sources, one list for the tool (tools/CMakeLists.txt) and the fuzzers'
# instrumented copy (tests/fuzz), which builds without the tool: the parser, the shared option
# groups, the failure map, and each subcommand's definition and checks.
set(weft_cli_parser_sources)
foreach(file cli.cpp failure.cpp option_groups.cpp
             commands/generate_cli.cpp commands/check_cli.cpp commands/verify_cli.cpp
             commands/simulate_cli.cpp commands/compare_cli.cpp commands/run_cli.cpp
             commands/tp2d_cli.cpp commands/plan_cli.cpp commands/plan_megatron_cli.cpp
             commands/search_cli.cpp
             commands/cp_rounds_cli.cpp)
  list(APPEND weft_cli_parser_sources ${CMAKE_CURRENT_LIST_DIR}/${file})
endforeach()
