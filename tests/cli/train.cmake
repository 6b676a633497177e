# commstack train: end-to-end runs and input errors.
commstack_cli_test(NAME train.text
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 2 --dp 4 --global-batch 64 --micro-batch 4 --recompute full
  MATCH "iteration time +[0-9.]+ s.*MFU.*PP bubble")
commstack_cli_test(NAME train.json
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 2 --dp 4 --global-batch 64 --format json
  MATCH "\"iteration_s\": [0-9.]+.*\"breakdown_s\"")
commstack_cli_test(NAME train.trace
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 2 --pp 2 --dp 2 --global-batch 8 --trace ${CMAKE_CURRENT_BINARY_DIR}/train-trace.json
  MATCH "tokens/s")
# Without --dp, data parallelism takes the GPUs left (Megatron-LM): 16 GPUs / (tp 2 x pp 2) = dp 4,
# global batch micro-batch x dp = 4; refused where tp x pp x cp does not divide the GPUs.
commstack_cli_test(NAME train.dp_derived
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 2
  MATCH "note: --dp not given: 16 GPUs / \\(tp 2 x pp 2 x cp 1\\) = dp 4.*tp 2 pp 2 dp 4 cp 1 ep 1 zero 0 sp off vs 1 mb 1 gbs 4 ")
commstack_cli_error_test(NAME train.dp_not_derivable
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 3
  MATCH "--dp not given and tp x pp x cp = 3 x 1 x 1 = 3 does not divide the cluster's 16 GPUs")
commstack_cli_error_test(NAME train.tp_not_dividing_heads
  ARGS train --cluster dgx-a100 --nodes 5 --model megatron-1.7b --tp 5 --pp 1 --dp 8
  MATCH "tp.*does not divide the 24 attention heads")
# Uneven stages (Megatron --decoder-first/last-pipeline-num-layers): 3 + 9 + 9 + 3 layers.
commstack_cli_test(NAME train.uneven_stages
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --global-batch 8 --decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 3
  MATCH "stage layers first 3 middle 9 last 3.*iteration time")
commstack_cli_test(NAME train.embedding_loss_in_split
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 8 --pp 2 --global-batch 8 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
  MATCH "stage layers first 12 last 12")
commstack_cli_error_test(NAME train.uneven_stages_not_splitting
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 4 --pp 4 --decoder-first-pipeline-num-layers 4
  MATCH "--decoder-first-pipeline-num-layers: the 20 layers left are not a multiple of middle stages x virtual_stages = 3 x 1")
commstack_cli_error_test(NAME train.embedding_in_split_not_dividing
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 4 --pp 4 --account-for-embedding-in-pipeline-split
  MATCH "pp[*]virtual_stages = 4[*]1 = 4 does not divide the 25 layers of megatron-1.7b [(]with the embedding / loss counted as layers[)]")
commstack_cli_error_test(NAME train.pp_not_dividing_layers
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 1 --pp 16 --dp 1
  MATCH "pp.*does not divide the 24 layers")
commstack_cli_error_test(NAME train.gpu_count_mismatch
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 2 --dp 2
  MATCH "tp\\*pp\\*dp\\*cp = 2\\*2\\*2\\*1 = 8 but the cluster has 16 GPUs")
commstack_cli_error_test(NAME train.out_of_memory
  ARGS train --cluster dgx-a100 --nodes 1 --model korthikanti-175b --tp 8 --pp 1 --dp 1
  MATCH "memory: pipeline stage 0 needs 355.0 GiB per GPU \\(weights 40.7, gradients 40.7, optimizer 244.3, activations 29.3.*has 74.5 GiB")
commstack_cli_error_test(NAME train.bad_precision
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --precision fp4
  MATCH "--precision: unknown 'fp4'")
commstack_cli_error_test(NAME train.fp8_on_a100
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --precision fp8
  MATCH "fp8")
commstack_cli_error_test(NAME train.bad_number
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp eight
  MATCH "--tp: 'eight' is not a whole number")
commstack_cli_error_test(NAME train.unknown_model
  ARGS train --cluster dgx-a100 --nodes 1 --model gpt-5 --tp 8
  MATCH "gpt-5")
commstack_cli_error_test(NAME train.bad_compute_profile
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --compute-profile nope.json
  MATCH "--compute-profile: 'nope.json'")
# GPT-3's 50257-token vocabulary is padded to 51200 at TP8, as Megatron does, instead of refused.
commstack_cli_test(NAME train.vocab_padded
  ARGS train --cluster dgx-a100 --nodes 8 --model gpt3-175b --tp 8 --pp 8 --dp 1 --global-batch 8 --micro-batch 1 --recompute full
  MATCH "padded from 50257 to 51200")
commstack_cli_error_test(NAME train.bad_attention
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --attention sdpa
  MATCH "--attention: unknown 'sdpa'; expected flash or materialized")
commstack_cli_test(NAME train.materialized_attention
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --global-batch 8 --attention materialized --recompute full
  MATCH "recompute full attention materialized")
commstack_cli_error_test(NAME train.bad_tp_backward_overlap
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --tp-backward-overlap maybe
  MATCH "--tp-backward-overlap: unknown 'maybe'; expected on or off")
commstack_cli_error_test(NAME train.bad_overlap_grad_reduce
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --overlap-grad-reduce 1
  MATCH "--overlap-grad-reduce: unknown '1'; expected on or off")
commstack_cli_test(NAME train.megatron_2021_overlaps_off
  ARGS train --cluster dgx-a100 --nodes 1 --model megatron-1.7b --tp 8 --global-batch 8 --tp-backward-overlap off --overlap-grad-reduce off
  MATCH "tp-backward-overlap off overlap-grad-reduce off")
# The B200 profile has no published training run behind it (efficiency 1): train says so.
commstack_cli_test(NAME train.uncalibrated_profile_note
  ARGS train --cluster hgx-b200 --nodes 1 --model megatron-1.7b --tp 1 --zero 1 --global-batch 8
  MATCH "commstack: note: compute profile b200 is uncalibrated \\(efficiency 1")
# fp32 gradients (Megatron-LM's bf16 runs) double the gradient memory: 7B / 8 ZeRO-1 ranks keep
# all 6.74e9 gradients, 4 bytes each = 25.10 GiB (bf16: 12.55).
commstack_cli_test(NAME train.grad_dtype_fp32
  ARGS train --cluster dgx-h100 --nodes 1 --model llama2-7b --tp 1 --zero 1 --global-batch 64 --grad-dtype fp32
  MATCH "overlap-grad-reduce on grad-dtype fp32\n.*memory per GPU +[0-9.]+ GiB \\(stage 0: weights 12\\.55, grads 25\\.10,")
commstack_cli_error_test(NAME train.grad_dtype_unknown
  ARGS train --cluster dgx-h100 --nodes 1 --model llama2-7b --grad-dtype fp16
  MATCH "--grad-dtype: unknown 'fp16'; expected bf16 or fp32")
# MoE expert tensor parallelism: Megatron's default is the tp degree (the TP pair gathers the tokens
# the all-to-all brought and reduce-scatters the experts' output); --etp 1 keeps experts whole.
commstack_cli_test(NAME train.expert_tp_default
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --ep 8 --sequence-parallel --zero 1 --global-batch 64 --seq 4096
  MATCH "ep 8 .* etp 2\n.*iteration time.*etp.dispatch_gather all_gather over expert_tp [(]2 ranks[)]")
commstack_cli_test(NAME train.expert_tp_whole
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --ep 8 --etp 1 --sequence-parallel --zero 1 --global-batch 64 --seq 4096 --format json
  MATCH "\"config\": \"tp 2 pp 1 dp 8 cp 1 ep 8 .* etp 1\"")
commstack_cli_error_test(NAME train.expert_tp_default_too_large
  ARGS train --cluster dgx-h100 --nodes 1 --model mixtral-8x7b --tp 8 --ep 8 --sequence-parallel --global-batch 8
  MATCH "commstack: error: --etp: etp[*]ep = 8[*]8 = 64 does not divide tp[*]cp[*]dp = 8 .*etp not set: Megatron's default, the tp degree[)]; etp 1 keeps the experts whole")
commstack_cli_error_test(NAME train.expert_tp_dense_model
  ARGS train --cluster dgx-h100 --nodes 1 --model llama3-8b --tp 8 --etp 1 --global-batch 8
  MATCH "commstack: error: --etp: is set but llama3-8b has no experts")
# Megatron-Core's custom pipeline layout: an empty stage passes the activation on (PP 4, stage 1
# holds no layer, stage 3 only the loss); a layout whose layers do not add up is refused.
commstack_cli_test(NAME train.pipeline_layout_empty_stage
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --global-batch 16 --pipeline-model-parallel-layout Et*12||t*12|L
  MATCH "pipeline layout Et[*]12[|][|]t[*]12[|]L\n.*iteration time")
commstack_cli_error_test(NAME train.pipeline_layout_layers_wrong
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --global-batch 16 --pipeline-model-parallel-layout Et*6|t*6|t*6|t*5L
  MATCH "commstack: error: --pipeline-model-parallel-layout: holds 23 transformer layers 't' but megatron-1.7b has 24")
commstack_cli_error_test(NAME train.pipeline_layout_bad_character
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --global-batch 16 --pipeline-model-parallel-layout Et*6|t*6|x|t*6L
  MATCH "--pipeline-model-parallel-layout: 'x' in stage 2 is not a layer character")
# An empty stage with sequence parallelism: its rank computes nothing and reduces no TP gradients.
commstack_cli_test(NAME train.pipeline_layout_empty_stage_sp
  ARGS train --cluster dgx-a100 --nodes 2 --model megatron-1.7b --tp 2 --pp 4 --global-batch 16 --sequence-parallel --pipeline-model-parallel-layout E|||t*24L
  MATCH "pipeline layout E[|][|][|]t[*]24L\n.*iteration time")
# Multi-token prediction (Megatron --mtp-num-layers): the depths run on the last stage, named in
# the run's label; deepseek-v3 has one. Megatron-Bridge's layout, with its MTP on a stage of its
# own, is refused with the reason; a layout must hold the model's MTP layers.
commstack_cli_test(NAME train.mtp_last_stage
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --pp 2 --ep 4 --etp 1 --sequence-parallel --zero 1 --global-batch 16 --seq 4096 --mtp-num-layers 1
  MATCH "etp 1 mtp 1\n.*iteration time")
commstack_cli_error_test(NAME train.mtp_layout_standalone
  ARGS train --cluster dgx-h100 --nodes 64 --model deepseek-v3 --tp 2 --pp 16 --ep 32 --etp 1 --sequence-parallel --global-batch 512 --pipeline-model-parallel-layout "Et*3|(tt|)*29,m|L"
  MATCH "--pipeline-model-parallel-layout: every 'm' [(]MTP layer[)] must be in the last stage, before its 'L'")
commstack_cli_error_test(NAME train.mtp_layout_missing
  ARGS train --cluster dgx-h100 --nodes 64 --model deepseek-v3 --tp 2 --pp 16 --ep 32 --etp 1 --sequence-parallel --global-batch 512 --pipeline-model-parallel-layout "Et*2|(tt|)*29,t|L"
  MATCH "--pipeline-model-parallel-layout: holds 0 MTP layers 'm' but deepseek-v3 has mtp_num_layers 1")
commstack_cli_error_test(NAME train.mtp_num_layers_negative
  ARGS train --cluster dgx-h100 --nodes 1 --model llama3-8b --global-batch 8 --mtp-num-layers -1
  MATCH "--mtp-num-layers")
# FP8 parameter all-gather (Megatron-Core --fp8-param-gather): the GEMM weights' all-gathers move
# 1 byte per entry and the step all-reduces the scales' amaxes over DP; FP8 training and a sharded
# parameter gather (ZeRO >= 1) are required, as Megatron asserts.
commstack_cli_test(NAME train.fp8_param_gather
  ARGS train --cluster dgx-h100 --nodes 2 --model llama3-8b --tp 2 --zero 1 --precision fp8 --sequence-parallel --global-batch 16 --fp8-param-gather on
  MATCH "fp8-param-gather on\n.*dp[.]fp8_amax_all_reduce all_reduce over dp_cp [(]8 ranks[)]")
commstack_cli_error_test(NAME train.fp8_param_gather_bf16
  ARGS train --cluster dgx-h100 --nodes 1 --model llama3-8b --zero 1 --global-batch 8 --fp8-param-gather on
  MATCH "commstack: error: --fp8-param-gather: true needs precision fp8")
commstack_cli_error_test(NAME train.fp8_param_gather_zero0
  ARGS train --cluster dgx-h100 --nodes 1 --model llama3-8b --precision fp8 --global-batch 8 --fp8-param-gather on
  MATCH "--fp8-param-gather: true needs a parameter all-gather to run in FP8 .*zero is 0")
# Shared experts beside the dispatcher's all-to-alls (Megatron-Core --moe-shared-expert-overlap):
# named in the label; a model without shared experts is refused.
commstack_cli_test(NAME train.moe_shared_expert_overlap
  ARGS train --cluster dgx-h100 --nodes 64 --model deepseek-v3 --tp 2 --pp 16 --ep 32 --etp 1 --sequence-parallel --global-batch 512 --recompute full --decoder-first-pipeline-num-layers 4 --decoder-last-pipeline-num-layers 1 --moe-shared-expert-overlap on
  MATCH "moe-shared-expert-overlap on etp 1 mtp 1 stage layers first 4 middle 4 last 1\n.*iteration time")
commstack_cli_error_test(NAME train.moe_shared_expert_overlap_no_shared
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --ep 8 --sequence-parallel --global-batch 16 --seq 4096 --moe-shared-expert-overlap on
  MATCH "--moe-shared-expert-overlap: true overlaps the shared experts with the token dispatcher, but mixtral-8x7b has no shared experts")
# The all-gather token dispatcher (Megatron-Core's default) is named in the label; flex (DeepEP) is
# refused as not modelled, and so is a dispatcher for a dense model.
commstack_cli_test(NAME train.moe_token_dispatcher_allgather
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --pp 4 --ep 2 --sequence-parallel --recompute full --global-batch 8 --seq 4096 --moe-token-dispatcher allgather
  MATCH "etp 2 moe-token-dispatcher allgather\n.*iteration time")
commstack_cli_error_test(NAME train.moe_token_dispatcher_flex
  ARGS train --cluster dgx-h100 --nodes 2 --model mixtral-8x7b --tp 2 --pp 4 --ep 2 --sequence-parallel --global-batch 8 --moe-token-dispatcher flex
  MATCH "--moe-token-dispatcher: 'flex' .DeepEP / HybridEP fused dispatch kernels. is not modelled")
commstack_cli_error_test(NAME train.moe_token_dispatcher_dense
  ARGS train --cluster dgx-h100 --nodes 1 --model llama3-8b --global-batch 8 --moe-token-dispatcher allgather
  MATCH "commstack: error: --moe-token-dispatcher: \"allgather\" dispatches tokens to experts, but llama3-8b has no experts")
commstack_cli_error_test(NAME plan.moe_token_dispatcher_dense
  ARGS plan --cluster dgx-h100 --nodes 1 --model llama3-8b --global-batch 8 --moe-token-dispatcher allgather
  MATCH "--moe-token-dispatcher allgather: llama3-8b has no experts")
