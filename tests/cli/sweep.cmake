# commstack sweep: grids of training jobs (docs/sweep.md). The multi-run checks (MPI = local,
# resume, changed base) live in sweep/check.cmake.
set(sweep_small ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/small.json)
commstack_cli_test(NAME sweep.dry_run
  ARGS sweep ${sweep_small} --dry-run
  MATCH "12 points of .*small.json.*\n +0  [0-9a-f]+  \\{\"comm.channels\":2,\"parallel.pp\":1,\"parallel.tp\":1,\"parallel.dp\":8\\}")
commstack_cli_test(NAME sweep.help
  ARGS sweep --help
  MATCH "MPI: (Open MPI|MPICH|not built).*(merged results|one machine only)")
commstack_cli_error_test(NAME sweep.unknown_field_in_grid
  ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/typo.json --dry-run
  MATCH "typo.json: /grid/parallel.tensor_parallel: 'parallel.tensor_parallel' \\(/parallel/tensor_parallel\\) is not a field of the base job")
commstack_cli_error_test(NAME sweep.missing_file
  ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/no-such-sweep.json
  MATCH "no-such-sweep.json: cannot read the sweep file")
commstack_cli_error_test(NAME sweep.bad_jobs
  ARGS sweep ${sweep_small} --jobs -3 -o ${CMAKE_CURRENT_BINARY_DIR}/sweep-bad-jobs
  MATCH "--jobs: expected 1 to 4096, got -3")
# 0 is not "the default" when written: it is refused like any other count below 1.
commstack_cli_error_test(NAME sweep.zero_jobs
  ARGS sweep ${sweep_small} -j 0 -o ${CMAKE_CURRENT_BINARY_DIR}/sweep-zero-jobs
  MATCH "--jobs: expected 1 to 4096, got 0")
# An axis over a section and one over a field inside it set the same field: refused in either order.
commstack_cli_error_test(NAME sweep.section_and_its_field
  ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/overlap.json --dry-run
  MATCH "overlap.json: /grid/comm.channels: the field /comm/channels is inside /comm, which the axis /grid/comm already sweeps")
# A replay base: the table shows the replayed iteration time (a replay has no MFU: "-").
commstack_cli_test(NAME sweep.replay_table
  ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/replay.json -o ${CMAKE_CURRENT_BINARY_DIR}/sweep-replay -q --restart -j 1
  MATCH "point +replay.scale_dp +status +iteration_s +MFU\n +0 +8 +ok +0\\.[0-9]+ +-\n")

foreach(mode resume base)
  add_test(NAME cli.sweep.${mode}
           COMMAND ${CMAKE_COMMAND} -DMODE=${mode} -DEXE=$<TARGET_FILE:commstack> -DSWEEP=${sweep_small}
                   -DOTHER=${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/small-otherbase.json
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/sweep-${mode} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/check.cmake)
endforeach()
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  add_test(NAME cli.sweep.mpi_equals_local
           COMMAND ${CMAKE_COMMAND} -DMODE=mpi -DEXE=$<TARGET_FILE:commstack> -DSWEEP=${sweep_small}
                   -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/sweep-mpi
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/check.cmake)
  # OpenMPI's own allocations are not freed at exit; the sweep's code is leak-checked by the other tests.
  set_tests_properties(cli.sweep.mpi_equals_local PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
