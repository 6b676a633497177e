# Runs EXE with ARGS; passes only if it exits non-zero, does not crash (signal), and stderr matches MATCH.
# The caller escapes ';' to pass the list through -D; turn it back into a list.
string(REPLACE "\\;" ";" ARGS "${ARGS}")
string(REPLACE "@@" ";" ARGS "${ARGS}")
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT rc MATCHES "^[0-9]+$" OR rc GREATER 127)
  message(FATAL_ERROR "command crashed or timed out (${rc})\nstderr: ${err}")
endif()
if(NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "stderr does not match '${MATCH}'\nstderr: ${err}")
endif()
