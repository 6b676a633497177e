#!/usr/bin/env bash
# The stack model's contention layer against the SimGrid fabric simulation over leaf oversubscription:
# 32 DGX H100 nodes on a rail-optimized fat tree, rail leaves of 8 nodes, uplinks 1:1, 2:1, 4:1, 8:1.
# For a 1 GiB alltoall, Tree all-reduce and Ring all-reduce over all 256 GPUs it records the stack
# model's time and fabric factor (`collective --breakdown`) and the SimGrid time (`--profile none`),
# writes table.csv and slowdown.png (gnuplot, slowdown.gp), and the wall time of the whole run.
# usage: results/contention-oversubscription/run.sh [path/to/commstack]   (from the repository root)
set -euo pipefail
exe=${1:-build/commstack}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s.%N)
echo "oversubscription,pattern,stack_us,stack_fabric_factor,simgrid_us" > "$here/table.csv"
for o in 1 2 4 8; do
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
c["name"] = "h100-rail-%sto1" % sys.argv[2]
c["fabric"]["oversubscription"] = [float(sys.argv[2])]
json.dump(c, open(sys.argv[3], "w"), indent=2)' tests/cli/cluster-h100-rail-4to1.json "$o" "$tmp/c$o.json"
  for pattern in alltoall tree ring; do
    case $pattern in
      alltoall) args=(--op alltoall) ;;
      tree) args=(--op allreduce --algo tree) ;;
      ring) args=(--op allreduce --algo ring) ;;
    esac
    line=$("$exe" collective --cluster "$tmp/c$o.json" "${args[@]}" -b 1G -e 1G --breakdown | tail -1)
    stack_us=$(echo "$line" | sed -E 's/.* = ([0-9.]+) us.*/\1/')
    factor=$(echo "$line" | grep -oE 'fabric [0-9.]+x' | grep -oE '[0-9.]+' || echo 1.000)
    simgrid_us=$("$exe" collective --profile none --cluster "$tmp/c$o.json" "${args[@]}" -b 1G -e 1G --format csv |
      awk -F, 'NR == 2 { print $8 }')
    echo "$o,$pattern,$stack_us,$factor,$simgrid_us" >> "$here/table.csv"
  done
done
end=$(date +%s.%N)
cat "$here/table.csv"
echo "wall $(echo "$end - $start" | bc) s"
(cd "$here" && gnuplot slowdown.gp)
