# commstack replay: the published sample traces (workloads/importers/samples) and input errors.
set(replay_samples workloads/importers/samples)
commstack_cli_test(NAME replay.kineto_text
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100
  MATCH "iteration +traced +224\\.936 ms +replayed +2[12][0-9]\\.[0-9]+ ms.*GPU compute")
commstack_cli_test(NAME replay.kineto_json
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu/rank-0.json.gz --cluster dgx-a100 --format json
  MATCH "\"traced_s\": 0\\.224936.*\"resimulated_comm_ops\": 7")
commstack_cli_test(NAME replay.trace_out
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --trace-out ${CMAKE_CURRENT_BINARY_DIR}/replay-trace.json
  MATCH "replayed")
commstack_cli_test(NAME replay.scale_dp
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --scale-dp 4
  MATCH "world 8.*scale-dp 4: the traced job is replica 0 of 4")
commstack_cli_test(NAME replay.compute_profile
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-h100 --compute-profile h100-sxm5
  MATCH "rescaled from a100-80gb to h100-sxm5")
commstack_cli_test(NAME replay.nccl_log
  ARGS replay --trace ${replay_samples}/nccl-log-203 --cluster dgx-a100
  MATCH "3 communication ops re-simulated|6 communication ops re-simulated")
commstack_cli_test(NAME replay.chakra
  ARGS replay --trace ${replay_samples}/chakra-feeder/small_chakra.0.json --cluster dgx-a100
  MATCH "Chakra")
commstack_cli_error_test(NAME replay.too_few_nodes
  ARGS replay --trace ${replay_samples}/kineto-hta-sampled-128gpu --cluster dgx-a100 --nodes 2
  MATCH "needs 128 GPUs.*the cluster has 16")
commstack_cli_error_test(NAME replay.missing_trace
  ARGS replay --trace ${replay_samples}/no-such-dir --cluster dgx-a100
  MATCH "no such file or directory")
# A device (or a pipe) exists but is no trace file: said so, not "no such file".
commstack_cli_error_test(NAME replay.device_trace
  ARGS replay --trace /dev/zero --cluster dgx-a100
  MATCH "commstack: error: --trace /dev/zero: it is a character device, not a regular file; expected a trace file")
commstack_cli_error_test(NAME replay.not_a_trace
  ARGS replay --trace ${replay_samples}/PROVENANCE.md --cluster dgx-a100
  MATCH "not a Kineto/PyTorch profiler JSON")
commstack_cli_error_test(NAME replay.bad_iteration
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --iteration 99
  MATCH "iteration 'ProfilerStep#99' not in the trace")
commstack_cli_error_test(NAME replay.bad_scale
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --scale-dp zero
  MATCH "--scale-dp: 'zero' is not a whole number")
# A Score-P OTF2 archive given as its directory goes through the OTF2 importer (16 MPI send/recv pairs).
commstack_cli_test(NAME replay.otf2_scorep
  ARGS replay --trace ${replay_samples}/otf2/scorep-ping-pong --cluster dgx-a100
  MATCH "\\(otf2\\).*32 communication ops re-simulated.*traced +199\\.535 ms +replayed")
# GPU-bound round trip through commstack's own OTF2: train --otf2 then replay on the same cluster
# reproduces train's iteration time within 5 % (TP8 within the node, DP2 across two nodes; every
# rank written with --no-fold so that the process groups are complete).
add_test(NAME cli.replay.roundtrip_tp_dp
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/replay_roundtrip.sh $<TARGET_FILE:commstack> ${CMAKE_CURRENT_BINARY_DIR}
          rt-tp8-dp2 0.05 dgx-a100 --nodes 2 --model megatron-1.7b --tp 8 --dp 2 --micro-batch 1 --global-batch 8
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# The same with pipeline send/recv (1F1B, PP4 over two nodes): batched pipeline messages whose
# region sits on an overlap location are matched to their op by the commstack_op attribute.
add_test(NAME cli.replay.roundtrip_pp
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/replay_roundtrip.sh $<TARGET_FILE:commstack> ${CMAKE_CURRENT_BINARY_DIR}
          rt-tp2-pp4-dp2 0.05 dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --dp 2 --micro-batch 1 --global-batch 16
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# Pipeline scale-out (--scale-pp): a PP2 trace replayed 2x deeper takes the time of the PP4 job with
# twice the layers (same engine: tolerance 1e-6 relative; measured within 1e-7).
add_test(NAME cli.replay.scale_pp_2x
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/replay_scale_pp.sh $<TARGET_FILE:commstack> ${CMAKE_CURRENT_BINARY_DIR}
          spp-tp2-pp2-dp2 1e-6 dgx-a100 workloads/models/megatron-1.7b.json 2 2 1 2 --tp 2 --dp 2 --micro-batch 1 --global-batch 16
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
commstack_cli_error_test(NAME replay.scale_pp_kineto
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --scale-pp 2
  MATCH "--scale-pp: the kineto trace does not give each op's micro-batch and phase")
commstack_cli_error_test(NAME replay.scale_pp_zero
  ARGS replay --trace ${replay_samples}/kineto-hta-nccl-2gpu --cluster dgx-a100 --scale-pp 0
  MATCH "--scale-pp: 0 is out of range")
# A synthetic NCCL log of two GB200 trays whose communicator says MNNVL 0: replayed over the NICs,
# and the report says so.
commstack_cli_test(NAME replay.nccl_log_mnnvl0
  ARGS replay --trace tests/cli/nccl-log-gb200-2tray-mnnvl0-synthetic.log --cluster gb200-nvl72
  MATCH "the NCCL log says MNNVL 0: NCCL did not use gb200-nvl72's multi-node NVLink domains")
