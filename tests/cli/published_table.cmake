# validate / calibrate on published nccl-tests tables (calibration/fit/published_table; run from the source directory).
set(_pt_data calibration/data/nccl-tests)
set(_pt_azure ${_pt_data}/nccl_allreduce_busbw_azure_ndv5_h200_ndv4_a100_1n8g.csv)
set(_pt_ndmv4 ${_pt_data}/nccl-tests_multi-op_a100_ndmv4_mscclpp-docs_PARTIAL.csv)
# ND A100 v4: 24 sizes, 1K..8K dropped by the rounding rule; 1G busbw 228.10 -> 1073741824 x 2 x 7/8 / 228.10e3 us.
commstack_cli_test(NAME published_table_validate_azure
  ARGS validate --cluster dgx-a100 --measured ${_pt_azure}@series=ndv4_a100_busbw_GBps,op=all_reduce,nodes=1,gpus_per_node=8
  MATCH "MAPE [0-9.]+% over 20 sizes \\(>=1MiB: [0-9.]+% over 14; <1MiB: [0-9.]+% over 6\\)")
commstack_cli_test(NAME published_table_validate_csv_note
  ARGS validate --cluster dgx-a100 --measured ${_pt_azure}@series=ndv4_a100_busbw_GBps,op=all_reduce --nodes 1
       --gpus-per-node 8 --format csv
  MATCH "# note: [^\n]*:6: dropped size 1024: ndv4_a100_busbw_GBps GB/s printed as '0.04' is only known to 12.5%.*\n1073741824,8237.826,")
commstack_cli_test(NAME published_table_validate_multi_op
  ARGS validate --cluster dgx-a100 --measured ${_pt_ndmv4}@config=2node_8gpu,op=allreduce --format csv
  MATCH "^size[^\n]*\n1024,35.850,.*4294967296,42794.4[0-9]+,.*# MAPE [0-9.]+% over 3 sizes")
commstack_cli_test(NAME published_table_calibrate_note
  ARGS calibrate --input ${_pt_azure}@cluster=dgx-a100,series=ndv4_a100_busbw_GBps,op=all_reduce,nodes=1,gpus_per_node=8
       --input ${_pt_ndmv4}@cluster=dgx-a100,config=1node_8gpu,op=all_gather --output /dev/null
  MATCH "note: [^\n]*dropped size 8192.*wrote /dev/null: 22 points from 2 run\\(s\\)")
commstack_cli_error_test(NAME published_table_unknown_series
  ARGS validate --cluster dgx-a100 --measured ${_pt_azure}@series=ndv9_busbw_GBps,op=all_reduce,nodes=1,gpus_per_node=8
  MATCH "commstack: error: .*azure_ndv5_h200_ndv4_a100_1n8g.csv: series \"ndv9_busbw_GBps\": no such column \\(expected one of ndv5_h200_busbw_GBps, ndv4_a100_busbw_GBps\\)")
commstack_cli_error_test(NAME published_table_given_twice
  ARGS validate --cluster dgx-a100 --measured ${_pt_ndmv4}@config=2node_8gpu,op=allreduce,nodes=2 --nodes 2
  MATCH "commstack: error: --measured .*: nodes is given both here and as --nodes")
commstack_cli_error_test(NAME published_table_series_on_log
  ARGS validate --cluster dgx-h100 --measured ${_pt_data}/nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt@series=x,nodes=1,gpus_per_node=8
  MATCH "commstack: error: .*issue290.txt: series= and config= select a published table's points, but this file is not one")
