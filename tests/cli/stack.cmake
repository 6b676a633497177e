# commstack validate / calibrate end to end (run from the source directory).
set(_stack_data calibration/data/nccl-tests)
commstack_cli_test(NAME stack_validate_dgxc
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt
  MATCH "MAPE [0-9.]+% over 32 sizes \\(>=1MiB: [0-9.]+% over 15; <1MiB: [0-9.]+% over 17\\)")
# The baseline line: NCCL's own model on the same sizes (profile-independent; peer-fidelity.md: 12 / 17).
commstack_cli_test(NAME stack_validate_nccl_model_baseline
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt
       --nodes 1 --gpus-per-node 8
  MATCH "# NCCL's own model \\(ncclTopoGetAlgoTime, 2.28.9 constants\\) on the same sizes: MAPE 14.73% over 32 sizes \\(>=1MiB: 12.43% over 15; <1MiB: 16.76% over 17\\)\n+MAPE")
commstack_cli_test(NAME stack_validate_breakdown_csv
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt
       --nodes 2 --gpus-per-node 8 --format csv --breakdown
  MATCH "17179869184,68652.000,[0-9.]+,[-0-9.]+,NVLSTree,Simple,16,")
commstack_cli_test(NAME stack_validate_outlier
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue290-default.txt
       --nodes 2 --gpus-per-node 8
  MATCH "WARNING: at 8G the run reaches 155.6 GB/s bus bandwidth")
commstack_cli_test(NAME stack_validate_forced_ring
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt
       --nodes 1 --gpus-per-node 8 --algo ring --proto simple
  MATCH "134217728 +613.30 +[0-9.]+ +[-0-9.]+ +[-0-9.]+  Ring/Simple/24")
commstack_cli_test(NAME stack_validate_json
  ARGS validate --cluster hgx-b200 --measured ${_stack_data}/nccl-tests_alltoall_b200_2n8g_vultr-poc.txt
       --nodes 2 --gpus-per-node 8 --format json
  MATCH "\"algorithm\": \"P2P\"")
commstack_cli_error_test(NAME stack_validate_no_nodes
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt
  MATCH "commstack: error: .*issue290.txt: cannot use this run: its rank lines do not give the node count")
# A shape the table's own numbers contradict: CoreWeave's README names a 128-rank job, but its
# table's busbw / algbw (1.9377) is nccl-tests' 2(n-1)/n for 32 ranks; its rank lines stop at "...".
commstack_cli_error_test(NAME stack_validate_shape_table_contradicts
  ARGS validate --cluster dgx-a100 --nodes 16 --gpus-per-node 8
       --measured ${_stack_data}/nccl-tests_all_reduce_a100_16n8g_coreweave-2022.txt
  MATCH "commstack: error: .*coreweave-2022.txt: nodes x GPUs per node = 16 x 8 = 128 ranks \\(from --nodes / --gpus-per-node\\) did not print this table: its busbw / algbw is 1.9377, where nccl-tests' bus factor for all_reduce is 2\\(n-1\\)/n = 1.9844 on 128 ranks and 1.9375 on 32")
commstack_cli_error_test(NAME stack_validate_elided_rank_lines
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100_16n8g_coreweave-2022.txt
  MATCH "do not give the node count or GPUs per node \\(a '...' line left some out\\) .*its table was measured on 32 ranks")
commstack_cli_error_test(NAME stack_validate_bad_format
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt --format xml
  MATCH "commstack: error: --format xml: expected text, csv or json")
commstack_cli_error_test(NAME stack_validate_wrong_profile
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt
       --profile calibration/profiles/a100.json
  MATCH "commstack: error: --profile .*a100.json: a profile for sm 80 cannot predict cluster dgx-h100")
commstack_cli_error_test(NAME stack_validate_missing_profile
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt --profile nosuch
  MATCH "commstack: error: --profile nosuch: no such file")
# A directory where a file is expected: one plain error each, not a stream exception (was "internal
# error: basic_filebuf::underflow" for --profile, "empty input" for --measured).
commstack_cli_error_test(NAME stack_validate_profile_is_directory
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt
       --profile ${CMAKE_CURRENT_BINARY_DIR}/
  MATCH "commstack: error: .*/: cannot read the profile: it is a directory, expected a file")
commstack_cli_error_test(NAME stack_validate_measured_is_directory
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}
  MATCH "commstack: error: .*nccl-tests: cannot read the measured run: it is a directory, expected a file")
commstack_cli_error_test(NAME stack_calibrate_same_run_twice
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt
       --input ${_stack_data}/../nccl-tests/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt --output /dev/null
  MATCH "commstack: error: --input .*: the same run as --input .*dgxc-benchmarking.txt; each --input counts once")
commstack_cli_error_test(NAME stack_calibrate_mixed_generations
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt@cluster=dgx-h100
       --input ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt@cluster=dgx-a100,nodes=1,gpus_per_node=8
       --output /dev/null
  MATCH "commstack: error: .*modal.txt: cannot use this run: cluster dgx-a100 has sm 80 GPUs but the profile being fitted is for sm 90")
commstack_cli_error_test(NAME stack_calibrate_no_cluster
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt --output /dev/null
  MATCH "commstack: error: .*dgxc-benchmarking.txt: cannot use this run: no cluster given")
commstack_cli_test(NAME stack_collective_profile_breakdown
  ARGS collective --cluster dgx-h100 --nodes 1 --gpus-per-node 8 --profile auto -b 4M -e 4M --breakdown
  MATCH "# +4194304 NVLS/Simple/16 launch [0-9.]+ alg-lat")
commstack_cli_test(NAME stack_collective_forced_ring
  ARGS collective --cluster dgx-h100 --nodes 2 --profile h100 --algo ring --proto simple -b 1G -e 1G --breakdown
  MATCH "1073741824 Ring/Simple/16")
commstack_cli_error_test(NAME stack_collective_breakdown_needs_profile
  ARGS collective --cluster dgx-h100 --nodes 1 --breakdown --profile none
  MATCH "commstack: error: --breakdown/--proto.* need the stack model: drop --profile none")
# The calibrated stack model is the default: the header names the profile and NCCL's selection.
commstack_cli_test(NAME stack_collective_default_profile
  ARGS collective --cluster dgx-h100 --nodes 2 -b 1G -e 1G --breakdown
  MATCH "on dgx-h100 x 2 nodes; calibrated stack model, profile h100 \\([^)]*h100.json\\), NCCL 2\\.28\\.9 selection; 16 coll channels \\(ring graph 8 x 48 GB/s\\), 16 nvls channels\n.*\n# +1073741824 NVLSTree/Simple/16")
commstack_cli_error_test(NAME stack_collective_fabric_flag_needs_none
  ARGS collective --cluster dgx-h100 --nodes 2 --fidelity edge
  MATCH "commstack: error: --channels/--chunk-bytes/.* shape or record the SimGrid fabric simulation: add --profile none")
# A GPU the stack model does not know: the fabric simulation, and the header says why.
commstack_cli_test(NAME stack_collective_unknown_gpu_falls_back
  ARGS collective --cluster angara-torus --nodes 8 -b 1M -e 1M
  MATCH "uncalibrated SimGrid fabric simulation, [0-9]+ channel\\(s\\) \\(no calibration profile for GPU 'unknown'\\)")
commstack_cli_error_test(NAME stack_collective_unknown_gpu_breakdown
  ARGS collective --cluster angara-torus --nodes 8 --breakdown
  MATCH "these need the stack model, which knows A100, H100/H200/GH200 and B200/GB200 but not cluster angara-torus's GPU 'unknown'; drop them")
commstack_cli_error_test(NAME stack_collective_bad_algo
  ARGS collective --cluster dgx-h100 --nodes 1 --profile auto --algo warp
  MATCH "commstack: error: --algo: unknown algorithm .warp.")
commstack_cli_error_test(NAME stack_calibrate_bad_loss
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt@cluster=dgx-h100,nodes=1,gpus_per_node=8
       --output /dev/null --loss l2
  MATCH "commstack: error: calibrate: --loss l2: expected cauchy or soft_l1")

# nccl-tests -g: the Modal A100 log's header says nGpus 8, so one thread launches 8 kernels per call
# (host floor 8 x launch_us); forcing -g 1 predicts the device-bound 1-thread-per-GPU floor instead.
commstack_cli_test(NAME stack_validate_gpus_per_thread_from_header
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt
       --nodes 1 --gpus-per-node 8 --profile calibration/profiles/a100.json --max-bytes 8 --breakdown
  MATCH "8 +58.00 +5[0-9]\\.[0-9]+ .*launch (3[0-9]|4[0-9])\\.")
commstack_cli_test(NAME stack_validate_gpus_per_thread_one
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt
       --nodes 1 --gpus-per-node 8 --profile calibration/profiles/a100.json --max-bytes 8 --gpus-per-thread 1
  MATCH "8 +58.00 +(1[0-9]|2[0-9])\\.[0-9]+")
commstack_cli_error_test(NAME stack_validate_gpus_per_thread_too_many
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt
       --nodes 2 --gpus-per-node 4
  MATCH "commstack: error: .*modal.txt: 8 GPUs per thread \\(nccl-tests -g\\) but 4 GPUs per node")
commstack_cli_test(NAME stack_collective_collnet_on
  ARGS collective --cluster dgx-a100 --nodes 16 --profile auto --collnet on -b 64M -e 64M --breakdown
  MATCH "67108864 CollNet(Direct|Chain)/Simple/")
# --collnet on where NCCL cannot set CollNet up: NCCL runs without it (no error), and so does the
# model; the communicator line says why. One NVLink domain (NCCL_COLLNET_NODE_THRESHOLD 2) and a
# dragonfly, whose routers do not reduce (SHARP needs fat-tree switches).
commstack_cli_test(NAME stack_collective_collnet_on_one_node
  ARGS collective --cluster dgx-h100 --nodes 1 -b 1K -e 1G -f 32 --collnet on --breakdown
  MATCH "16 nvls channels; --collnet on ignored: CollNet is not set up on one NVLink domain [^\n]*\n.*33554432 NVLS/Simple/16 .*1073741824 NVLS/Simple/16 ")
commstack_cli_test(NAME stack_collective_collnet_on_dragonfly
  ARGS collective --cluster gh200-slingshot --nodes 2 --collnet on -b 1G -e 1G --breakdown
  MATCH "; --collnet on ignored: CollNet is not set up on this fabric: its NICs reach no switch that reduces [^\n]*\n.*1073741824 Ring/Simple/8 ")
commstack_cli_error_test(NAME stack_collective_collnet_forced_one_node
  ARGS collective --cluster dgx-h100 --nodes 1 --algo collnetdirect --collnet on -b 1M -e 1M
  MATCH "commstack: error: no algorithm/protocol available for AllReduce on 8 ranks in 1 NVLink domain: CollNetDirect: CollNet is not set up on one NVLink domain")
# NCCL's send/receive path never reads NCCL_PROTO (src/enqueue.cc addP2pToPlan): LL up to 16 KiB per
# channel and peer, Simple above, never LL128. --proto changes nothing for sendrecv and alltoall.
commstack_cli_test(NAME stack_collective_sendrecv_proto_ll128_ignored
  ARGS collective --cluster dgx-h100 --nodes 1 --op sendrecv -b 32M -e 32M --format csv --proto ll128
  MATCH "\nsendrecv,8,33554432,[^\n]*,P2P,Simple,4\n")
commstack_cli_test(NAME stack_collective_alltoall_proto_ll_ignored
  ARGS collective --cluster dgx-h100 --nodes 1 --op alltoall -b 1G -e 1G --format csv --proto ll
  MATCH "\nalltoall,8,1073741824,[^\n]*,P2P,Simple,32\n")
commstack_cli_test(NAME stack_collective_sendrecv_proto_simple_keeps_ll
  ARGS collective --cluster dgx-h100 --nodes 1 --op sendrecv -b 1K -e 1K --format csv --proto simple
  MATCH "\nsendrecv,8,1024,[^\n]*,P2P,LL,1\n")
commstack_cli_test(NAME stack_collective_alltoall_proto_exclusion
  ARGS collective --cluster dgx-h100 --nodes 1 --op alltoall -b 1M -e 1M --format csv --proto ^ll128
  MATCH "\nalltoall,8,1048576,[^\n]*,P2P,LL,32\n")
commstack_cli_test(NAME stack_validate_sendrecv_proto_ignored
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_sendrecv_a100_1n8g_li-plus-playground.txt
       --nodes 1 --gpus-per-node 8 --proto ll128
  MATCH "\n +1073741824 +[0-9.]+ +[0-9.]+ +[-0-9.]+ +- +P2P/Simple/32\n")
commstack_cli_test(NAME stack_collective_nvls_off
  ARGS collective --cluster dgx-h100 --nodes 1 --profile auto --nvls off -b 64M -e 64M --breakdown
  MATCH "67108864 Ring/")
commstack_cli_error_test(NAME stack_collective_bad_collnet
  ARGS collective --cluster dgx-a100 --nodes 2 --profile auto --collnet maybe
  MATCH "commstack: error: --collnet: unknown 'maybe'; expected on or off")
commstack_cli_test(NAME stack_collective_cuda_graph
  ARGS collective --cluster dgx-a100 --nodes 1 --profile auto --gpus-per-thread 8 --cuda-graph on -b 8 -e 8 --breakdown
  MATCH "# +8 Ring/LL/1 launch [0-9.]+ alg-lat")
commstack_cli_error_test(NAME stack_collective_forced_algo_unavailable
  ARGS collective --cluster dgx-h100 --nodes 2 --algo nvls -b 1M -e 1M
  MATCH "commstack: error: no algorithm/protocol available for AllReduce on 16 ranks in 2 NVLink domains: NVLS: spans one NVLink domain \\(across domains only with CollNet, --collnet on\\); NVLSTree is its multi-domain form")
commstack_cli_error_test(NAME stack_collective_bad_cuda_graph
  ARGS collective --cluster dgx-a100 --nodes 1 --profile auto --cuda-graph 2
  MATCH "commstack: error: --cuda-graph: unknown '2'; expected on or off")
commstack_cli_test(NAME stack_validate_nccl_version_from_log
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt
       --nodes 1 --gpus-per-node 8
  MATCH "profile a100 \\([^)]*\\), NCCL 2\\.29\\.3 selection")
commstack_cli_error_test(NAME stack_validate_nccl_version_unknown
  ARGS validate --cluster dgx-a100 --measured ${_stack_data}/nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt
       --nodes 1 --gpus-per-node 8 --nccl-version 2.25
  MATCH "commstack: error: --nccl-version: NCCL version '2.25' has no tuning table here")
commstack_cli_test(NAME stack_collective_nccl_version
  ARGS collective --cluster hgx-b200 --nodes 1 --op allgather --profile auto --nccl-version 2.29.3 -b 64M -e 64M --breakdown
  MATCH "67108864 Ring/Simple/32")
commstack_cli_test(NAME stack_validate_error_split
  ARGS validate --cluster dgx-h100 --measured ${_stack_data}/nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue290-default.txt
       --nodes 2 --gpus-per-node 8
  MATCH "# where the error is: no latency-bound size; bandwidth-bound sizes \\(7, from 128M\\): the run reaches 0\\.3[0-9]+x the modeled rate")
# validate says when the cluster's fabric slows the run's network pattern (contention layer): a
# 2 x 8 alltoall log on two nodes under their own 4:1 ToRs (tests/cli/cluster-h100-4to1-tor-per-node.json).
commstack_cli_test(NAME validate.contention_note
  ARGS validate --cluster tests/cli/cluster-h100-4to1-tor-per-node.json
       --measured calibration/data/nccl-tests/nccl-tests_alltoall_b200_2n8g_vultr-poc.txt@nodes=2,gpus_per_node=8
  MATCH "# note: the cluster's fabric carries this run's network traffic up to 4.000x slower than its NICs alone")
# The communicator NCCL's search builds: one DGX A100 node runs 24 coll channels (12 graph channels of
# 20 GB/s, doubled), two DGX H100 nodes 16 with 16 NVLS channels (docs/nccl-selection.md "Channels").
commstack_cli_test(NAME stack_collective_nccl_channels_a100
  ARGS collective --cluster dgx-a100 --nodes 1 -b 1M -e 1M
  MATCH "24 coll channels \\(ring graph 12 x 20 GB/s\\)")
commstack_cli_test(NAME stack_collective_nccl_channels_h100_2nodes
  ARGS collective --cluster dgx-h100 --nodes 2 -b 1M -e 1M
  MATCH "16 coll channels \\(ring graph 8 x 48 GB/s\\), 16 nvls channels")
# --max-channels / --min-channels (NCCL_MAX/MIN_CTAS) clamp the communicator's channels: the header
# prints the clamped count (as NCCL does after connect.cc's clamp) and the search's count before it.
commstack_cli_test(NAME stack_collective_max_channels_header
  ARGS collective --cluster dgx-h100 --nodes 2 -b 1M -e 1M --max-channels 1
  MATCH "; 1 coll channels \\(ring graph 8 x 48 GB/s; 16 before NCCL_MAX_CTAS=1\\), 1 nvls channels\n")
commstack_cli_test(NAME stack_collective_min_channels_header
  ARGS collective --cluster dgx-a100 --nodes 1 -b 1M -e 1M --min-channels 32
  MATCH "; 32 coll channels \\(ring graph 12 x 20 GB/s; 24 before NCCL_MIN_CTAS=32\\)\n")
# A log with NCCL_DEBUG=INFO init lines: the channels NCCL printed replace the modelled search's, and
# a note says they differ (tests/cli/nccl-tests-a100-info-32ch.txt is synthetic).
commstack_cli_test(NAME stack_validate_printed_channels
  ARGS validate --cluster dgx-a100 --measured ${CMAKE_CURRENT_SOURCE_DIR}/cli/nccl-tests-a100-info-32ch.txt
       --nodes 1 --gpus-per-node 8
  MATCH "NCCL printed 32 coll channels where its search as modelled gives 24 for this cluster[^\n]*\n +1048576 +30.00 +[0-9.]+ +[-0-9.]+ +[-0-9.]+  Ring/LL/32")
# NCCL's per-call TUNING lines in the log: those sizes are predicted with NCCL's algorithm and
# protocol, and validate says where the modelled selection differs (synthetic fixtures). Lines
# printed after the table belong to another run of the file and are not used.
commstack_cli_test(NAME stack_validate_logged_choices
  ARGS validate --cluster dgx-a100 --measured ${CMAKE_CURRENT_SOURCE_DIR}/cli/nccl-tests-a100-tuning.txt
       --nodes 1 --gpus-per-node 8
  MATCH "size 1048576: NCCL ran Ring/Simple \\(its TUNING line\\), the model's selection picks Ring/LL[^\n]*\n# selection: the model picks NCCL's algorithm and protocol at 1 of the 2 sizes[^\n]*\n +1048576 +30.00 +[0-9.]+ +[-0-9.]+ +[-0-9.]+  Ring/Simple/24")
# A TUNING line naming a pair the modelled communicator cannot run (CollNet on one node without
# --collnet on): said, predicted with the model's choice, and not counted as agreement.
commstack_cli_test(NAME stack_validate_logged_choice_unavailable
  ARGS validate --cluster dgx-a100 --measured ${CMAKE_CURRENT_SOURCE_DIR}/cli/nccl-tests-a100-tuning-collnet.txt
       --nodes 1 --gpus-per-node 8
  MATCH "size 1048576: NCCL ran CollNetChain/Simple \\(its TUNING line\\), which this communicator as modelled cannot run[^\n]*predicted with the model's Ring/LL\n# selection: the model picks NCCL's algorithm and protocol at 1 of the 2 sizes")
commstack_cli_test(NAME stack_validate_logged_choices_other_run
  ARGS validate --cluster dgx-a100 --measured ${CMAKE_CURRENT_SOURCE_DIR}/cli/nccl-tests-a100-tuning-after.txt
       --nodes 1 --gpus-per-node 8
  MATCH "\n +1048576 +30.00 +[0-9.]+ +[-0-9.]+ +[-0-9.]+  Ring/LL/24")
# A log that names its collective nowhere: the table's columns give it, and validate says so.
commstack_cli_test(NAME stack_validate_op_from_table_columns
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-pasted-no-op.txt
  MATCH "# note: tests/cli/nccl-tests-pasted-no-op.txt: collective all_reduce read from the result table's columns \\(a reduction with count = size / type size and busbw / algbw 1.750 \\(2\\(n-1\\)/n\\)\\); --op overrides")
commstack_cli_error_test(NAME stack_validate_op_columns_ambiguous
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-pasted-no-op-redop-none.txt
  MATCH "does not name its collective .* its columns cannot tell \\(all_gather or alltoall: both print redop 'none' .*\\); pass --op NAME")
# A log of two runs (all_reduce_perf, then all_gather_perf): validate does not pick one silently.
commstack_cli_error_test(NAME stack_validate_two_runs_must_choose
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-two-runs.txt
  MATCH "the log holds 2 nccl-tests runs \\(1: all_reduce \\(lines [0-9]+-[0-9]+, 3 sizes\\); 2: all_gather \\(lines [0-9]+-[0-9]+, 3 sizes\\)\\); say which with --run N")
commstack_cli_test(NAME stack_validate_two_runs_by_op
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-two-runs.txt --op all_gather
  MATCH "allgather, out-of-place.*# note: tests/cli/nccl-tests-two-runs.txt: run 2 of the log's 2 nccl-tests runs")
commstack_cli_test(NAME stack_validate_two_runs_by_key
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-two-runs.txt@run=1
  MATCH "allreduce, out-of-place.*run 1 of the log's 2 nccl-tests runs")
# An --op the log contradicts is refused (its test-start line, command or columns win over a typo).
commstack_cli_error_test(NAME stack_validate_op_contradicts_columns
  ARGS validate --cluster dgx-h100 --measured calibration/data/nccl-tests/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt --op all_gather
  MATCH "op all_gather contradicts the log: its table's columns give all_reduce \\(a reduction with count = size / type size")
commstack_cli_error_test(NAME stack_validate_op_contradicts_test_start
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-two-runs.txt --run 2 --op alltoall
  MATCH "op alltoall contradicts the log: its test-start line gives all_gather")
# nccl-tests -m 4: a note that grouped launches are not modelled.
commstack_cli_test(NAME stack_validate_agg_iters_note
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-agg-iters-4.txt --op all_reduce
  MATCH "agg iters 4 \\(nccl-tests -m\\): 4 calls went out in one group launch")
# nccl-tests -J JSON: validate reads it like the text output of the same run (the dgxc sweep in the
# JSON layout; NCCL's own model line is the text log's, see stack_validate_nccl_model_baseline).
commstack_cli_test(NAME stack_validate_nccl_tests_json
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-json-dgxc-h100.json
  MATCH "# NCCL's own model \\(ncclTopoGetAlgoTime, 2.28.9 constants\\) on the same sizes: MAPE 14.73% over 32 sizes \\(>=1MiB: 12.43% over 15; <1MiB: 16.76% over 17\\)\n+MAPE")

# validate --plot: PNG plus its data and gnuplot script (where gnuplot is missing, the error says so).
add_test(NAME cli.stack_validate_plot
  COMMAND sh -c "rm -f \"$2\"/validate-plot.*; if command -v gnuplot >/dev/null; then \"$0\" validate --cluster dgx-h100 --measured \"$1\" --plot \"$2/validate-plot.png\" > /dev/null && test -s \"$2/validate-plot.png\" && grep -q \"NCCL's own model\" \"$2/validate-plot.gp\" && grep -q '^17179869184	' \"$2/validate-plot.dat\"; else \"$0\" validate --cluster dgx-h100 --measured \"$1\" --plot \"$2/validate-plot.png\" 2>&1 | grep -q 'gnuplot is not installed'; fi"
          $<TARGET_FILE:commstack> ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt ${CMAKE_CURRENT_BINARY_DIR}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# OSU: NCCL collectives (osu_xccl_*) are validated call by call; MPI benchmarks are refused.
commstack_cli_test(NAME stack_validate_osu_xccl
  ARGS validate --cluster dgx-h100 --measured tests/cli/osu-xccl-allreduce-synthetic.txt --nodes 1 --gpus-per-node 8
  MATCH "each call timed on its own.*\n(.*\n)*MAPE [0-9.]+% over 3 sizes")
commstack_cli_error_test(NAME stack_validate_osu_mpi
  ARGS validate --cluster dgx-h100 --measured tests/cli/osu-mpi-latency-synthetic.txt --nodes 2 --gpus-per-node 1
  MATCH "commstack: error: .*osu-mpi-latency-synthetic.txt: 'OSU MPI-CUDA Latency Test v7.5' measures the MPI library")
# NCCL_MNNVL_ENABLE=0 / no usable NVL72 fabric: the trays talk over their NICs (docs/stack-model.md
# "Inputs"). The log's "MNNVL 0" line is applied with a note; --mnnvl off does the same for a sweep;
# without either, a NIC-speed run on the domain is flagged and the hint predicts it over the NICs.
commstack_cli_test(NAME stack_validate_mnnvl0_from_log
  ARGS validate --cluster gb200-nvl72 --measured tests/cli/nccl-tests-gb200-2x4-mnnvl0-synthetic.txt
  MATCH "# note: tests/cli/nccl-tests-gb200-2x4-mnnvl0-synthetic.txt:13: NCCL printed MNNVL 0 with nNodes 2: .*\n(.*\n)*MAPE [0-9]\\.[0-9]+%")
commstack_cli_test(NAME stack_validate_mnnvl_hint
  ARGS validate --cluster gb200-nvl72 --measured tests/cli/nccl-tests-gb200-2x4-mnnvl0-synthetic.txt --mnnvl on
  MATCH "WARNING: at 2G .*\n# hint: --mnnvl off \\(NCCL_MNNVL_ENABLE=0\\) predicts 19[0-9]\\.[0-9] GB/s at 2G \\(measured 180\\.0\\) and this run within [0-9]\\.[0-9]+% at >= 1 MiB, where the cluster's defaults are 7[0-9]\\.[0-9]+% off: the 2 nodes share one NVLink domain on gb200-nvl72")
commstack_cli_test(NAME stack_collective_mnnvl_off
  ARGS collective --cluster gb200-nvl72 --nodes 2 --op allgather -b 1G -e 1G --mnnvl off
  MATCH "on gb200-nvl72 x 2 nodes; .*16 coll channels \\(ring graph 8 x 24 GB/s\\)")
commstack_cli_error_test(NAME stack_collective_bad_mnnvl
  ARGS collective --cluster gb200-nvl72 --nodes 2 --mnnvl sometimes
  MATCH "commstack: error: --mnnvl: unknown 'sometimes'; expected on or off")
commstack_cli_error_test(NAME stack_validate_mnnvl_twice
  ARGS validate --cluster gb200-nvl72 --measured tests/cli/nccl-tests-gb200-2x4-mnnvl0-synthetic.txt@mnnvl=0 --mnnvl off
  MATCH "commstack: error: --measured .*@mnnvl=0: mnnvl is given both here and as --mnnvl")
# Consecutive sizes that another algorithm / protocol explains where the modelled one misses
# (fit::ValidationResult::other_choices): the Vultr 2-node reduce-scatter's 80 us plateau from
# 256 KiB to 1 MiB is Ring/Simple's latency; text and JSON.
commstack_cli_test(NAME stack_validate_other_choice
  ARGS validate --cluster hgx-b200 --measured calibration/data/nccl-tests/nccl-tests_reduce_scatter_b200_2n8g_vultr-poc.txt --nodes 2 --gpus-per-node 8
  MATCH "# choice: from 256K to 1M \\(3 sizes\\) the measured times follow Ring/Simple \\(within [0-9]\\.[0-9]% on average\\) where the modelled choice \\(Ring/LL, Ring/LL128\\) is 4[0-9]\\.[0-9]% off: NCCL probably ran Ring/Simple there")
commstack_cli_test(NAME stack_validate_other_choice_json
  ARGS validate --cluster hgx-b200 --measured calibration/data/nccl-tests/nccl-tests_reduce_scatter_b200_2n8g_vultr-poc.txt --nodes 2 --gpus-per-node 8 --format json
  MATCH "\"other_choices\": \\[\n *\\{\n *\"matching_choice\": \"Ring/Simple\",\n *\"matching_mape_percent\": [0-9.]+,\n *\"max_bytes\": 1048576,\n *\"min_bytes\": 262144,")
# A binary built or installed outside the source tree predicts with the compiled-in shipped profiles.
add_test(NAME cli.stack_relocated_binary_uses_builtin_profiles
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/relocated_binary.sh $<TARGET_FILE:commstack> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.stack_relocated_binary_uses_builtin_profiles PROPERTIES PASS_REGULAR_EXPRESSION "^ok")
# --host-from: the host-side prior from another generation's shipped profile, or a note where its runs
# do not show the host time (the B200 runs are all -g 1 at sizes that hide the launch).
commstack_cli_test(NAME stack_calibrate_host_from
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt@cluster=dgx-h100,nodes=1,gpus_per_node=8
       --host-from calibration/profiles/a100.json --output /dev/null
  MATCH "note: --host-from: prior launch_us 6.[0-9]+ us \\(geometric mean of 1 profile\\(s\\)\\)\n")
# The summary says which values the runs set: a one-node NVLS run at >= 32 MiB (-g 1) moves the NVLS
# terms, not the host's launch cost nor anything of the network.
commstack_cli_test(NAME stack_calibrate_summary_says_what_is_fitted
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt@cluster=dgx-h100,nodes=1,gpus_per_node=8
       --output /dev/null
  MATCH "  launch_us +8.4 us +\\(prior 8.4; no run constrains it, kept near the prior\\)\n.*  lat_net_ll_us +2.7 us +\\(prior 2.7; no run constrains it, kept near the prior\\)\n.*  eta_nvls +0.6[0-9]+ fraction \\(prior 0.6111\\)\n")
commstack_cli_test(NAME stack_calibrate_host_from_unconstrained
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt@cluster=dgx-h100,nodes=1,gpus_per_node=8
       --host-from calibration/profiles/gh200.json --output /dev/null
  MATCH "note: --host-from: no profile's runs constrain launch_us; its prior stays 8.4 us\n")
commstack_cli_error_test(NAME stack_calibrate_host_from_missing
  ARGS calibrate --input ${_stack_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt@cluster=dgx-h100,nodes=1,gpus_per_node=8
       --host-from nosuch --output /dev/null
  MATCH "commstack: error: --host-from nosuch: no such file, and no shipped profile of that name \\(known: a100, b200, gb200, gh200, h100\\)")
# The host floor line: the Azure H200 -g 8 run sits on 8 launches its profile measured; a B200 run
# driven with -g 8 takes the launch cost from the other generations' hosts (no B200 run shows it).
commstack_cli_test(NAME stack_validate_host_floor_measured
  ARGS validate --cluster hgx-h200
       --measured ${_stack_data}/nccl_allreduce_busbw_azure_ndv5_h200_ndv4_a100_1n8g.csv@series=ndv5_h200_busbw_GBps,op=all_reduce,nodes=1,gpus_per_node=8,algo=nvls,gpus_per_thread=8,in_place=1
  MATCH "# host floor: sizes up to 512K are host-bound: 8 kernel launches per call from one thread \\(nccl-tests -g 8\\), 8 x 3\\.[0-9][0-9] us = 3[0-9]\\.[0-9] us, exceed the device time; launch_us: fitted on this profile's runs\n")
commstack_cli_test(NAME stack_validate_host_floor_other_generations
  ARGS validate --cluster hgx-b200 --measured ${_stack_data}/nccl-tests_all_gather_b200_1n8g_vultr-poc.txt
       --nodes 1 --gpus-per-node 8 --gpus-per-thread 8
  MATCH "# host floor: sizes up to [0-9]+[KM] are host-bound: .*; launch_us: no run of this profile shows its host: taken from other GPU generations' hosts \\(calibrate --host-from\\)\n")
commstack_cli_error_test(NAME stack_collective_buffsize_zero
  ARGS collective --cluster dgx-h100 --nodes 2 --buffsize 0
  MATCH "commstack: error: --buffsize: 0 bytes is too small; expected at least 128 bytes")
commstack_cli_error_test(NAME stack_collective_nvls_chunksize_zero
  ARGS collective --cluster dgx-h100 --nodes 8 --nvls-chunksize 0
  MATCH "commstack: error: --nvls-chunksize 0: expected 1 byte .. 1G")
commstack_cli_error_test(NAME stack_collective_nvlstree_chunk_profile_none
  ARGS collective --cluster dgx-h100 --nodes 8 --profile none --nvlstree-max-chunksize 64K
  MATCH "commstack: error: .*--nvlstree-max-chunksize/.* need the stack model")
# NCCL printed "0 nvls channels" (no multicast support): NVLS and NVLSTree were not candidates, so
# the 2-node sweep is predicted with Ring and Tree only, and a note says why.
commstack_cli_test(NAME validate.zero_nvls_channels_turn_nvls_off
  ARGS validate --cluster dgx-h100 --measured tests/cli/nccl-tests-h100-2x8-no-nvls-synthetic.txt
  MATCH "NCCL printed 0 nvls channels: NVLS was not available to it, so NVLS and NVLSTree are left out.*\n +1073741824 +[0-9.]+ +[0-9.]+ +-?[0-9.]+ +[0-9.]+ +Ring/Simple/16")
