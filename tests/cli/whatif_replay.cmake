# commstack whatif with replay jobs (docs/scenario-format.md "Replay jobs"): the shipped example
# scenario next to the samples, its speedups, and bad replay sections (exit 2, JSON path).
set(whatif_replay_example workloads/importers/samples/whatif-replay-kineto-2gpu.json)
commstack_cli_test(NAME whatif_replay.check
  ARGS whatif ${whatif_replay_example} --check
  MATCH "whatif-replay-kineto-2gpu.json: 5 runs \\(baseline \\+ 4 variants\\), all valid")
# The unchanged copy replays bitwise the same: speedup exactly 1.000000000 in the CSV.
commstack_cli_test(NAME whatif_replay.csv
  ARGS whatif tests/cli/whatif-replay/small.json --format csv -j 2
  MATCH "variant,iteration_s,speedup,traced_s,compute_s,exposed_comm_s,idle_s.*same,[0-9.]+,1\\.000000000,")
commstack_cli_test(NAME whatif_replay.text
  ARGS whatif tests/cli/whatif-replay/small.json -j 2
  MATCH "variant +iteration ms +speedup +traced ms.*400G NICs.*compute +exposed_comm +idle")

function(whatif_replay_error_test name file match)
  add_test(NAME cli.whatif_replay.${name}
    COMMAND sh -c "\"$0\" whatif \"$1\" > /dev/null 2> \"$3/whatif-replay-${name}.err\"; rc=$?; cat \"$3/whatif-replay-${name}.err\"; test $rc -eq 2 && grep -Eq \"$2\" \"$3/whatif-replay-${name}.err\""
            $<TARGET_FILE:commstack> tests/cli/whatif-replay/${file} "${match}" ${CMAKE_CURRENT_BINARY_DIR}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()
whatif_replay_error_test(bad_scale bad-scale.json
  "bad-scale.json: [$][.]variants[[]0[]][.]overrides[.]replay[.]scale_dp: expected a whole number of replicas 1..65536, got -1")
# The trace path is taken from the scenario file's folder, and the message says so.
whatif_replay_error_test(missing_trace missing-trace.json
  "missing-trace.json: [$][.]baseline[.]replay[.]trace: 'tests/cli/whatif-replay/no-such-trace-dir' does not exist .a relative trace path is taken from the scenario file's folder")
# A device exists but is no trace: said so, not "no such file".
whatif_replay_error_test(device_trace device-trace.json
  "device-trace.json: [$][.]baseline[.]replay[.]trace: '/dev/zero' is a character device, not a regular file")
whatif_replay_error_test(unknown_field unknown-field.json
  "unknown-field.json: [$][.]baseline[.]replay[.]scale_tp: unknown field; expected one of trace, iteration, scale_dp")
