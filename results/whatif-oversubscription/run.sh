#!/usr/bin/env bash
# What-if study: rail-optimized vs plain fat tree and 1:1 / 2:1 / 4:1 leaf oversubscription for
# GPT-3 175B on 1024 H100 (scenario.json). Writes the table (table.txt), the CSV (table.csv), the
# full JSON (results.json), the chart (speedup.png with speedup.dat / speedup.gp) and the wall
# time and peak memory of the run (time.txt).
# usage: results/whatif-oversubscription/run.sh [path/to/commstack] [jobs]   (from the repository root)
set -euo pipefail
exe=${1:-build/commstack}
jobs=${2:-2}
here=$(dirname "$0")
/usr/bin/time -v "$exe" whatif "$here/scenario.json" -j "$jobs" --plot "$here/speedup.png" \
  --save-csv "$here/table.csv" --save-json "$here/results.json" > "$here/table.txt" 2> "$here/time.txt"
cat "$here/table.txt"
grep -E "Elapsed|Maximum resident" "$here/time.txt"
