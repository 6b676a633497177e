#!/usr/bin/env bash
# Scale extrapolation of the stack model: fit on small runs, predict the large ones.
#   bash results/validation/scale.sh [path/to/commstack]      (from the repository root)
# For each GPU generation of runs.tsv (fit runs only, outliers never used):
#   small = runs on one node (A100, H100, B200) or, where every run is one NVLink domain (GB200
#           NVL72), runs of at most 24 GPUs;
#   large = the other fit runs of the generation.
# A profile is fitted on the small runs only (calibrate, same options as run.sh) and validates
# every large run: what a user gets who calibrates on one node and predicts the cluster. Network
# parameters (eta_nic, lat_net_*) are then NCCL's constants and the NIC specs (the priors), since
# one-node runs do not constrain them. GH200 has a single run: skipped.
# Writes results/validation/scale/<id>.csv and summary.md; deterministic.
set -euo pipefail
cd "$(dirname "$0")/../.."
exe=${1:-build/commstack}
pw=${PRIOR_WEIGHT:-0.01}
loss=${LOSS:-cauchy}
here=results/validation
out=${SCALE_OUT:-$here/scale}
data=calibration/data/nccl-tests
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# id gen cluster spec ranks nodes, for every fit run (ranks and nodes as validate resolves them)
grep -v '^#' $here/runs.tsv | while IFS=$'\t' read -r id gen cl spec role; do
  [[ $role == fit ]] || continue
  "$exe" validate --cluster "$cl" --measured "$data/$spec" --profile "calibration/profiles/$gen.json" --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["nodes"] * d["gpus_per_node"], d["nodes"])' |
    { read -r ranks nodes; printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$gen" "$cl" "$spec" "$ranks" "$nodes"; }
done >"$tmp/runs"

is_small() {  # gen ranks nodes -> 0 when small
  if [[ $1 == gb200 ]]; then [[ $2 -le 24 ]]; else [[ $3 -eq 1 ]]; fi
}
# shellcheck source=results/validation/mape.sh
source results/validation/mape.sh

{
  echo "| run | GPUs | fitted on | MAPE >=1MiB (n) | MAPE <1MiB (n) | latency-bound sizes: measured - predicted, us (n) | bandwidth-bound sizes: reached / modeled rate (n) | leave-one-out (run.sh) >=1MiB / <1MiB |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$tmp/summary"
: >"$tmp/fitted"
while read -r gen; do
  args=() small_ids=()
  while IFS=$'\t' read -r id g cl spec ranks nodes; do
    if [[ $g != "$gen" ]] || ! is_small "$gen" "$ranks" "$nodes"; then continue; fi
    sep='@'; [[ $spec == *@* ]] && sep=','
    args+=(--input "$data/$spec${sep}cluster=$cl")
    small_ids+=("$id")
  done <"$tmp/runs"
  n_large=$(awk -F'\t' -v g="$gen" '$2 == g' "$tmp/runs" | wc -l)
  [[ ${#small_ids[@]} -ge 1 && $n_large -gt ${#small_ids[@]} ]] || continue
  "$exe" calibrate --prior-weight "$pw" --loss "$loss" "${args[@]}" --name "$gen-small-scale" --output "$tmp/$gen.json" >/dev/null
  while IFS=$'\t' read -r id g cl spec ranks nodes; do
    if [[ $g != "$gen" ]] || is_small "$gen" "$ranks" "$nodes"; then continue; fi
    "$exe" validate --cluster "$cl" --measured "$data/$spec" --profile "$tmp/$gen.json" --format csv >"$out/$id.csv"
    read -r _ _ ml nl ms ns < <(mape_of "$out/$id.csv")
    IFS=$'\t' read -r lat bw < <(split_of "$out/$id.csv")
    echo "| $id | $ranks | $gen small (${#small_ids[@]} runs) | $(fmt_mape "$ml" "$nl") | $(fmt_mape "$ms" "$ns") | $lat | $bw | $(loo_of "$id" | sed 's#\t# / #') |" >>"$tmp/summary"
  done <"$tmp/runs"
  echo "* $gen small: ${small_ids[*]}" >>"$tmp/fitted"
done < <(cut -f2 "$tmp/runs" | awk '!seen[$0]++')
{
  cat "$tmp/summary"
  echo
  echo "Small runs each profile was fitted on:"
  echo
  cat "$tmp/fitted"
} >"$out/summary.md"
cat "$out/summary.md"
