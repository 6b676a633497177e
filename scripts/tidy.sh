#!/usr/bin/env bash
# clang-tidy (the root .clang-tidy) over every project source in a build's compile database.
# Usage: bash scripts/tidy.sh [BUILD_DIR]   (any build of this tree: CMakeLists.txt exports the
# compile database). Prints each warning once and exits 1 if there is any. About 35 minutes
# on 2 cores: not part of CI, run it before a change that touches many files.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
db="$build/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "tidy.sh: $db not found: build the tree first (bash scripts/build.sh $build)" >&2
  exit 2
fi
tidy="$(command -v clang-tidy || command -v clang-tidy-14 || true)"
if [ -z "$tidy" ]; then
  echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy)" >&2
  exit 2
fi
root="$PWD"
# The project's own translation units: not the build tree's generated files nor fetched dependencies.
python3 -c '
import json, sys
root = sys.argv[2]
files = sorted({e["file"] for e in json.load(open(sys.argv[1]))
                if e["file"].startswith(root + "/") and "/build" not in e["file"][len(root):] and "_deps" not in e["file"]})
print("\n".join(files))' "$db" "$root" > "$build/tidy-files.txt"
echo "tidy.sh: $(wc -l < "$build/tidy-files.txt") files, $(nproc) at a time"
# CUDA sources make clang-tidy report the host compiler's options as errors: only warnings count.
xargs -a "$build/tidy-files.txt" -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet 2>&1 |
  grep -E "^$root/.*: warning:" | sort -u > "$build/tidy-warnings.txt" || true
if [ -s "$build/tidy-warnings.txt" ]; then
  cat "$build/tidy-warnings.txt"
  echo "tidy.sh: $(wc -l < "$build/tidy-warnings.txt") warnings" >&2
  exit 1
fi
echo "tidy.sh: no warnings"
