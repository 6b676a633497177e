# Command-line mistakes: one "commstack: error:" line naming what was wrong, and status 2 like any
# unusable input (CLI11's own codes were 106-114, and a mistyped option read "--cluster is required").
function(usage_expect)
  cmake_parse_arguments(T "" "NAME;MATCH" "ARGS" ${ARGN})
  list(JOIN T_ARGS " " args)
  add_test(NAME cli.${T_NAME} COMMAND sh -c "$<TARGET_FILE:commstack> ${args} 2>&1; echo \"exit=$?\""
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.${T_NAME} PROPERTIES PASS_REGULAR_EXPRESSION "${T_MATCH}.*exit=2\n")
endfunction()
usage_expect(NAME usage_unknown_command ARGS nosuchverb
  MATCH "commstack: error: unknown command 'nosuchverb'; commands: topo, collective, validate")
usage_expect(NAME usage_no_command ARGS ""
  MATCH "commstack: error: a command is needed: topo, collective")
usage_expect(NAME usage_mistyped_option ARGS train --clsuter dgx-h100 --nodes 1
  MATCH "commstack: error: train: unexpected arguments --clsuter dgx-h100 .see commstack train --help.")
usage_expect(NAME usage_missing_value ARGS collective --cluster dgx-h100 --nodes
  MATCH "commstack: error: --nodes: expected a value after it")
usage_expect(NAME usage_missing_required ARGS train --nodes 1
  MATCH "commstack: error: --cluster is required")
add_test(NAME cli.usage_help_is_success COMMAND commstack train --help)
set_tests_properties(cli.usage_help_is_success PROPERTIES PASS_REGULAR_EXPRESSION "Usage: .*commstack train")
