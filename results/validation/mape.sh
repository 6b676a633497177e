# Shared by run.sh and scale.sh (sourced): read and print validate's MAPE line.
# mape_of CSV -> "all n_all large n_large small n_small" from validate's "# MAPE ..." line.
mape_of() { grep '^# MAPE' "$1" | sed -E 's/# MAPE ([0-9.]+)% over ([0-9]+) sizes \(>=1MiB: ([0-9.]+)% over ([0-9]+); <1MiB: ([0-9.]+)% over ([0-9]+)\)/\1 \2 \3 \4 \5 \6/'; }
# fmt_mape MAPE N -> "MAPE (N)", or "-" when no size was in the range.
fmt_mape() { [[ $2 == 0 ]] && echo "-" || echo "$1 ($2)"; }
