# commstack-bench end-to-end checks that need no GPU (CI has none). The GPU program exists only when
# CUDA and NCCL were found; the host-only logic is covered by tests/unit/test_bench_*.cpp.
if(TARGET commstack-bench)
  # Without a GPU the bench must stop with a clear message and a non-zero status (3), never hang.
  add_test(NAME cli.bench_no_gpu
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:commstack-bench> "-DARGS=--preset\\;smoke\\;-o\\;${CMAKE_CURRENT_BINARY_DIR}/bench-no-gpu.json"
                   "-DMATCH=commstack-bench: error: no usable GPU: cudaGetDeviceCount failed"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  # Started as one of several processes without MPI support: refuse before touching any GPU.
  add_test(NAME cli.bench_mpi_mismatch
           COMMAND ${CMAKE_COMMAND} -E env OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0
                   ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:commstack-bench> "-DARGS=-o\\;${CMAKE_CURRENT_BINARY_DIR}/bench-mpi.json"
                   "-DMATCH=(built without MPI but was started as one of 4 processes|no usable GPU)"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  add_test(NAME cli.bench_bad_preset
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:commstack-bench> "-DARGS=--preset\\;huge\\;-o\\;x.json"
                   "-DMATCH=--preset: unknown preset 'huge'" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  add_test(NAME cli.bench_bad_size
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:commstack-bench> "-DARGS=--plan-only\\;--max-bytes\\;12Q"
                   "-DMATCH=--max-bytes" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  # The plan and its cost need no GPU: 2 nodes x 8 H100, standard preset.
  add_test(NAME cli.bench_plan_standard
           COMMAND $<TARGET_FILE:commstack-bench> --plan-only --preset standard --nodes 2 --gpus-per-node 8 --sm 90)
  set_tests_properties(cli.bench_plan_standard PROPERTIES
                       PASS_REGULAR_EXPRESSION "all_reduce +algo nvls_tree +proto simple.*GPU-minutes")
endif()
if(TARGET commstack_profiler_selftest)
  add_test(NAME cli.bench_profiler_plugin
           COMMAND $<TARGET_FILE:commstack_profiler_selftest> $<TARGET_FILE:nccl-profiler-commstack>
                   ${CMAKE_CURRENT_BINARY_DIR}/bench-profiler-selftest)
  set_tests_properties(cli.bench_profiler_plugin PROPERTIES PASS_REGULAR_EXPRESSION "plugin selftest: ok")
endif()
# The launcher script validates its own flags before looking for a binary or a GPU.
add_test(NAME cli.bench_run_script_bad_flag
         COMMAND ${CMAKE_COMMAND} -DEXE=${PROJECT_SOURCE_DIR}/calibration/bench/run-bench.sh "-DARGS=--nodes\\;two"
                 "-DMATCH=run-bench.sh: error: --nodes: expected an integer" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
