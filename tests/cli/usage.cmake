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
# A long value is echoed capped at 80 characters with its length, wherever the message was written
# (cli/main.cpp, common/error.hpp echo_value), and a name too long for the file system is an input
# error naming the flag, not an internal error (std::filesystem's ENAMETOOLONG).
string(REPEAT "x" 300 _usage_long)
string(REPEAT "x" 80 _usage_80)
usage_expect(NAME usage_long_value_capped ARGS collective --cluster dgx-h100 --op ${_usage_long}
  MATCH "commstack: error: --op: unknown collective '${_usage_80}\\.\\.\\. \\(300 characters\\)'; expected one of allreduce")
usage_expect(NAME usage_long_flag_equals_value_capped ARGS collective --cluster dgx-h100 --nodes=${_usage_long}
  MATCH "commstack: error: --nodes: '${_usage_80}\\.\\.\\. \\(300 characters\\)' is not a whole number")
usage_expect(NAME usage_long_command_capped ARGS ${_usage_long}
  MATCH "commstack: error: unknown command '${_usage_80}\\.\\.\\. \\(300 characters\\)'; commands:")
usage_expect(NAME usage_long_run_spec_file ARGS validate --cluster dgx-h100 --measured ${_usage_long}@nodes=2
  MATCH "commstack: error: ${_usage_80}\\.\\.\\. \\(300 characters\\): cannot read the measured run: no such file")
usage_expect(NAME usage_long_scenario_name ARGS whatif ${_usage_long}
  MATCH "commstack: error: scenario '${_usage_80}\\.\\.\\. \\(300 characters\\)': neither a built-in scenario")
usage_expect(NAME usage_long_profile_name ARGS collective --cluster dgx-h100 --profile ${_usage_long}
  MATCH "commstack: error: --profile ${_usage_80}\\.\\.\\. \\(300 characters\\): no such file, and no shipped profile")
usage_expect(NAME usage_long_model_name ARGS train --cluster dgx-h100 --model ${_usage_long}
  MATCH "commstack: error: .*${_usage_80}\\.\\.\\. \\(300 characters\\)")
# A path is shown whole, however long, so that the message names the file.
usage_expect(NAME usage_long_path_whole ARGS topo --cluster dgx-h100 --dot /nonexistent/${_usage_long}.dot
  MATCH "commstack: error: --dot /nonexistent/${_usage_long}\\.dot: cannot open")

# docs/cli.md's help texts are the binary's (scripts/cli-help.sh regenerates them).
add_test(NAME cli.usage.help_texts_match_docs
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/help_docs.sh $<TARGET_FILE:commstack> ${PROJECT_SOURCE_DIR})
