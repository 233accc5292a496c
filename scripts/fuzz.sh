#!/usr/bin/env bash
# Runs each cargo-fuzz target (fuzz/fuzz_targets) for SECS seconds (default
# 60) with the nightly toolchain: path resolution against a fixed tree,
# the process API as an operation sequence followed by the invariant
# checker, raw FUSE requests into the FUSE server over a socket pair, and
# raw io_uring ring entries through the ring transport's decoder.
# Installs cargo-fuzz (`cargo install cargo-fuzz --locked`, a few minutes
# once) when it is missing; skips with the reason when that fails (no
# network). Corpora persist in
# fuzz/corpus/<target> (ignored by git); a crash is saved under
# fuzz/artifacts/<target>/ and replays with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz skipped: no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (cargo install cargo-fuzz --locked)"
    if ! cargo install cargo-fuzz --locked >/tmp/vfscale-cargo-fuzz-install.log 2>&1; then
        tail -n 5 /tmp/vfscale-cargo-fuzz-install.log
        echo "fuzz skipped: cargo-fuzz could not be installed (log above)"
        exit 0
    fi
fi

# Slab chunks are mmap'ed, and LeakSanitizer does not scan them for
# pointers: with the slab on, a name buffer owned by a live dentry looks
# leaked. Build as the ASan run does, with dentries and inodes from Box.
export RUSTFLAGS="--cfg vfscale_no_slab ${RUSTFLAGS:-}"

for target in path_resolution process_ops fuse_requests uring_requests; do
    echo "==> fuzz $target for ${SECS}s"
    mkdir -p "fuzz/corpus/$target"
    (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$SECS" -max_len=512 -print_final_stats=1 2>&1 | tail -n 15)
    # (pipefail is inherited: a crash fails the subshell and the script.)
done
