# commstack whatif: scenario runs, output formats, determinism, plot, and bad scenario files
# (exit status 2 and the JSON path in the message). Scenario files are in tests/cli/whatif/.
set(whatif_dir tests/cli/whatif)

commstack_cli_test(NAME whatif.text
  ARGS whatif ${whatif_dir}/small.json
  MATCH "baseline +[0-9.]+ +1\\.000 .*same +[0-9.]+ +1\\.000 .*100G NICs +[0-9.]+ +0\\.[0-9]+ .*dp \\+[0-9.]+ s")
commstack_cli_test(NAME whatif.csv
  ARGS whatif ${whatif_dir}/small.json --format csv -j 1
  MATCH "^variant,iteration_s,speedup,mfu,tokens_per_s,compute_s.*\nbaseline,[0-9.]+,1\\.000000000,.*\nsame,[0-9.]+,1\\.000000000,")
commstack_cli_test(NAME whatif.json
  ARGS whatif ${whatif_dir}/small.json --format json
  MATCH "\"name\": \"same\".*\"speedup\": 1\\.0,")
commstack_cli_test(NAME whatif.check
  ARGS whatif ${whatif_dir}/small.json --check
  MATCH "4 runs \\(baseline \\+ 3 variants\\), all valid")
# --check simulates nothing: output flags with it are refused, not silently ignored.
commstack_cli_error_test(NAME whatif.check_with_outputs
  ARGS whatif ${whatif_dir}/small.json --check --format json --output ${CMAKE_CURRENT_BINARY_DIR}/whatif-check.json
  MATCH "commstack: error: --check with --format json, --output [^ ]*whatif-check.json: --check only checks the scenario and simulates nothing")
commstack_cli_error_test(NAME whatif.check_with_plot
  ARGS whatif --check --plot ${CMAKE_CURRENT_BINARY_DIR}/whatif-check.png
  MATCH "commstack: error: --check with --plot [^ ]*whatif-check.png: ")
commstack_cli_test(NAME whatif.list
  ARGS whatif --list
  MATCH "gpt3-175b-1024-h100 \\(default\\): GPT-3 175B on 1024 H100")
# The built-in default scenario (1024 GPUs, 5 runs) passes every input check.
commstack_cli_test(NAME whatif.default_check
  ARGS whatif --check
  MATCH "built-in scenario gpt3-175b-1024-h100: 5 runs")

# Byte-identical output run to run and for 1 or 4 parallel processes.
add_test(NAME cli.whatif.deterministic
  COMMAND sh -c "\"$0\" whatif \"$1\" --format csv -j 1 > \"$2/whatif-a.csv\" && \"$0\" whatif \"$1\" --format csv -j 4 > \"$2/whatif-b.csv\" && cmp \"$2/whatif-a.csv\" \"$2/whatif-b.csv\""
          $<TARGET_FILE:commstack> ${whatif_dir}/small.json ${CMAKE_CURRENT_BINARY_DIR}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# The plot: PNG plus its data and gnuplot script (skipped where gnuplot is missing: the error says so).
add_test(NAME cli.whatif.plot
  COMMAND sh -c "rm -f \"$2\"/whatif-plot.*; if command -v gnuplot >/dev/null; then \"$0\" whatif \"$1\" --plot \"$2/whatif-plot.png\" > /dev/null && test -s \"$2/whatif-plot.png\" && grep -q 'rowstacked' \"$2/whatif-plot.gp\" && grep -q '100G NICs' \"$2/whatif-plot.dat\"; else \"$0\" whatif \"$1\" --plot \"$2/whatif-plot.png\" 2>&1 | grep -q 'gnuplot is not installed'; fi"
          $<TARGET_FILE:commstack> ${whatif_dir}/small.json ${CMAKE_CURRENT_BINARY_DIR}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# Bad scenario files: exit status exactly 2 and the message (regex) on stderr.
function(whatif_error_test name file match)
  add_test(NAME cli.whatif.${name}
    COMMAND sh -c "\"$0\" whatif \"$1\" > /dev/null 2> \"$3/whatif-${name}.err\"; rc=$?; cat \"$3/whatif-${name}.err\"; test $rc -eq 2 && grep -Eq \"$2\" \"$3/whatif-${name}.err\""
            $<TARGET_FILE:commstack> ${whatif_dir}/${file} "${match}" ${CMAKE_CURRENT_BINARY_DIR}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()
whatif_error_test(missing_field bad-missing-field.json
  "bad-missing-field.json: [$][.]variants[[]1[]][.]overrides[.]cluster[.]fabric[.]nic_gbps: no such field in the baseline cluster")
whatif_error_test(unknown_field bad-unknown-field.json "bad-unknown-field.json: [$][.]variantz: unknown field")
whatif_error_test(negative_bandwidth bad-negative-bandwidth.json
  "[$][.]variants[[]1[]][.]overrides[.]cluster: /node/nics/bandwidth")
whatif_error_test(tp_not_dividing_heads bad-tp-heads.json
  "[$][.]variants[[]2[]] [(]'TP4 DP4', baseline [+] overrides[)][.]parallel .*[$][.]tp: 16 does not divide the 24 attention heads")
# Out of memory in a variant: the variant's place first, then the memory sentence with the GPU.
whatif_error_test(memory_variant bad-memory-variant.json
  "[$][.]variants[[]0[]] [(]'ep4', baseline [+] overrides[)]: memory: pipeline stage 0 needs [0-9.]+ GiB per GPU .* but H100-SXM5-80GB [(]compute profile h100-sxm5[)] has 74[.]5 GiB")
whatif_error_test(nccl_algo bad-nccl-algo.json "[$][.]variants[[]0[]][.]overrides[.]comm[.]algo: this NCCL knob is not modelled in training yet")
whatif_error_test(duplicate_name bad-duplicate-name.json "[$][.]variants[[]1[]][.]name: 'same' is already used")
whatif_error_test(malformed bad-malformed.json "bad-malformed.json: not valid JSON")
whatif_error_test(no_such_file does-not-exist.json "does-not-exist.json.*neither a built-in scenario")
# Names and descriptions go into tables, CSV rows, the tab-separated .dat and plot labels: no control characters.
whatif_error_test(name_control_char bad-name-control.json
  "bad-name-control.json: [$][.]variants[[]0[]][.]name: a tab at byte 3; expected text without control characters")
# A schedule written next to a layout must be the one the layout gives (2 chunks per rank: interleaved).
whatif_error_test(layout_vs_1f1b bad-layout-1f1b.json
  "bad-layout-1f1b.json: [$][.]baseline[.]parallel .*[$][.]schedule: .1f1b., but pipeline_model_parallel_layout's 8 stages over pp = 4 give 2 model chunks per pipeline rank, which need .schedule.: .interleaved.")
whatif_error_test(variant_layout_vs_1f1b bad-layout-1f1b-variant.json
  "[$][.]variants[[]0[]] [(]'2 chunks, 1f1b', baseline [+] overrides[)][.]parallel .*[$][.]schedule: .1f1b., but pipeline_model_parallel_layout's 8 stages")
# Without a written schedule the layout sets it, in a variant too (the normalized baseline's schedule is null).
commstack_cli_test(NAME whatif.layout_sets_schedule
  ARGS whatif ${whatif_dir}/layout-sets-schedule.json -j 2
  MATCH "  2 chunks: [^\n]*\n +runs [^\n]* vs 2 [^\n]*\n  2 chunks, interleaved: [^\n]*\n +runs [^\n]* vs 2 ")
# Quotes, # and gnuplot markup in a name: quoted in the CSV, exact in the plot labels (the .gp
# holds them; a .dat column cannot hold a double quote and gets ' instead).
commstack_cli_test(NAME whatif.csv_quoted_name
  ARGS whatif ${whatif_dir}/quoted-name.json --format csv -j 2
  MATCH "\n\"it's \"\"2 channels\"\" # x_1\",0[.][0-9]+,1[.]0+,")
add_test(NAME cli.whatif.plot_quoted_name
  COMMAND sh -c "rm -f \"$2\"/whatif-quoted.*; \"$0\" whatif \"$1\" --plot \"$2/whatif-quoted.png\" > /dev/null; grep -qF \"$3\" \"$2/whatif-quoted.gp\" && grep -q 'using 3:xtic(variant' \"$2/whatif-quoted.gp\" && grep -qF \"$4\" \"$2/whatif-quoted.dat\" && { ! command -v gnuplot > /dev/null || test -s \"$2/whatif-quoted.png\"; }"
          $<TARGET_FILE:commstack> ${whatif_dir}/quoted-name.json ${CMAKE_CURRENT_BINARY_DIR}
          "array variant[2] = ['baseline', 'it''s \"2 channels\" # x_1']" "it's '2 channels' # x_1"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# Uneven pipeline stages in scenarios: a variant sets the first/last stage sizes that the baseline
# leaves unset, and null unsets them again (the same run as the baseline: speedup exactly 1).
commstack_cli_test(NAME whatif.uneven_stages
  ARGS whatif ${whatif_dir}/uneven-stages.json -j 1
  MATCH "ends unset again +[0-9.]+ +1[.]000 .*runs dgx-h100 x 2 nodes, tp 2 pp 4 [^\n]* stage layers first 4 middle 8 last 4\n.*stage layers first 3 middle 7 last 7")
# Expert TP in a scenario: null restores Megatron's default (the tp degree), labels name it.
commstack_cli_test(NAME whatif.expert_tp
  ARGS whatif ${whatif_dir}/expert-tp.json -j 1
  MATCH "recompute none etp 2\n.*whole experts +[0-9.]+ +1[.]0[0-9][0-9] .*default again +[0-9.]+ +1[.]000 .*recompute none etp 1\n")
# A Megatron layout in a variant: the same 4/8/8/4 split as num_layers_in_first/last 4, the same time.
commstack_cli_test(NAME whatif.pipeline_layout
  ARGS whatif ${whatif_dir}/uneven-stages.json -j 1
  MATCH "lighter ends +([0-9.]+ +[0-9.]+ +[0-9.%]+ +[0-9]+) .*megatron layout +([0-9.]+ +[0-9.]+ +[0-9.%]+ +[0-9]+) .*pipeline layout Et[*]4[|][(]t[*]8[|][)][*]2t[*]4L")
# -j 0 is refused like -j -1 (leaving -j out means the CPUs available).
commstack_cli_error_test(NAME whatif.zero_jobs
  ARGS whatif ${whatif_dir}/layout-sets-schedule.json -j 0
  MATCH "--jobs: expected 1 to 4096, got 0")
# The token dispatcher in a scenario (no description: the title is the name alone); the label names
# the all-gather one, the all-to-all is the default and gives the baseline's time again.
commstack_cli_test(NAME whatif.moe_token_dispatcher
  ARGS whatif ${whatif_dir}/moe-token-dispatcher.json -j 1
  MATCH "^what-if moe-token-dispatcher\n.*allgather +[0-9.]+ +[01][.][0-9]+ .*alltoall again +[0-9.]+ +1[.]000 .*etp 1 moe-token-dispatcher allgather\n")
