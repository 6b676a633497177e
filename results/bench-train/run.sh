#!/usr/bin/env bash
# Wall time and peak RSS of one simulated training iteration (commstack train), at two scales.
# usage: results/bench-train/run.sh [path/to/commstack]   (from the repository root)
set -euo pipefail
exe=${1:-build/commstack}
here=$(dirname "$0")
run() {
  local name=$1; shift
  /usr/bin/time -v "$exe" train "$@" --format json > "$here/$name.json" 2> "$here/$name.time"
  python3 - "$here/$name.json" "$here/$name.time" "$name" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read()
wall = re.search(r"Elapsed \(wall clock\) time.*: (.*)", t).group(1)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(f"{sys.argv[3]}: {d['gpus']} GPUs, wall {wall}, peak RSS {rss / 1024 / 1024:.2f} GiB, "
      f"{d['simulations']} SimGrid runs, {d['flows']} flows, iteration {d['iteration_s']:.3f} s, MFU {100 * d['mfu']:.1f}%")
PY
}
run gpt3-175b-1024 --cluster dgx-a100 --nodes 128 --model korthikanti-175b --tp 8 --pp 8 --dp 16 \
  --global-batch 1536 --micro-batch 1 --recompute full
# Llama 3 405B's 126 layers over 16 stages: the embedding and the loss count as one layer each
# (Megatron's --account-for-*-in-pipeline-split, as Megatron-Bridge's 405B recipes run it).
run llama3-405b-16384 --cluster dgx-h100 --nodes 2048 --model llama3-405b --tp 8 --pp 16 --dp 128 \
  --global-batch 2048 --micro-batch 1 --recompute full --sequence-parallel --zero 1 \
  --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
# MoE at scale: DeepSeek-V3 (61 layers, 256 routed + 1 shared expert, top-8, one MTP depth; MLA
# approximated as MHA) on 2048 H100, EP64 with whole experts (etp 1), over PP 16 x 2 chunks with a
# Megatron-Core custom layout shaped like Megatron-Bridge's DeepSeek-V3 one, its MTP layer in the
# loss stage (Bridge's own puts it on a stage of its own, which commstack does not model).
run deepseek-v3-2048 --cluster dgx-h100 --nodes 256 --model deepseek-v3 --tp 2 --sequence-parallel --pp 16 \
  --ep 64 --etp 1 --zero 1 --global-batch 4096 --micro-batch 1 --recompute full \
  --pipeline-model-parallel-layout 'Et*2|(tt|)*29,t|mL'
