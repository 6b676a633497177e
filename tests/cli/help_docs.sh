#!/bin/sh
# docs/cli.md "## Help texts" must be what the binary prints: an option added, renamed or
# re-described without the docs following fails here. Fix: regenerate the block with
# scripts/cli-help.sh (the command is printed below).
#   sh tests/cli/help_docs.sh PATH/TO/commstack SOURCE_DIR
set -eu
exe=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sh "$src/scripts/cli-help.sh" "$exe" > "$dir/binary.txt"
# The first fenced block after the heading.
awk '/^## Help texts/ { f = 1; next } f && /^```$/ { if (inside) exit; inside = 1; next } inside' \
  "$src/docs/cli.md" > "$dir/docs.txt"
[ -s "$dir/docs.txt" ] || { echo "docs/cli.md has no '## Help texts' block" >&2; exit 1; }
if ! diff -u "$dir/docs.txt" "$dir/binary.txt"; then
  echo "docs/cli.md '## Help texts' differs from the binary's --help (above: - docs, + binary)." >&2
  echo "Regenerate it: sh scripts/cli-help.sh build/commstack, and paste over the block." >&2
  exit 1
fi
echo "docs/cli.md help texts match the binary (9 verbs)"
