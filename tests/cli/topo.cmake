# commstack topo: presets, overrides, formats, Graphviz output and input errors.

commstack_cli_test(NAME topo.list ARGS topo --list-presets MATCH "dgx-h100 +DGX H100 SuperPOD")
commstack_cli_test(NAME topo.h100 ARGS topo --cluster dgx-h100
                   MATCH "GPUs: +16 \\(2 nodes x 8\\).*diameter: +6 hops.*bisection: +400\\.0 GB/s.*injection: +50\\.0 GB/s")
commstack_cli_test(NAME topo.h100_512 ARGS topo --cluster dgx-h100 --nodes 512
                   MATCH "GPUs: +4096.*fabric switches: +320.*diameter: +8 hops.*bisection: +102400\\.0 GB/s")
commstack_cli_test(NAME topo.json ARGS topo --cluster gb200-nvl72 --format json
                   MATCH "\"gpus\": 144,.*\"diameter_hops\": 6,.*\"bisection_GBps\": 3600\\.0")
commstack_cli_test(NAME topo.torus_nodes ARGS topo --cluster angara-torus --nodes 16
                   MATCH "GPUs: +16 \\(16 nodes x 1\\).*diameter: +8 hops")
commstack_cli_test(NAME topo.file ARGS topo --cluster topologies/presets/gh200-slingshot.json --gpus-per-node 2
                   MATCH "GPUs: +4 \\(2 nodes x 2\\)")
commstack_cli_test(NAME topo.dot ARGS topo --cluster dgx-h100 --dot ${CMAKE_BINARY_DIR}/topo-test.dot MATCH "GPUs: +16")
commstack_cli_error_test(NAME topo.unknown_preset ARGS topo --cluster dgx-h1000
                         MATCH "commstack: error: --cluster dgx-h1000: neither a preset nor a readable file; known presets")
commstack_cli_error_test(NAME topo.missing_file ARGS topo --cluster /nonexistent/cluster.json
                         MATCH "commstack: error: /nonexistent/cluster.json: cannot read the cluster file: no such file")
commstack_cli_error_test(NAME topo.zero_nodes ARGS topo --cluster dgx-h100 --nodes 0
                         MATCH "commstack: error: --nodes: expected a node count >= 1, got 0")
commstack_cli_error_test(NAME topo.no_cluster ARGS topo MATCH "commstack: error: --cluster: required")
commstack_cli_error_test(NAME topo.bad_format ARGS topo --cluster dgx-h100 --format xml MATCH "--format")
commstack_cli_error_test(NAME topo.malformed ARGS topo --cluster tests/cli/topo-malformed.json
                         MATCH "commstack: error: tests/cli/topo-malformed.json: malformed JSON")
commstack_cli_error_test(NAME topo.unknown_field ARGS topo --cluster tests/cli/topo-unknown-field.json
                         MATCH "commstack: error: tests/cli/topo-unknown-field.json: /fabric/radix: unknown field")
commstack_cli_error_test(NAME topo.dot_unwritable ARGS topo --cluster dgx-h100 --dot /nonexistent/dir/x.dot
                         MATCH "commstack: error: --dot /nonexistent/dir/x.dot: cannot open")
# More GPUs per node than the cluster's nodes hold (a DGX H100 has 8 on its NVSwitches) is refused by
# every verb that takes --gpus-per-node: topo, the fabric simulation, the stack model and validate.
commstack_cli_error_test(NAME topo.gpus_per_node_above_node ARGS topo --cluster dgx-h100 --gpus-per-node 9
  MATCH "commstack: error: --gpus-per-node 9: preset dgx-h100's nodes hold 8 GPUs; expected 1\\.\\.8 \\(fewer runs")
commstack_cli_error_test(NAME topo.gpus_per_node_above_file_node
  ARGS topo --cluster tests/cli/cluster-h100-rail-4to1.json --gpus-per-node 16
  MATCH "--gpus-per-node 16: tests/cli/cluster-h100-rail-4to1.json's nodes hold 8 GPUs; expected 1\\.\\.8 .*a larger node\\.gpus in the file")
commstack_cli_error_test(NAME topo.gpus_per_node_collective_fabric
  ARGS collective --profile none --cluster dgx-h100 --nodes 2 --gpus-per-node 9 -b 1M -e 1M
  MATCH "commstack: error: --gpus-per-node 9: preset dgx-h100's nodes hold 8 GPUs; expected 1\\.\\.8")
commstack_cli_error_test(NAME topo.gpus_per_node_collective_stack
  ARGS collective --cluster gb200-nvl72 --nodes 2 --gpus-per-node 72 -b 1M -e 1M
  MATCH "commstack: error: --gpus-per-node 72: preset gb200-nvl72's nodes hold 4 GPUs; expected 1\\.\\.4")
commstack_cli_error_test(NAME topo.gpus_per_node_validate
  ARGS validate --cluster dgx-h100 --nodes 2 --gpus-per-node 9
       --measured calibration/data/nccl-tests/nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt
  MATCH "commstack: error: [^\n]*issue309-qoofyk.txt: --gpus-per-node \\(or gpus_per_node=\\) 9: preset dgx-h100's nodes hold 8 GPUs")
commstack_cli_test(NAME topo.gpus_per_node_fewer ARGS topo --cluster dgx-h100 --gpus-per-node 4
  MATCH "GPUs: +8 \\(2 nodes x 4\\)")
commstack_cli_test(NAME topo.list_alias ARGS topo --list MATCH "angara-torus +Angara 4D torus")
# The contention line: 16 nodes under 4:1 ToRs of 4 nodes slow an alltoall 4 x 12/15 = 3.2x, not a ring.
commstack_cli_test(NAME topo.contention ARGS topo --cluster tests/cli/cluster-h100-4to1-tor.json
                   MATCH "contention: +ring 1\\.00x, tree [0-9.]+x, alltoall 3\\.20x")
# A node model from an NCCL topology XML: written out as a cluster file, usable by every verb.
commstack_cli_test(NAME topo_from_nccl_xml_p5
  ARGS topo --from-nccl-xml calibration/data/nccl-logs/aws-p5-h100-topo.xml --write-cluster ${CMAKE_CURRENT_BINARY_DIR}/p5-from-xml.json
  MATCH "NICs:             64\n.*injection:        50.0 GB/s per GPU")
commstack_cli_error_test(NAME topo_from_nccl_xml_needs_generation
  ARGS topo --from-nccl-xml calibration/data/nccl-logs/azure-ndv4-a100-topo.xml
  MATCH "the XML gives no compute capability \\(PCI entries only\\); pass --cluster PRESET")
# A key written twice: JSON would keep the last one; the file says two things, so it is refused.
commstack_cli_error_test(NAME topo.duplicate_key ARGS topo --cluster tests/cli/cluster-duplicate-key.json
  MATCH "cluster-duplicate-key.json: key \"nodes\" appears twice in the top-level object")
# A dragonfly's contention under both routings: adaptive spreads the ring's router-to-router
# traffic over a router's 15 local links (1x); minimal routes put the 4 channels leaving each
# router's last node on the one local link to the next router, a quarter of the NICs' rate (4x,
# the busbw `collective --profile none` simulates: 25 GB/s against 4 x 25 GB/s of NICs).
commstack_cli_test(NAME topo.dragonfly_minimal_routing ARGS topo --cluster gh200-slingshot --nodes 64
  MATCH "contention: +ring 1\\.00x.*adaptive routing.*minimal routes: +ring 4\\.00x")
# A misspelt required key ("dim" for "dims") is named as the likely culprit, not only as missing.
commstack_cli_error_test(NAME topo.misspelt_required_key ARGS topo --cluster tests/cli/cluster-misspelt-dims.json
  MATCH "/fabric/dims: missing required field \\(the object has \"dim\": a misspelling of \"dims\"\\?\\)")
