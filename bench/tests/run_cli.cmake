# One host test of tgv-bench's command line (no GPU: every case here exits before
# the first CUDA call). Run as
#   cmake -DBENCH=<tgv-bench> -DARGS=<args, separated by |> -DRC=<exit status>
#         -DREGEX=<what stdout + stderr must match> [-DMIN_SHAPES=<n>] -P run_cli.cmake
# MIN_SHAPES: the output's "# <count> shapes" line (--list-shapes) must say at least n.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${BENCH}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "tgv-bench ${args}: exit status ${rc}, expected ${RC}; output:\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "tgv-bench ${args}: output does not match '${REGEX}':\n${all}")
endif()
if(DEFINED MIN_SHAPES)
  if(NOT all MATCHES "# ([0-9]+) shapes")
    message(FATAL_ERROR "tgv-bench ${args}: no '# <count> shapes' line:\n${all}")
  endif()
  if(CMAKE_MATCH_1 LESS MIN_SHAPES)
    message(FATAL_ERROR "tgv-bench ${args}: ${CMAKE_MATCH_1} shapes, expected at least ${MIN_SHAPES}")
  endif()
endif()
message(STATUS "tgv-bench ${args}: exit ${rc} as expected")
