#!/bin/sh
# `commstack plan` measurements (docs/plan.md). Usage, from the repository root:
#   results/plan-sc21-175b/run.sh build/commstack
# 1. Megatron SC'21 Table 1, 145.6B row (the 175B-class row) on 1536 A100 (dgx-a100, 192 nodes):
#    global batch 2304, seq 2048, micro-batch 2 from the row
#    (workloads/reference/training_megatron-sc21_weak-scaling_table1.csv); Megatron-LM 2021 settings
#    (full recomputation, no SP / CP / distributed optimizer); profile fitted on rows 1-3.
# 2. The same row with the full default search space (every recompute mode, SP, ZeRO, CP, micro-batch).
# 3. GPT-3 175B on 1024 H100 (dgx-h100, 128 nodes), global batch 1536, full default search space:
#    the configurations-per-minute target.
set -e
EXE=${1:-build/commstack}
OUT=results/plan-sc21-175b
PROFILE=results/megatron-sc21-table1/a100-fitted.json

/usr/bin/time -v "$EXE" plan --cluster dgx-a100 --nodes 192 --model megatron-145.6b --global-batch 2304 --seq 2048 \
  --micro-batch 2 --recompute full --sequence-parallel off --cp 1 --zero 0 --attention materialized --tp-backward-overlap off --overlap-grad-reduce off --compute-profile "$PROFILE" --top 10 \
  > "$OUT/sc21-145.6b-1536.txt" 2> "$OUT/sc21-145.6b-1536.time"
"$EXE" plan --cluster dgx-a100 --nodes 192 --model megatron-145.6b --global-batch 2304 --seq 2048 \
  --micro-batch 2 --recompute full --sequence-parallel off --cp 1 --zero 0 --attention materialized --tp-backward-overlap off --overlap-grad-reduce off --compute-profile "$PROFILE" --top 10 \
  --format json > "$OUT/sc21-145.6b-1536.json" 2> /dev/null

/usr/bin/time -v "$EXE" plan --cluster dgx-a100 --nodes 192 --model megatron-145.6b --global-batch 2304 --seq 2048 \
  --compute-profile "$PROFILE" --top 10 > "$OUT/sc21-145.6b-1536-open.txt" 2> "$OUT/sc21-145.6b-1536-open.time"

/usr/bin/time -v "$EXE" plan --cluster dgx-h100 --nodes 128 --model gpt3-175b --global-batch 1536 --top 10 \
  > "$OUT/gpt3-175b-1024-h100.txt" 2> "$OUT/gpt3-175b-1024-h100.time"
