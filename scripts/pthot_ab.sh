#!/usr/bin/env bash
# Interleaved A/B of pthot's cold pass (vfscale's passthrough miss path,
# host caches warm): runs each given pthot binary RUNS times, in turn,
# on the same tree, and prints each one's median (for an even count the
# lower of the two middle runs), min and max ns per miss.
# Interleaving puts the machine's drift on every binary alike (the
# session 29 figures in docs/PERFORMANCE.md).
#
# Usage: scripts/pthot_ab.sh RUNS DIR FILES BIN...
#   e.g. cargo build --release -p vfscale-bench --example pthot
#        cp target/release/examples/pthot /tmp/pthot_new   (and an older build as /tmp/pthot_old)
#        scripts/pthot_ab.sh 8 /var/tmp/pthot100000 100000 /tmp/pthot_old /tmp/pthot_new
set -euo pipefail
if [ $# -lt 4 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
runs=$1 dir=$2 files=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for _ in $(seq "$runs"); do
    i=0
    for bin in "$@"; do
        "$bin" count "$dir" "$files" 0 2>&1 | awk '/^cold pass/ {print $5}' >> "$out/$i"
        i=$((i + 1))
    done
done
i=0
for bin in "$@"; do
    sort -n "$out/$i" | awk -v b="$bin" '{a[NR] = $1} END {
        printf "%s: median %.0f min %.0f max %.0f ns per miss (%d runs)\n",
            b, a[int((NR + 1) / 2)], a[1], a[NR], NR }'
    i=$((i + 1))
done
