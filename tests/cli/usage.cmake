# Command-line mistakes: one "commstack: error:" line naming what was wrong, and status 2 like any
# unusable input (CLI11's own codes were 106-114, and a mistyped option read "--cluster is required").
function(usage_expect)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;MATCH" "ARGS")
  commstack_cli_error_test(NAME ${T_NAME} ARGS ${T_ARGS} MATCH "${T_MATCH}" EXIT 2)
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
commstack_cli_test(NAME usage_help_is_success ARGS train --help MATCH "Usage: .*commstack train")
