#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
