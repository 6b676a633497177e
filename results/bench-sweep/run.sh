#!/usr/bin/env bash
# Benchmark of `commstack sweep` (docs/sweep.md): the same 24-point grid with one process, two
# processes, and two MPI ranks of one process each, under /usr/bin/time -v; checks that the three
# merged results are byte-identical. Usage: results/bench-sweep/run.sh [path/to/commstack]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exe="$(realpath "${1:-build/commstack}")"
out="${here}/out"
rm -rf "$out" && mkdir -p "$out"
cd "$here"
run() {  # name, then the command
  local name=$1; shift
  /usr/bin/time -v "$@" > "$out/$name.stdout" 2> "$out/$name.time"
  echo "$name: wall $(grep 'Elapsed (wall' "$out/$name.time" | awk '{print $NF}'), max RSS $(grep 'Maximum resident' "$out/$name.time" | awk '{print $NF}') KiB"
}
run jobs1 "$exe" sweep grid.json -o "$out/jobs1" --jobs 1 --quiet
run jobs2 "$exe" sweep grid.json -o "$out/jobs2" --jobs 2 --quiet
run mpi2 mpirun -n 2 --oversubscribe --allow-run-as-root "$exe" sweep grid.json -o "$out/mpi2" --jobs 1 --quiet
for f in results.jsonl results.csv; do
  cmp "$out/jobs1/$f" "$out/jobs2/$f" && cmp "$out/jobs1/$f" "$out/mpi2/$f" && echo "$f: identical in the three runs"
done
tail -n 2 "$out/jobs1.stdout"
