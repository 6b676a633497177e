# commstack plan: ranked output in three formats, input errors, and the Megatron SC'21 acceptance run.
commstack_cli_test(NAME plan.text
  ARGS plan --cluster dgx-a100 --nodes 2 --model megatron-1.7b --global-batch 32 --max-micro-batch 2 --cp 1 --top 3
  MATCH "configurations enumerated: [0-9]+ break a rule.*[0-9]+ simulated, [0-9]+ pruned by the lower bound.*\n +1 +[1248] +[0-9]+ ")
commstack_cli_test(NAME plan.csv
  ARGS plan --cluster dgx-a100 --nodes 2 --model megatron-1.7b --global-batch 32 --max-micro-batch 2 --cp 1 --top 2 --format csv
  MATCH "^rank,tp,pp,vs,dp,cp,ep,etp,zero,micro_batch,sequence_parallel,recompute,iteration_s,bound_s,.*\n1,[0-9]+,[0-9]+,.*\n2,")
commstack_cli_test(NAME plan.json
  ARGS plan --cluster dgx-a100 --nodes 2 --model megatron-1.7b --global-batch 32 --max-micro-batch 2 --cp 1 --top 2 --format json
  MATCH "\"pruned_by_bound\": [0-9]+.*\"ranked\": \\[.*\"rank\": 2")
# Llama 3 405B's 126 layers do not split over PP 16; with the embedding and the loss counted as
# layers (Megatron's account_for_*_in_pipeline_split) they do: the row says so.
commstack_cli_test(NAME plan.embedding_loss_split
  ARGS plan --cluster dgx-h100 --nodes 16 --model llama3-405b --tp 8 --pp 16 --cp 1 --zero 0 --micro-batch 1 --recompute full --global-batch 16 --seq 4096 --virtual-stages 1 --sequence-parallel on --format csv
  MATCH ",tail_s,pipeline_split.*1,8,16,1,1,1,1,,0,1,on,full,[0-9.,]+,embedding[+]loss")
# Ctrl-C stops the search, prints what it has with a STOPPED note, exits 130.
add_test(NAME cli.plan.interrupted
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/cli/plan_interrupt.sh $<TARGET_FILE:commstack> ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.plan.interrupted PROPERTIES PASS_REGULAR_EXPRESSION "^ok")
commstack_cli_error_test(NAME plan.unknown_model
  ARGS plan --cluster dgx-a100 --nodes 1 --model gpt-7
  MATCH "gpt-7")
commstack_cli_error_test(NAME plan.nothing_fits
  ARGS plan --cluster dgx-a100 --nodes 1 --model korthikanti-175b --global-batch 8
  MATCH "none of the [0-9]+ valid configurations of korthikanti-175b fits in the 74.5 GiB.*the smallest needs [0-9.]+ GiB")
commstack_cli_error_test(NAME plan.bad_list
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 2,x
  MATCH "--tp: 'x' is not a whole number")
commstack_cli_error_test(NAME plan.bad_recompute
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --recompute none,most
  MATCH "--recompute: unknown 'most'")
commstack_cli_error_test(NAME plan.no_valid_config
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 5
  MATCH "no combination of the requested degrees multiplies to the 8 GPUs")
commstack_cli_error_test(NAME plan.bad_format
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --format xml
  MATCH "--format: unknown format 'xml'")

# Acceptance (issue #5): Megatron-LM SC'21 Table 1, 145.6B row (GPT, 80 layers, h 12288) on 1536 A100
# (Selene: dgx-a100 preset, 192 nodes) with the row's published global batch 2304, seq 2048 and
# micro-batch 2 (workloads/reference/training_megatron-sc21_weak-scaling_table1.csv), the settings of
# Megatron-LM 2021 (full recomputation, no sequence parallelism, no context parallelism, no
# distributed optimizer, attention scores materialized in HBM) and the compute profile fitted on rows 1-3 of that table
# (results/megatron-sc21-table1/a100-fitted.json; the 145.6B row is not in the fit). The paper
# chose TP 8, PP 8: a "1,8,8," / "2,8,8," / "3,8,8," CSV line must be printed (top 3).
commstack_cli_test(NAME plan.sc21_175b_tp8_pp8_in_top3
  ARGS plan --cluster dgx-a100 --nodes 192 --model megatron-145.6b --global-batch 2304 --seq 2048 --micro-batch 2
       --recompute full --sequence-parallel off --cp 1 --zero 0 --attention materialized --tp-backward-overlap off --overlap-grad-reduce off
       --compute-profile results/megatron-sc21-table1/a100-fitted.json --top 3 --format csv
  MATCH "\n[123],8,8,")
set_tests_properties(cli.plan.sc21_175b_tp8_pp8_in_top3 PROPERTIES LABELS slow TIMEOUT 1800)
# A value listed twice would enumerate its configurations twice and fill the top list with copies.
commstack_cli_error_test(NAME plan.repeated_value
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 2,2
  MATCH "--tp: '2' is listed twice; expected each value once")
commstack_cli_error_test(NAME plan.repeated_recompute
  ARGS plan --cluster dgx-a100 --nodes 1 --model megatron-1.7b --recompute none,none
  MATCH "--recompute: 'none' is listed twice")
# MoE: plan tries expert TP 1 and TP (Megatron's default); on two DGX H100 whole experts keep
# Mixtral's EP8 all-to-all inside a node and rank first.
commstack_cli_test(NAME plan.expert_tp
  ARGS plan --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --global-batch 64 --seq 4096 --tp 2 --pp 1 --cp 1 --ep 8 --zero 1 --micro-batch 1 --recompute none --sequence-parallel on --format csv
  MATCH "rank,tp,pp,vs,dp,cp,ep,etp,zero,.*\n1,2,1,1,8,1,8,1,1,1,on,none,.*\n2,2,1,1,8,1,8,2,1,1,on,none,")
# The settings every candidate shares, where not the defaults, are in the header: the ranking holds
# for them only.
commstack_cli_test(NAME plan.header_names_fixed_settings
  ARGS plan --cluster dgx-a100 --nodes 2 --model megatron-1.7b --global-batch 32 --max-micro-batch 2 --cp 1 --top 1 --attention materialized --tp-backward-overlap off --grad-dtype fp32 --channels 4
  MATCH "# global batch 32, seq 2048, bf16, attention materialized, tp-backward-overlap off, grad-dtype fp32, channels 4; compute profile")
commstack_cli_test(NAME plan.header_moe_token_dispatcher
  ARGS plan --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --global-batch 16 --seq 4096 --max-micro-batch 1 --cp 1 --zero 1 --top 1 --moe-token-dispatcher allgather
  MATCH "bf16, moe-token-dispatcher allgather; compute profile.*\n +1 ")
