# End-to-end tests of `commstack collective` (cli/verb_collective.cpp).


# The README's collective example (shortened sweep): nccl-tests header and a row per size.
commstack_cli_test(NAME collective.readme_job
  ARGS collective --cluster dgx-h100 --nodes 2 --op allreduce --max-bytes 64K
  MATCH "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        \\(B\\)    \\(elements\\)[^\n]*\n +8 +2 +float +sum +-1 ")
# Pinned value (regression and determinism): 1 GiB ring all-reduce on 2 DGX H100, 8 rings over the
# 8 NICs of 50 GB/s: busbw tends to 400 GB/s.
commstack_cli_test(NAME collective.allreduce_1g_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --min-bytes 1G --max-bytes 1G
  MATCH "  1073741824     268435456     float     sum      -1   5036.0  213.21  399.78    N/A   5036.0  213.21  399.78    N/A")
commstack_cli_test(NAME collective.allgather_csv
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --op allgather --min-bytes 1M --max-bytes 4M --format csv
  MATCH "op,nranks,size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,fidelity,flows,chunks,algorithm,protocol,nccl_channels\nallgather,16,1048576,16384,float,none,-1,[0-9.]+,[0-9.]+,[0-9.]+,chunk,[0-9]+,[0-9]+,-,-,0\n")
commstack_cli_test(NAME collective.reducescatter_json
  ARGS collective --profile none --cluster dgx-h100 --nodes 1 --op reducescatter --min-bytes 8 --max-bytes 1K --format json
  MATCH "\"op\": \"reducescatter\"")
# nccl-tests prints alltoall's count per peer (16 ranks: 1 MiB of floats = 16384 per peer).
commstack_cli_test(NAME collective.alltoall
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --op alltoall --min-bytes 1M --max-bytes 16M --alltoall-peers 4
  MATCH "  1048576         16384     float    none      -1 ")
commstack_cli_test(NAME collective.broadcast_root
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --op broadcast --min-bytes 64M --max-bytes 64M --fidelity edge
  MATCH "    67108864      16777216     float    none       0 ")
commstack_cli_test(NAME collective.reduce
  ARGS collective --profile none --cluster dgx-h100 --op reduce --min-bytes 1M --max-bytes 1M --fidelity chunk
  MATCH "     1048576        262144     float     sum       0 ")
commstack_cli_test(NAME collective.sendrecv_trace
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --op sendrecv --min-bytes 1K --max-bytes 1M --step-factor 4
       --channels 2 --step-overhead 1us --trace ${CMAKE_CURRENT_BINARY_DIR}/collective-trace.json
  MATCH "     1048576        262144     float     sum      -1 ")

commstack_cli_error_test(NAME collective.negative_size
  ARGS collective --cluster dgx-h100 --min-bytes -1 MATCH "commstack: error: --min-bytes: '-1' is negative")
commstack_cli_error_test(NAME collective.min_above_max
  ARGS collective --cluster dgx-h100 --min-bytes 1G --max-bytes 1M MATCH "--min-bytes 1G is larger than --max-bytes 1M")
commstack_cli_error_test(NAME collective.step_factor_1
  ARGS collective --cluster dgx-h100 --step-factor 1 MATCH "--step-factor: 1 is out of range; expected 2 to")
commstack_cli_error_test(NAME collective.zero_nodes
  ARGS collective --cluster dgx-h100 --nodes 0 MATCH "--nodes: 0 is out of range; expected 1 to")
commstack_cli_error_test(NAME collective.bad_op
  ARGS collective --cluster dgx-h100 --op allreduse MATCH "--op: unknown collective 'allreduse'; expected one of allreduce")
commstack_cli_error_test(NAME collective.bad_format
  ARGS collective --cluster dgx-h100 --format xml MATCH "--format: unknown format 'xml'")
commstack_cli_error_test(NAME collective.bad_fidelity
  ARGS collective --cluster dgx-h100 --fidelity coarse MATCH "--fidelity: unknown level 'coarse'")
commstack_cli_error_test(NAME collective.bad_channels
  ARGS collective --cluster dgx-h100 --channels 0 MATCH "--channels: 0 is out of range; expected 1 to 64")
commstack_cli_error_test(NAME collective.unknown_cluster
  ARGS collective --cluster no-such-cluster MATCH "commstack: error: .*no-such-cluster")
commstack_cli_error_test(NAME collective.bad_size_suffix
  ARGS collective --cluster dgx-h100 --max-bytes 3X MATCH "--max-bytes: unknown size suffix")
# The stack model's CSV rows carry NCCL's algorithm, protocol and channels (no flows).
commstack_cli_test(NAME collective.stack_csv
  ARGS collective --cluster dgx-h100 --nodes 2 --op allgather -b 1G -e 1G --format csv
  MATCH "allgather,16,1073741824,16777216,float,none,-1,[0-9.]+,[0-9.]+,[0-9.]+,-,0,0,Ring,Simple,16\n")

# NCCL's Tree on the fabric (--profile none --algo tree): 4 DGX H100 nodes, 1 GiB. The double
# binary tree sends 2 S through some node's 8 NICs of 50 GB/s (a 5369 us bound); pinned value.
commstack_cli_test(NAME collective.tree_allreduce_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 4 --algo tree --min-bytes 1G --max-bytes 1G
  MATCH "NCCL's double binary tree[^\n]*\n.*  1073741824     268435456     float     sum      -1   5473.7  196.16  380.07    N/A")
commstack_cli_error_test(NAME collective.tree_not_allgather
  ARGS collective --profile none --cluster dgx-h100 --algo tree --op allgather
  MATCH "--algo tree: the tree algorithm runs all-reduce only")
commstack_cli_error_test(NAME collective.fabric_algo_unknown
  ARGS collective --profile none --cluster dgx-h100 --algo collnet
  MATCH "--algo: the SimGrid fabric simulation runs algorithm ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain, not 'collnet'")
# CollNet on the fabric (--algo collnetdirect|collnetchain): the InfiniBand switches reduce (SHARP). 4 DGX
# H100 nodes, 1 GiB: each GPU's NVLink port carries 1.75 S each way (the scatter to and the gather
# from the other 7 heads), a 4175.5 us bound that the NICs (S/8 each way) leave far behind; pinned.
commstack_cli_test(NAME collective.collnetdirect_allreduce_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 4 --algo collnetdirect --min-bytes 1G --max-bytes 1G
  MATCH "CollNetDirect \\(scatter to the NIC heads[^\n]*\n.*  1073741824     268435456     float     sum      -1   4176.3  257.11  498.14    N/A")
# 64 nodes (two scalable units: the rail trees climb to a spine), 1 MiB, NCCL's chunk rule; pinned.
commstack_cli_test(NAME collective.collnetchain_two_units_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 64 --algo collnetchain --min-bytes 1M --max-bytes 1M
  MATCH "CollNetChain \\(a chain to the NIC head[^\n]*\n.*     1048576        262144     float     sum      -1    17.08   61.38  122.52    N/A")
commstack_cli_error_test(NAME collective.collnet_not_on_dragonfly
  ARGS collective --profile none --cluster gh200-slingshot --nodes 4 --algo collnetdirect
  MATCH "the collnet algorithms reduce in the fabric's switches \\(InfiniBand SHARP-capable switches, as in a fat tree\\), but the 4 NIC\\(s\\) of node 0 of topology 'gh200-slingshot x 4 nodes' are cabled to dragonfly routers, which do not reduce")
# NCCL's node under MNNVL is the NVLink domain: 72 ranks, more than CollNet's 8 (src/enqueue.cc).
commstack_cli_error_test(NAME collective.collnet_mnnvl_domain
  ARGS collective --profile none --cluster gb200-nvl72 --nodes 36 --algo collnetdirect
  MATCH "NCCL runs CollNet with at most 8 ranks per node .* GPU 0's node \\(its NVLink domain\\) has 72 of them; --mnnvl off")
commstack_cli_error_test(NAME collective.collnet_allreduce_only
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --algo collnetdirect --op allgather
  MATCH "the collnetdirect algorithm runs allreduce only")
commstack_cli_error_test(NAME collective.collnet_one_node
  ARGS collective --profile none --cluster dgx-h100 --nodes 1 --algo collnetchain
  MATCH "all 8 ranks are on one node")
commstack_cli_error_test(NAME collective.collnet_not_otf2
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --algo collnetchain --otf2 /tmp/commstack-collnet-otf2
  MATCH "--otf2 records messages between ranks, and --algo collnetchain moves its data through switches")
# NVLS on the fabric (--profile none --algo nvls): one DGX H100 node, 1 GiB. Each GPU's 450 GB/s port
# carries S + S/8 each way (a 2684 us bound, bus bandwidth 700 GB/s); pinned value.
commstack_cli_test(NAME collective.nvls_allreduce_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 1 --algo nvls --min-bytes 1G --max-bytes 1G
  MATCH "NVLS \\(reduction and multicast in the NVSwitch\\)[^\n]*\n.*  1073741824     268435456     float     sum      -1   2738.5  392.09  686.16    N/A")
# PAT on the fabric (--algo pat): 16 DGX H100 nodes at one GPU each, a 64 KiB all-gather in log2 16 = 4
# aggregated steps (10.03 us) where the ring takes 15 (34.23 us); pinned value.
commstack_cli_test(NAME collective.pat_allgather_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 16 --gpus-per-node 1 --algo pat --op allgather --min-bytes 64K --max-bytes 64K
  MATCH "PAT \\(binomial trees, one aggregated transfer per step\\)[^\n]*\n.*       65536          1024     float    none      -1    10.03    6.53    6.13    N/A")
commstack_cli_error_test(NAME collective.pat_one_gpu_per_node
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --algo pat --op allgather
  MATCH "the pat algorithm needs one GPU per node .* the 16 ranks span 2 node")
commstack_cli_error_test(NAME collective.pat_no_chunk
  ARGS collective --profile none --cluster dgx-h100 --nodes 4 --gpus-per-node 1 --algo pat --op allgather --chunk-bytes 1M
  MATCH "--chunk-bytes 1M: PAT moves each aggregated step as one transfer")
# NVLSTree on the fabric (--algo nvlstree): 2 DGX H100 nodes, 1 GiB. Each node's 8 NICs and each GPU's
# NVLink port both bound it at S / 400 GB/s (2684 us, bus bandwidth 750 GB/s); pinned value.
commstack_cli_test(NAME collective.nvlstree_allreduce_pinned
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --algo nvlstree --min-bytes 1G --max-bytes 1G
  MATCH "NVLSTree \\(NVLS in each NVLink domain[^\n]*\n.*  1073741824     268435456     float     sum      -1   2841.0  377.94  708.64    N/A")
commstack_cli_error_test(NAME collective.nvls_across_nodes
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --algo nvls
  MATCH "runs inside one NVLink domain, but GPUs 0 and 8 .* NVLSTree")
commstack_cli_error_test(NAME collective.nvls_not_otf2
  ARGS collective --profile none --cluster dgx-h100 --nodes 1 --algo nvls --otf2 /tmp/commstack-nvls-otf2
  MATCH "--otf2 records messages between ranks")
# The contention layer: on 16 nodes under 4:1 oversubscribed ToRs (4 nodes each) an alltoall's network
# stage runs 4 x 12/15 = 3.2x slower than the NICs allow; the breakdown says so.
commstack_cli_test(NAME collective.contention_oversubscribed_alltoall
  ARGS collective --cluster tests/cli/cluster-h100-4to1-tor.json --op alltoall --min-bytes 1G --max-bytes 1G --breakdown
  MATCH "contention [0-9.]+ = [0-9.]+ us \\(fabric 3.200x slower than the NICs\\)")
# The same cluster on the SimGrid fabric (max-min sharing of the d-mod-k routes, independent of the
# contention layer's counting): a 256 MiB alltoall takes 16109 us, 3.199x the 5036 us of the
# non-blocking ToRs (docs/stack-model.md): the layer's 3.2.
commstack_cli_test(NAME collective.contention_oversubscribed_alltoall_simgrid
  ARGS collective --profile none --cluster tests/cli/cluster-h100-4to1-tor.json --op alltoall --min-bytes 256M --max-bytes 256M
  MATCH "   268435456        524288     float    none      -1    16109   16.66   16.53    N/A")
# Rail-optimized, 32 nodes, leaves of 8 nodes per rail with 4:1 uplinks: NCCL's PXN keeps an alltoall's
# network bytes on the peer's rail: a rail leaf sends 8 nodes x 24 remote nodes of flows over a quarter of
# its 8 NICs' rate, a NIC 31: 4 x 24/31 = 3.097x the NICs' time. The stack model's contention layer and the SimGrid fabric simulation (PXN
# relays in sim/algorithms/p2p.cpp; 64427 us against 20807 us non-blocking, 3.096x) agree.
commstack_cli_test(NAME collective.contention_rail_alltoall
  ARGS collective --cluster tests/cli/cluster-h100-rail-4to1.json --op alltoall --min-bytes 1G --max-bytes 1G --breakdown
  MATCH "\\(fabric 3.097x slower than the NICs\\)")
commstack_cli_test(NAME collective.pxn_rail_alltoall_simgrid
  ARGS collective --profile none --cluster tests/cli/cluster-h100-rail-4to1.json --op alltoall --min-bytes 1G --max-bytes 1G
  MATCH "  1073741824       1048576     float    none      -1    64427   16.67   16.60    N/A")
# NCCL's Tree on the 4:1 ToR cluster: the SimGrid fabric simulation (--algo tree) takes 8193.1 us
# against 5520.5 us on non-blocking ToRs, 1.484x; the contention layer's tree factor is 6/4 = 1.5
# (tests/unit/test_stack_contention.cpp) and the stack model predicts 8290 us.
commstack_cli_test(NAME collective.contention_tree_simgrid
  ARGS collective --profile none --algo tree --cluster tests/cli/cluster-h100-4to1-tor.json --min-bytes 1G --max-bytes 1G
  MATCH "  1073741824     268435456     float     sum      -1   8193.1  131.05  260.06    N/A")
# Rails with 4:1 leaf uplinks: a ring's node crossing leaves by the NIC of the next node's entry GPU
# (relayed over NVLink, PXN) and a tree channel's network ends share one NIC, so both stay on one rail
# and run as on non-blocking rails: ring 5351.1 us, tree 5552.0 us at 1:1, 2:1 and 4:1
# (results/contention-oversubscription), where NCCL's contention factor is 1 too.
commstack_cli_test(NAME collective.pxn_rail_ring_simgrid
  ARGS collective --profile none --algo ring --cluster tests/cli/cluster-h100-rail-4to1.json --min-bytes 1G --max-bytes 1G
  MATCH "  1073741824     268435456     float     sum      -1   5351.1  200.66  399.75    N/A")
commstack_cli_test(NAME collective.pxn_rail_tree_simgrid
  ARGS collective --profile none --algo tree --cluster tests/cli/cluster-h100-rail-4to1.json --min-bytes 1G --max-bytes 1G
  MATCH "  1073741824     268435456     float     sum      -1   5552.0  193.40  385.28    N/A")
# --mnnvl off splits an NVL72 domain into its trays for the fabric simulation too: two trays' ring
# all-gather runs at their 4 x 400 Gb/s NICs (bus bandwidth 200 GB/s at line rate), not on NVLink.
commstack_cli_test(NAME collective_fabric_mnnvl_off
  ARGS collective --cluster gb200-nvl72 --nodes 2 --op allgather -b 1G -e 1G --profile none --mnnvl off
  MATCH "1073741824 +33554432 +float +none +-1 +[0-9.]+ +[0-9.]+ +(19[0-9]|200)\\.[0-9]+ ")
# A ring over two GB200 NVL72 racks leaves each rack through the NICs of different trays, one per
# channel, as NCCL's ring graph spreads them over the domain's NICs: 16 channels x 50 GB/s (400 Gb/s
# NICs) bound the bus bandwidth at 800 GB/s. With every channel leaving through the last tray's 4
# NICs it was 200 (that tray's NICs), what --mnnvl off gives (four NICs per 4-GPU node).
commstack_cli_test(NAME collective.gb200_two_racks_spread_nics
  ARGS collective --profile none --cluster gb200-nvl72 --nodes 36 --channels 16 -b 256M -e 256M
  MATCH "268435456 +67108864 +float +sum +-1 +[0-9.]+ +[0-9.]+ +79[0-9]\\.[0-9]+ +N/A")
commstack_cli_test(NAME collective.gb200_two_racks_mnnvl_off
  ARGS collective --profile none --cluster gb200-nvl72 --nodes 36 --channels 16 -b 256M -e 256M --mnnvl off
  MATCH "268435456 +67108864 +float +sum +-1 +[0-9.]+ +[0-9.]+ +199\\.[0-9]+ +N/A")
# GPUs with several NICs (AWS p5: 4 per H100): the fabric simulation routes a GPU through one of
# them, which understates the bandwidth; it says so (the stack model counts every NIC).
commstack_cli_test(NAME collective.several_nics_per_gpu_note
  ARGS collective --profile none --cluster tests/cli/cluster-two-nics-per-gpu.json -b 1M -e 1M
  MATCH "commstack: note: GPUs of two-nics-per-gpu x 2 nodes own up to 2 NICs each; the fabric simulation sends a GPU's network traffic through one of them")
# The nccl-tests header says which nccl-tests -g (nGpus) and -G (graph:) the prediction models:
# validate reads both from exactly these fields.
commstack_cli_test(NAME collective.header_gpus_per_thread_graph
  ARGS collective --cluster dgx-a100 --nodes 1 --gpus-per-thread 8 --cuda-graph on -b 8 -e 8
  MATCH "\n# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2\\(factor\\) warmup iters: 0 iters: 1 agg iters: 1 validation: 0 graph: 1\n")
# Round trip: collective's log fed to validate on the same cluster predicts its own times (~0%
# MAPE; the log's times are rounded). One thread driving 8 GPUs (-g 8) puts 8 launches of host
# time on the small sizes; read back as nGpus 1 they were 39% off. With -G the host time is hidden.
add_test(NAME cli.collective.validate_roundtrip_g8
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/collective_validate_roundtrip.sh $<TARGET_FILE:commstack>
          ${CMAKE_CURRENT_BINARY_DIR} rt-g8 0.1 dgx-a100 1 8 --gpus-per-thread 8 -b 8 -e 1G
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.collective.validate_roundtrip_g8_graph
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/collective_validate_roundtrip.sh $<TARGET_FILE:commstack>
          ${CMAKE_CURRENT_BINARY_DIR} rt-g8-graph 0.1 dgx-a100 1 8 --gpus-per-thread 8 --cuda-graph on -b 8 -e 1G
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# nccl-tests' per-rank count for all-gather / reduce-scatter (as alltoall's per peer) is
# (count/nranks) & -(16/eltSize): on 8 ranks sizes below 128 bytes are 0 (the B200 log
# calibration/data/nccl-tests/nccl-tests_all_gather_b200_1n8g_vultr-poc.txt: 0 0 0 0 128 ...).
commstack_cli_test(NAME collective.allgather_16_byte_alignment
  ARGS collective --cluster dgx-h100 --nodes 1 --op allgather -b 8 -e 256
  MATCH "\\(GB/s\\)\n +0 +0 +float +none +-1 +0\\.00 +0\\.00 +0\\.00 +N/A +0\\.00 +0\\.00 +0\\.00 +N/A\n +0 +0 +float +none +-1 +0\\.00 +0\\.00 +0\\.00 +N/A +0\\.00 +0\\.00 +0\\.00 +N/A\n +0 +0 +float +none +-1 +0\\.00 +0\\.00 +0\\.00 +N/A +0\\.00 +0\\.00 +0\\.00 +N/A\n +0 +0 +float +none +-1 +0\\.00 +0\\.00 +0\\.00 +N/A +0\\.00 +0\\.00 +0\\.00 +N/A\n +128 +4 +float +none +-1 [^\n]*\n +256 +8 +float ")
commstack_cli_test(NAME collective.reducescatter_16_byte_alignment
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --op reducescatter -b 64 -e 512 --format csv
  MATCH "\nreducescatter,16,0,0,float,sum,-1,0,0,0,chunk,0,1,-,-,0\nreducescatter,16,0,0,float,sum,-1,0,0,0,chunk,0,1,-,-,0\nreducescatter,16,256,4,[^\n]*\nreducescatter,16,512,8,")
# --breakdown with --format json / csv: each row carries its layers as validate's do (a breakdown
# object per row, the layer columns), and nothing follows the JSON document or the CSV rows.
commstack_cli_test(NAME collective.breakdown_json
  ARGS collective --cluster dgx-h100 --nodes 2 -b 1M -e 4M --breakdown --format json
  MATCH "\"nccl_channels\": 16,\n +\"breakdown\": {\n +\"launch_us\": [0-9.]+,\n +\"algorithm_latency_us\": [0-9.]+,\n +\"fabric_latency_us\": [0-9.]+,\n +\"fabric_bandwidth_us\": [0-9.]+,\n +\"transport_us\": [0-9.]+,\n +\"protocol_us\": [0-9.]+,\n +\"contention_us\": [0-9.]+\n +}\n +}\n +\\]\n}\n$")
set(_breakdown_csv_row "allreduce,16,[0-9]+,[0-9]+,float,sum,-1,[0-9.]+,[0-9.]+,[0-9.]+,-,0,0,[A-Za-z]+,[A-Za-z0-9]+,16(,[0-9]+\\.[0-9][0-9][0-9][0-9])+\n")
commstack_cli_test(NAME collective.breakdown_csv
  ARGS collective --cluster dgx-h100 --nodes 2 -b 1M -e 4M --breakdown --format csv
  MATCH "^op,[^\n]*,nccl_channels,launch_us,algorithm_latency_us,fabric_latency_us,fabric_bandwidth_us,transport_us,protocol_us,contention_us\n${_breakdown_csv_row}${_breakdown_csv_row}${_breakdown_csv_row}$")
# A zero-byte call in the stack model's CSV / JSON is a stack-model row like the others (fidelity
# "-", no flows or chunks, no algorithm), not a SimGrid one (chunk, 1).
commstack_cli_test(NAME collective.stack_zero_size_csv
  ARGS collective --cluster dgx-h100 --nodes 1 --op allgather -b 0 -e 128 --format csv --breakdown
  MATCH "\nallgather,8,0,0,float,none,-1,0,0,0,-,0,0,-,-,0,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000\n")
commstack_cli_test(NAME collective.stack_zero_size_json
  ARGS collective --cluster dgx-h100 --nodes 1 -b 0 -e 8 --format json
  MATCH "\"size_bytes\": 0,\n +\"count\": 0,\n +\"time_us\": 0.0,\n +\"algbw_GBps\": 0.0,\n +\"busbw_GBps\": 0.0,\n +\"algorithm\": \"-\",\n +\"protocol\": \"-\",\n +\"nccl_channels\": 0\n")
