#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A/B of two kernel_bench binaries (e.g. one built before a kernel change, one after), run
# alternately (A B B A A B ...) so that load from other processes hits both alike; prints, per
# weight type, the median and range of the first batch column's GB/s (pass --batches 1 for the
# one-token matvec) of each, and B/A of the medians.
# Usage: bench/kernels/kernel_ab.sh [--rounds N] BIN_A BIN_B [kernel_bench options...]
#   e.g. bench/kernels/kernel_ab.sh --rounds 5 /tmp/kb.base build/ci/bench/kernels/kernel_bench \
#          --n 2048 --rows 6144 --threads 1 --cpu-clock --batches 1 --types iq2_rp,iq3_s_rp,q4_K
# One tier and one thread count per run (the rows of every table are pooled by type). Options one
# binary does not know (a type added by the change) fail its run: keep to the common ones.
set -euo pipefail
rounds=5
if [ "${1:-}" = --rounds ]; then
  rounds=$2
  shift 2
fi
case "$rounds" in '' | *[!0-9]* | 0) echo "error: --rounds is '$rounds' but must be a positive number" >&2; exit 1 ;; esac
[ $# -ge 2 ] || { sed -n '3,12p' "$0" >&2; exit 1; }
a=$1
b=$2
shift 2
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "error: '$bin' is not an executable" >&2; exit 1; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run WHICH BIN: appends "type GB/s" lines of one kernel_bench run to $work/WHICH.
run() {
  local which=$1 bin=$2
  shift 2
  "$bin" "$@" > "$work/out" 2>&1 || { echo "error: $bin failed:" >&2; tail -5 "$work/out" >&2; exit 1; }
  # Rows of the tables: a type name, its MB, then the first batch's GB/s.
  awk '/^type / {in_table = 1; next} /^$/ {in_table = 0} in_table && NF >= 3 {print $1, $3}' "$work/out" >> "$work/$which"
}
for ((i = 0; i < rounds; ++i)); do
  if ((i % 2 == 0)); then
    run A "$a" "$@"
    run B "$b" "$@"
  else
    run B "$b" "$@"
    run A "$a" "$@"
  fi
done
echo "kernel_bench A/B, $rounds rounds alternated; $(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A: $a"
echo "B: $b"
echo "options: $*"
echo
echo "| type | A GB/s median (min-max) | B GB/s median (min-max) | B/A |"
echo "|---|---|---|---|"
# Median and range per type of each side, types in the order of the first run.
awk '
  FNR == 1 { side = (FILENAME ~ /\/A$/) ? "A" : "B" }
  { key = side SUBSEP $1; n[key]++; v[key, n[key]] = $2 + 0; if (!(($1) in seen)) { seen[$1] = 1; order[++nt] = $1 } }
  function stats(key,    m, i, j, t, lo, hi, med) {
    m = n[key]
    for (i = 1; i <= m; i++) s[i] = v[key, i]
    for (i = 2; i <= m; i++) { t = s[i]; for (j = i - 1; j >= 1 && s[j] > t; j--) s[j + 1] = s[j]; s[j + 1] = t }
    med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
    last_med = med
    return sprintf("%.2f (%.2f-%.2f)", med, s[1], s[m])
  }
  END {
    for (k = 1; k <= nt; k++) {
      ty = order[k]
      sa = stats("A" SUBSEP ty); ma = last_med
      sb = stats("B" SUBSEP ty); mb = last_med
      printf "| %s | %s | %s | %.2fx |\n", ty, sa, sb, (ma > 0 ? mb / ma : 0)
    }
  }' "$work/A" "$work/B"
