#!/usr/bin/env bash
# Instructions per iteration of the measured paths (docs/PERFORMANCE.md):
# each example runs under callgrind at two iteration counts, and the
# difference of the instruction totals over the difference of the counts
# is the cost of one iteration (start-up and teardown cancel out).
# Usage: scripts/icount.sh [DIR]   (DIR: where the examples are built;
# default target/release/examples). Build them first:
#   cargo build --release -p vfscale --example createbench \
#     --example openclosebench --example writebench --example statbench \
#     --example anonchurn
# To compare two revisions, build each in a worktree with its own
# CARGO_TARGET_DIR and run this on both directories.
set -euo pipefail
D=${1:-target/release/examples}
run() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ {print $4}'; }
pair() {
    local n1=$1 n2=$2 what=$3
    shift 3
    local a b
    a=$(run "${@/N/$n1}")
    b=$(run "${@/N/$n2}")
    python3 -c "print('$what', round(($b - $a) / ($n2 - $n1), 1))"
}
pair 50000 100000 "create+close+unlink" "$D/createbench" N
pair 50000 100000 "open+close" "$D/openclosebench" N
pair 100000 200000 "pwrite+fchmod" "$D/writebench" N
pair 100000 200000 "stat" "$D/statbench" N
for k in pipe eventfd socket; do
    pair 50000 100000 "$k" "$D/anonchurn" "$k" N
done
