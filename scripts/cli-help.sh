#!/bin/sh
# Prints every verb's --help the way docs/cli.md "## Help texts" shows it, with the program named
# `commstack` (CLI11 prints argv[0]). Regenerate that block with it after changing an option;
# tests/cli/help_docs.sh fails while the block and the binary disagree.
#   sh scripts/cli-help.sh build/commstack
set -eu
[ $# -eq 1 ] || { echo "usage: sh scripts/cli-help.sh PATH/TO/commstack" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$bin" "$dir/commstack"
first=1
for verb in topo collective validate calibrate train plan replay whatif sweep; do
  [ "$first" = 1 ] || echo
  first=0
  echo "=== $verb"
  PATH="$dir:$PATH" commstack "$verb" --help | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
done
