# commstack-bench end-to-end checks that need no GPU (CI has none). The GPU program exists only when
# CUDA and NCCL were found; the host-only logic is covered by tests/unit/test_bench_*.cpp.
# bench_expect(NAME n EXIT code MATCH regex COMMAND ...): runs the command through sh, passes when
# its output (stdout + stderr) matches MATCH and it exited with status EXIT (never a crash or hang).
function(bench_expect)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;EXIT;MATCH" "COMMAND")
  # PASS_REGULAR_EXPRESSION is a list: a ';' would make the regex two alternatives, either enough.
  if(T_MATCH MATCHES ";")
    message(FATAL_ERROR "bench_expect ${T_NAME}: MATCH holds a ';' (a list separator here): use '.'")
  endif()
  list(JOIN T_COMMAND " " cmd)
  add_test(NAME cli.${T_NAME} COMMAND sh -c "${cmd} 2>&1; echo \"exit=$?\"" WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.${T_NAME} PROPERTIES PASS_REGULAR_EXPRESSION "${T_MATCH}.*exit=${T_EXIT}\n" TIMEOUT 120)
endfunction()

if(TARGET commstack-bench)
  set(bench_exe $<TARGET_FILE:commstack-bench>)
  # Without a GPU the bench must stop with a clear message and status 3, never hang.
  bench_expect(NAME bench_no_gpu EXIT 3 MATCH "commstack-bench: error: no usable GPU: cudaGetDeviceCount failed"
               COMMAND ${bench_exe} --preset smoke -o ${CMAKE_CURRENT_BINARY_DIR}/bench-no-gpu.json)
  bench_expect(NAME bench_bad_preset EXIT 2 MATCH "commstack-bench: error: --preset: unknown preset 'huge'"
               COMMAND ${bench_exe} --preset huge -o x.json)
  bench_expect(NAME bench_bad_size EXIT 2 MATCH "commstack-bench: error: --max-bytes"
               COMMAND ${bench_exe} --plan-only --max-bytes 12Q)
  bench_expect(NAME bench_missing_output EXIT 2 MATCH "--output: required" COMMAND ${bench_exe} --preset smoke)
  # Started as one of 4 processes: a build without MPI refuses before touching a GPU; an MPI build
  # sees its MPI world (1) disagree with the launcher's (4), the symptom of a mismatched MPI library.
  bench_expect(NAME bench_mpi_mismatch EXIT 3
               MATCH "(built without MPI but was started as one of 4 processes|MPI reports 1 processes but the launcher)"
               COMMAND env OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0 ${bench_exe} -o ${CMAKE_CURRENT_BINARY_DIR}/bench-mpi.json)
  # The plan and its cost need no GPU: 2 nodes x 8 H100, standard preset.
  bench_expect(NAME bench_plan_standard EXIT 0 MATCH "all_reduce +algo nvls_tree +proto simple.*GPU-minutes"
               COMMAND ${bench_exe} --plan-only --preset standard --nodes 2 --gpus-per-node 8 --sm 90)
endif()
if(TARGET commstack_profiler_selftest)
  bench_expect(NAME bench_profiler_plugin EXIT 0 MATCH "plugin selftest: ok"
               COMMAND $<TARGET_FILE:commstack_profiler_selftest> $<TARGET_FILE:nccl-profiler-commstack>
                       ${CMAKE_CURRENT_BINARY_DIR}/bench-profiler-selftest)
endif()
# The launcher script validates its own flags before looking for a binary or a GPU.
bench_expect(NAME bench_run_script_bad_flag EXIT 2 MATCH "run-bench.sh: error: --nodes: expected an integer"
             COMMAND ${PROJECT_SOURCE_DIR}/calibration/bench/run-bench.sh --nodes two)
