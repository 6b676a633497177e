#!/bin/sh
# Pipeline scale-out: `commstack train --pp P --otf2 DIR` replayed with `replay --scale-pp K` must
# take the time `train` gives for the same job with K x P stages and K times the layers (each
# traced stage becomes K stages with the same work; docs/replay.md). Both sides use the same
# engine, so the tolerance is numerical (measured: within 1e-7 relative).
# usage: replay_scale_pp.sh COMMSTACK OUTDIR NAME TOLERANCE CLUSTER MODEL K PP NODES-TRACED NODES-DEEP TRAIN-ARGS...
set -e
exe=$1; out=$2; name=$3; tol=$4; cluster=$5; model=$6; k=$7; pp=$8; nodes=$9
shift 9
deep_nodes=$1
shift 1
# The model with K times the layers.
layers=$(grep -m1 '"layers":' "$model" | sed 's/[^0-9]//g')
sed "s/\"layers\": *$layers/\"layers\": $((layers * k))/" "$model" > "$out/$name-deep-model.json"
"$exe" train --cluster "$cluster" --nodes "$nodes" --model "$model" --pp "$pp" "$@" --no-fold --format json \
  --otf2 "$out/$name-otf2" > /dev/null
"$exe" replay --trace "$out/$name-otf2" --cluster "$cluster" --scale-pp "$k" --format json > "$out/$name-replay.json"
"$exe" train --cluster "$cluster" --nodes "$deep_nodes" --model "$out/$name-deep-model.json" --pp $((pp * k)) "$@" \
  --format json > "$out/$name-deep.json"
field() { grep -m1 "\"$2\":" "$1" | sed 's/.*: *//; s/,$//'; }
deep_s=$(field "$out/$name-deep.json" iteration_s)
replayed_s=$(field "$out/$name-replay.json" replayed_s)
grep -q '"scale-pp '"$k"': each of the' "$out/$name-replay.json"
awk -v t="$deep_s" -v r="$replayed_s" -v tol="$tol" -v k="$k" -v pp="$pp" 'BEGIN {
  d = (r - t) / t; if (d < 0) d = -d;
  printf "train PP%d x %d layers %.9f s, PP%d trace replayed with --scale-pp %d %.9f s (%+.2e relative)\n", pp * k, k, t, pp, k, r, (r - t) / t;
  exit !(d < tol);
}'
