#!/bin/sh
# A commstack binary copied away from its build tree, run where no calibration/profiles directory
# exists, must still predict with the shipped profiles (compiled in) and say so; a refit profile
# directory named by COMMSTACK_PROFILE_DIR must still win over the compiled-in copy.
# usage: relocated_binary.sh COMMSTACK SOURCE_DIR SCRATCH_DIR
set -e
exe=$1; src=$2; scratch=$3/relocated-binary
rm -rf "$scratch"
mkdir -p "$scratch/bin" "$scratch/run" "$scratch/profiles"
cp "$exe" "$scratch/bin/commstack"
cd "$scratch/run"
out=$(env -u COMMSTACK_PROFILE_DIR "$scratch/bin/commstack" collective --cluster dgx-h100 --nodes 1 --op allreduce --max-bytes 1M)
echo "$out" | grep -q "profile h100 (calibration/profiles/h100.json, built in)" || {
  echo "relocated binary did not use the compiled-in h100 profile:"; echo "$out" | head -3; exit 1; }
# The same profile from a directory on disk: the file wins, and the predictions are the same.
cp "$src/calibration/profiles/h100.json" "$scratch/profiles/h100.json"
disk=$(COMMSTACK_PROFILE_DIR="$scratch/profiles" "$scratch/bin/commstack" collective --cluster dgx-h100 --nodes 1 --op allreduce --max-bytes 1M)
echo "$disk" | grep -q "profile h100 ($scratch/profiles/h100.json)" || {
  echo "COMMSTACK_PROFILE_DIR was not used:"; echo "$disk" | head -3; exit 1; }
[ "$(echo "$out" | tail -n +2)" = "$(echo "$disk" | tail -n +2)" ] || { echo "built-in and on-disk h100 predict differently"; exit 1; }
echo "ok"
