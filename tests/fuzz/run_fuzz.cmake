# Runs one libFuzzer harness for a bounded time from a temporary copy of its
# checked-in corpus (cmake -P; used by the ctest tests of fuzz.cmake).
#   -DHARNESS=<executable> -DCORPUS=<dir> -DREGRESSIONS=<dir> -DWORK=<dir>
#   -DSECONDS=<n> [-DDICT=<libFuzzer dictionary>]
# First every input under REGRESSIONS (inputs that once found a bug) runs
# once; then the harness fuzzes for SECONDS. Prints the number of executions
# (libFuzzer's stat::number_of_executed_units); fails on any crash, leaving
# the input under WORK/artifacts/.
foreach(var HARNESS CORPUS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake: -D${var}=... is required")
  endif()
endforeach()
get_filename_component(name "${HARNESS}" NAME)

# Sanitizer settings unless the caller has its own: impossible sizes are part
# of the inputs (let the allocator say no), and any report is fatal.
if(NOT DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "allocator_may_return_null=1:detect_leaks=1:abort_on_error=1")
endif()
if(NOT DEFINED ENV{UBSAN_OPTIONS})
  set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")

if(DEFINED REGRESSIONS AND IS_DIRECTORY "${REGRESSIONS}")
  file(GLOB inputs "${REGRESSIONS}/*")
  foreach(input ${inputs})
    execute_process(COMMAND "${HARNESS}" "${input}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      message("${out}")
      message(FATAL_ERROR "${name}: the regression input ${input} fails (exit ${rc})")
    endif()
  endforeach()
  list(LENGTH inputs count)
  message(STATUS "${name}: ${count} regression input(s) pass")
endif()

if(IS_DIRECTORY "${CORPUS}")
  file(GLOB seeds "${CORPUS}/*")
  if(seeds)
    file(COPY ${seeds} DESTINATION "${WORK}/corpus")
  endif()
endif()

set(dict_arg "")
if(DEFINED DICT AND EXISTS "${DICT}")
  set(dict_arg "-dict=${DICT}")
endif()
string(TIMESTAMP start "%s")
execute_process(
  COMMAND "${HARNESS}" -max_total_time=${SECONDS} -timeout=30 -rss_limit_mb=4096
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${dict_arg} "${WORK}/corpus"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(TIMESTAMP stop "%s")
math(EXPR elapsed "${stop} - ${start}")
file(WRITE "${WORK}/fuzz.log" "${out}")

set(executions "?")
if(out MATCHES "stat::number_of_executed_units: ([0-9]+)")
  set(executions "${CMAKE_MATCH_1}")
endif()
set(corpus_size "?")
if(out MATCHES "#[0-9]+[ \t]+DONE[ \t]+cov: [0-9]+ ft: [0-9]+ corp: ([0-9]+)")
  set(corpus_size "${CMAKE_MATCH_1}")
endif()
message(STATUS "${name}: ${executions} executions in ${elapsed} s (corpus ${corpus_size} inputs)")
if(NOT rc EQUAL 0)
  string(LENGTH "${out}" len)
  if(len GREATER 12000)
    math(EXPR from "${len} - 12000")
    string(SUBSTRING "${out}" ${from} -1 out)
  endif()
  message("${out}")
  file(GLOB crashes "${WORK}/artifacts/*")
  message(FATAL_ERROR "${name} failed (exit ${rc}); input(s): ${crashes}; full log: ${WORK}/fuzz.log")
endif()
