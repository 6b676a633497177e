#!/usr/bin/env bash
# Launches commstack-bench on one node (single process over all local GPUs) or on several nodes
# (one MPI process per GPU through mpirun or srun), after printing the sweep plan and its cost in
# GPU-minutes. docs/calibration-bench.md explains presets, output and how to feed `commstack calibrate`.
#
#   run-bench.sh [--preset smoke|standard|full] [--output FILE] [--nodes N] [--gpus-per-node G]
#                [--launcher local|mpirun|srun] [--hostfile FILE] [--profile DIR] [--yes] [-- BENCH ARGS...]
set -euo pipefail

die() { echo "run-bench.sh: error: $*" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
bench=${COMMSTACK_BENCH:-}
plugin=${COMMSTACK_PROFILER_PLUGIN:-}
preset=standard
output=bench-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ).json
nodes=1
gpn=""
launcher=local
hostfile=""
profile_dir=""
yes=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=${2:?--preset needs a value}; shift 2 ;;
    --output|-o) output=${2:?--output needs a value}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --gpus-per-node) gpn=${2:?--gpus-per-node needs a value}; shift 2 ;;
    --launcher) launcher=${2:?--launcher needs a value}; shift 2 ;;
    --hostfile) hostfile=${2:?--hostfile needs a value}; shift 2 ;;
    --profile) profile_dir=${2:?--profile needs a directory}; shift 2 ;;
    --yes|-y) yes=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes: expected an integer >= 1, got '$nodes'"
case "$launcher" in local|mpirun|srun) ;; *) die "--launcher: expected local, mpirun or srun, got '$launcher'" ;; esac
[ "$launcher" = local ] && [ "$nodes" -gt 1 ] && die "--nodes $nodes needs --launcher mpirun or srun"

# Find the binary: $COMMSTACK_BENCH, next to this script in a build tree, or on PATH.
if [ -z "$bench" ]; then
  for c in "$here/../../build/calibration/bench/commstack-bench" "$(command -v commstack-bench 2>/dev/null || true)"; do
    [ -n "$c" ] && [ -x "$c" ] && bench=$c && break
  done
fi
[ -n "$bench" ] && [ -x "$bench" ] || die "commstack-bench not found: build it (CMake finds CUDA+NCCL) or set COMMSTACK_BENCH"
# A missing libnccl/libcudart/libcublas would otherwise fail inside the loader with a terse line.
if missing=$(ldd "$bench" 2>/dev/null | grep "not found"); then
  die "commstack-bench cannot start, shared libraries missing (set LD_LIBRARY_PATH to the NCCL/CUDA lib dirs):
$missing"
fi
if [ -z "$gpn" ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then gpn=$(nvidia-smi -L | grep -c '^GPU' || true); fi
  [ -n "$gpn" ] && [ "$gpn" -gt 0 ] || die "no GPU visible here (nvidia-smi lists none); pass --gpus-per-node for a remote launch"
fi
[[ "$gpn" =~ ^[1-9][0-9]*$ ]] || die "--gpus-per-node: expected an integer >= 1, got '$gpn'"

sm=90
if command -v nvidia-smi >/dev/null 2>&1; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
  [[ "$cc" =~ ^[0-9]+$ ]] && sm=$cc
fi
"$bench" --plan-only --preset "$preset" --nodes "$nodes" --gpus-per-node "$gpn" --sm "$sm" "${extra[@]}" | tail -1
if [ "$yes" -ne 1 ] && [ -t 0 ]; then
  read -r -p "run it? [y/N] " answer
  [ "$answer" = y ] || [ "$answer" = Y ] || exit 0
fi

if [ -n "$profile_dir" ]; then
  if [ -z "$plugin" ]; then plugin=$(dirname "$bench")/plugin/libnccl-profiler-commstack.so; fi
  [ -f "$plugin" ] || die "profiler plugin $plugin not found (set COMMSTACK_PROFILER_PLUGIN)"
  mkdir -p "$profile_dir"
  export NCCL_PROFILER_PLUGIN=$plugin COMMSTACK_PROFILE_DIR=$profile_dir
fi

args=(--preset "$preset" --output "$output" "${extra[@]}")
case "$launcher" in
  local)
    exec "$bench" "${args[@]}" ;;
  mpirun)
    command -v mpirun >/dev/null || die "mpirun not found"
    hf=()
    [ -n "$hostfile" ] && hf=(--hostfile "$hostfile")
    # One process per GPU; forward every NCCL_* and the profiler settings to the remote ranks.
    fwd=()
    for v in $(env | grep -o '^\(NCCL\|COMMSTACK\)_[A-Z_]*' || true); do fwd+=(-x "$v"); done
    exec mpirun -np $((nodes * gpn)) --map-by "ppr:${gpn}:node" --bind-to none "${hf[@]}" "${fwd[@]}" \
      "$bench" "${args[@]}" ;;
  srun)
    command -v srun >/dev/null || die "srun not found"
    exec srun --nodes="$nodes" --ntasks-per-node="$gpn" --gpus-per-node="$gpn" --mpi=pmix --kill-on-bad-exit=1 \
      "$bench" "${args[@]}" ;;
esac
