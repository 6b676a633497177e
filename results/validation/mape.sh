# Shared by run.sh, scale.sh, capacity.sh and same_site.sh (sourced): read and print validate's MAPE line.
# mape_of CSV -> "all n_all large n_large small n_small" from validate's "# MAPE ..." line.
mape_of() { grep '^# MAPE' "$1" | sed -E 's/# MAPE ([0-9.]+)% over ([0-9]+) sizes \(>=1MiB: ([0-9.]+)% over ([0-9]+); <1MiB: ([0-9.]+)% over ([0-9]+)\)/\1 \2 \3 \4 \5 \6/'; }
# loo_of ID -> "LARGE<tab>SMALL": the leave-one-out MAPE cells of run.sh's summary.md for the run
# (empty when the summary lacks it). Used by scale.sh, capacity.sh and same_site.sh.
loo_of() { awk -F'|' -v id="$1" '$2 ~ "^ "id" $" { gsub(/^ +| +$/, "", $5); gsub(/^ +| +$/, "", $6); print $5 "\t" $6 }' results/validation/summary.md; }
# fmt_mape MAPE N -> "MAPE (N)", or "-" when no size was in the range.
fmt_mape() { [[ $2 == 0 ]] && echo "-" || echo "$1 ($2)"; }
# split_of CSV -> "LAT<tab>BW": validate's "# where the error is" line as two table cells, the median
# measured - predicted of the latency-bound sizes and the rate ratio of the bandwidth-bound ones,
# each with its count ("-" when none; both "-" when the CSV has no such line, e.g. a size split).
split_of() {
  local line lat="-" bw="-"
  line=$(grep '^# where the error is' "$1" || true)
  [[ $line =~ latency-bound\ sizes\ \(([0-9]+),[^:]*:\ measured\ -\ predicted\ ([-+0-9.]+)\ us ]] &&
    lat="${BASH_REMATCH[2]} (${BASH_REMATCH[1]})"
  [[ $line =~ bandwidth-bound\ sizes\ \(([0-9]+),[^:]*:\ the\ run\ reaches\ ([0-9.]+)x ]] &&
    bw="${BASH_REMATCH[2]} (${BASH_REMATCH[1]})"
  printf '%s\t%s\n' "$lat" "$bw"
}
# nccl_mape_of CSV -> "large n_large small n_small": NCCL's own model (validate's nccl_model_us
# column, the 10th) against the measured time (2nd), over the rows that have it.
nccl_mape_of() {
  awk -F, 'NR > 1 && $1 !~ /^#/ && $10 != "" {
      e = ($10 - $2) / $2; e = 100 * (e < 0 ? -e : e)
      if ($1 >= 1048576) { l += e; nl++ } else { s += e; ns++ }
    }
    END { printf "%.2f %d %.2f %d\n", nl ? l / nl : 0, nl, ns ? s / ns : 0, ns }' "$1"
}
