#!/bin/sh
# Round trip: `commstack train --otf2 DIR` writes a simulated iteration as OTF2, `commstack replay
# --trace DIR` on the same cluster must reproduce train's iteration time within TOLERANCE (the
# acceptance figure of docs/replay.md). The trace is GPU bound with re-simulated TP and DP
# collectives, unlike the shipped Kineto samples.
# usage: replay_roundtrip.sh COMMSTACK OUTDIR NAME TOLERANCE CLUSTER TRAIN-ARGS...
set -e
exe=$1; out=$2; name=$3; tol=$4; cluster=$5
shift 5
"$exe" train --cluster "$cluster" "$@" --no-fold --format json --otf2 "$out/$name-otf2" > "$out/$name-train.json"
"$exe" replay --trace "$out/$name-otf2" --cluster "$cluster" --format json > "$out/$name-replay.json"
# First occurrence of a top-level number field in the JSON reports.
field() { grep -m1 "\"$2\":" "$1" | sed 's/.*: *//; s/,$//'; }
train_s=$(field "$out/$name-train.json" iteration_s)
traced_s=$(field "$out/$name-replay.json" traced_s)
replayed_s=$(field "$out/$name-replay.json" replayed_s)
resim=$(field "$out/$name-replay.json" resimulated_comm_ops)
awk -v t="$train_s" -v tr="$traced_s" -v r="$replayed_s" -v tol="$tol" -v n="$resim" 'BEGIN {
  d = (r - t) / t; if (d < 0) d = -d;
  printf "train %.6f s, traced %.6f s, replayed %.6f s (%+.2f %%), %d comm ops re-simulated\n", t, tr, r, 100 * (r - t) / t, n;
  exit !(d < tol && n > 0);
}'
