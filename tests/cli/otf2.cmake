# commstack --otf2: simulated timelines as OTF2 archives (docs/otf2.md). When the OTF2 project's
# otf2-print is installed (Debian otf2-tools), it reads the archives back independently of our reader.
commstack_cli_test(NAME otf2.train
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 2 --pp 2 --dp 2 --global-batch 8
       --otf2 ${CMAKE_CURRENT_BINARY_DIR}/otf2-train
  MATCH "wrote OTF2 archive .*otf2-train/traces.otf2 \\([0-9]+ locations, [0-9]+ events\\)")
set_tests_properties(cli.otf2.train PROPERTIES FIXTURES_SETUP otf2_train_archive)
commstack_cli_test(NAME otf2.collective
  ARGS collective --profile none --cluster dgx-a100 --nodes 1 --op allreduce -b 1M -e 4M
       --otf2 ${CMAKE_CURRENT_BINARY_DIR}/otf2-collective
  MATCH "wrote OTF2 archive .*otf2-collective/traces.otf2 \\(8 locations, [0-9]+ events\\)")
set_tests_properties(cli.otf2.collective PROPERTIES FIXTURES_SETUP otf2_collective_archive)
# A replayed Kineto trace (2 GPUs, HTA sample): its CUDA streams and CPU threads become locations.
commstack_cli_test(NAME otf2.replay
  ARGS replay --trace workloads/importers/samples/kineto-hta-nccl-2gpu/rank-0.json.gz --cluster dgx-a100
       --otf2 ${CMAKE_CURRENT_BINARY_DIR}/otf2-replay
  MATCH "wrote OTF2 archive .*otf2-replay/traces.otf2 \\([0-9]+ locations, [0-9]+ events\\)")
commstack_cli_error_test(NAME otf2.unwritable_directory
  ARGS collective --profile none --cluster dgx-a100 --nodes 1 --op allreduce -b 1M -e 1M --otf2 /proc/commstack-otf2/x
  MATCH "--otf2 /proc/commstack-otf2/x: cannot create the directory")

find_program(COMMSTACK_OTF2_PRINT otf2-print)
if(COMMSTACK_OTF2_PRINT)
  # The pipeline send of stage 0 and the tensor-parallel all-reduce, as otf2-print decodes them.
  add_test(NAME cli.otf2.train_otf2_print
           COMMAND ${COMMSTACK_OTF2_PRINT} ${CMAKE_CURRENT_BINARY_DIR}/otf2-train/traces.otf2)
  set_tests_properties(cli.otf2.train_otf2_print PROPERTIES FIXTURES_REQUIRED otf2_train_archive
    PASS_REGULAR_EXPRESSION "MPI_SEND +[0-9]+ +[0-9]+ +Receiver: 1 .*MPI_COLLECTIVE_END +[0-9]+ +[0-9]+ +Operation: ALLREDUCE, Communicator: \"tp ")
  # 1, 2 and 4 MiB all-reduces on all 8 GPUs: 24 collective ends, and the last size's flows as messages.
  add_test(NAME cli.otf2.collective_otf2_print
           COMMAND ${COMMSTACK_OTF2_PRINT} ${CMAKE_CURRENT_BINARY_DIR}/otf2-collective/traces.otf2)
  set_tests_properties(cli.otf2.collective_otf2_print PROPERTIES FIXTURES_REQUIRED otf2_collective_archive
    PASS_REGULAR_EXPRESSION "Operation: ALLREDUCE, Communicator: \"world 0..7 \\(8 ranks\\)\" <0>, Root: NONE, Sent: 4194304, Received: 4194304")
endif()
