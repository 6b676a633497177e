#!/bin/sh
# Round trip: `commstack collective` prints an nccl-tests log of its prediction, `commstack validate`
# reads it back on the same cluster and must predict the same times (MAPE below TOLERANCE percent;
# the log's times are rounded as nccl-tests prints them). validate takes nccl-tests' -g and -G from
# the header's nGpus and graph: fields, so collective must print the ones it modelled.
# usage: collective_validate_roundtrip.sh COMMSTACK OUTDIR NAME TOLERANCE CLUSTER NODES GPUS-PER-NODE COLLECTIVE-ARGS...
set -e
exe=$1; out=$2; name=$3; tol=$4; cluster=$5; nodes=$6; gpn=$7
shift 7
"$exe" collective --cluster "$cluster" --nodes "$nodes" --gpus-per-node "$gpn" "$@" > "$out/$name-collective.txt"
grep '^# nThread' "$out/$name-collective.txt"
"$exe" validate --cluster "$cluster" --nodes "$nodes" --gpus-per-node "$gpn" --measured "$out/$name-collective.txt" \
  > "$out/$name-validate.txt"
line=$(grep '^MAPE ' "$out/$name-validate.txt")
echo "$line"
mape=$(echo "$line" | sed 's/^MAPE \([0-9.]*\)%.*/\1/')
awk -v m="$mape" -v tol="$tol" 'BEGIN { exit !(m + 0 <= tol + 0) }'
