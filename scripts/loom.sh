#!/usr/bin/env bash
# Model-checks the sync protocols (refcount, seqcount, epoch reclamation, bit-locked hash
# chains, the slab depot's per-CPU shards and steals, the approximate counter's folds, and
# the others listed in docs/TESTING.md) with loom: crates/vfscale/tests/loom_sync.rs.
#
# Usage: scripts/loom.sh [extra cargo test args, e.g. a test name filter]
# Env:   LOOM_MAX_PREEMPTIONS (default 3), CARGO_TARGET_DIR (default target),
#        LOOM_LOG / LOOM_CHECKPOINT_* as documented by loom.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
# A separate target dir: --cfg loom rebuilds every crate, and must not
# invalidate the normal build.
RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" exec cargo test --release -p vfscale \
    --target-dir "${CARGO_TARGET_DIR:-target}/loom" --test loom_sync -- "$@"
