# Runs EXE with ARGS; passes only if it exits 0 and its output (stdout and stderr together, as ctest
# reads it) matches MATCH.
string(REPLACE "@@" ";" ARGS "${ARGS}")
string(REPLACE "@@" ";" MATCH "${MATCH}")
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit 0, got ${rc}\noutput: ${out}")
endif()
if(NOT out MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'\noutput: ${out}")
endif()
