#!/usr/bin/env bash
# Benchmark of `commstack collective`: wall time and peak RSS (GNU time -v) of
#  1. one ring all-reduce of 1 GiB on dgx-h100 with 512 nodes (4096 GPUs, auto fidelity -> edge);
#  2. the full 8 B .. 16 GiB all-reduce sweep on 2 dgx-h100 nodes (auto fidelity -> chunk);
#  3. the 1 GiB ring all-reduce on 2048 nodes (16384 GPUs, edge fidelity);
#  4. the 1 GiB tree all-reduce (--algo tree) on 512 and 2048 nodes (auto fidelity -> step);
#  5. a 64 KiB - 1 GiB broadcast sweep over one GB200 NVL72 rack (72 GPUs, chain pipelines);
#  6. the same sweep of NVLS all-reduce (--algo nvls: the NVSwitch reduces and multicasts, auto -> edge);
#  7. PAT all-gather (--algo pat) at one GPU per node on 1024 and 16384 dgx-h100 nodes;
#  8. NVLSTree all-reduce (--algo nvlstree) of 1 GiB on 512 dgx-h100 nodes (4096 GPUs, auto -> edge);
#  9. CollNet all-reduce (--algo collnetdirect / collnetchain: the InfiniBand switches reduce) on 512
#     dgx-h100 nodes (1 MiB and 1 GiB) and 2048 nodes (1 GiB), auto -> edge.
# Usage: bash results/bench-collective/run.sh [path/to/commstack]   (default: ./build/commstack)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${1:-$here/../../build/commstack}
out=$here/out
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "nproc: $(nproc)"
  lscpu | grep -m1 'Model name' || true
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$out/machine.txt"

run() {  # name, args...
  local name=$1; shift
  /usr/bin/time -v "$exe" "$@" > "$out/$name.out" 2> "$out/$name.time"
  local wall rss
  wall=$(grep 'Elapsed (wall clock)' "$out/$name.time" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$out/$name.time" | awk '{print $NF}')
  echo "$name: wall $wall, peak RSS $((rss / 1024)) MB"
}
run sweep-2nodes collective --profile none --cluster dgx-h100 --nodes 2 --op allreduce --min-bytes 8 --max-bytes 16G --format csv
run allreduce-1g-4096gpus collective --profile none --cluster dgx-h100 --nodes 512 --op allreduce --min-bytes 1G --max-bytes 1G --format csv
run allreduce-1g-16384gpus collective --profile none --cluster dgx-h100 --nodes 2048 --op allreduce --min-bytes 1G --max-bytes 1G --format csv
run tree-allreduce-1g-4096gpus collective --profile none --cluster dgx-h100 --nodes 512 --algo tree --min-bytes 1G --max-bytes 1G --format csv
run tree-allreduce-1g-16384gpus collective --profile none --cluster dgx-h100 --nodes 2048 --algo tree --min-bytes 1G --max-bytes 1G --format csv
run broadcast-sweep-nvl72 collective --profile none --cluster gb200-nvl72 --nodes 18 --op broadcast --min-bytes 64K --max-bytes 1G --step-factor 4 --format csv
run nvls-allreduce-sweep-nvl72 collective --profile none --cluster gb200-nvl72 --nodes 18 --algo nvls --min-bytes 64K --max-bytes 1G --step-factor 4 --format csv
run pat-allgather-1024nodes collective --profile none --cluster dgx-h100 --nodes 1024 --gpus-per-node 1 --algo pat --op allgather --min-bytes 1M --max-bytes 1G --step-factor 1024 --format csv
run nvlstree-allreduce-1g-4096gpus collective --profile none --cluster dgx-h100 --nodes 512 --algo nvlstree --min-bytes 1G --max-bytes 1G --format csv
run collnetdirect-allreduce-4096gpus collective --profile none --cluster dgx-h100 --nodes 512 --algo collnetdirect --min-bytes 1M --max-bytes 1G --step-factor 1024 --format csv
run collnetdirect-allreduce-1g-16384gpus collective --profile none --cluster dgx-h100 --nodes 2048 --algo collnetdirect --min-bytes 1G --max-bytes 1G --format csv
run collnetchain-allreduce-1g-16384gpus collective --profile none --cluster dgx-h100 --nodes 2048 --algo collnetchain --min-bytes 1G --max-bytes 1G --format csv
run pat-allgather-1g-16384nodes collective --profile none --cluster dgx-h100 --nodes 16384 --gpus-per-node 1 --algo pat --op allgather --min-bytes 1G --max-bytes 1G --format csv
# The calibrated stack model (collective's default): a closed form per size, plus building the
# topology and routing the contention layer's flow pattern once.
run stack-allreduce-sweep-16384gpus collective --cluster dgx-h100 --nodes 2048 --op allreduce --min-bytes 8 --max-bytes 16G --format csv
run stack-alltoall-sweep-16384gpus collective --cluster dgx-h100 --nodes 2048 --op alltoall --min-bytes 8 --max-bytes 16G --format csv
