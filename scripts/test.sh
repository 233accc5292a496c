#!/usr/bin/env bash
# Every test of the project: formatting, lints, unit/integration/property/
# stress tests of the whole workspace, and the loom models.
# This is the README's test command; .ci/run calls it unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null 2>&1 || { echo "cargo (stable Rust, via rustup) is required" >&2; exit 1; }
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo test (workspace)"
# passthrough_identity loop-mounts a scratch ext4 (it skips, saying why,
# where it cannot: not root, no loop device).
if [ "$(id -u)" -eq 0 ] && ! command -v mkfs.ext4 >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    { export DEBIAN_FRONTEND=noninteractive; apt-get install -y e2fsprogs || { apt-get update && apt-get install -y e2fsprogs; }; } >/dev/null 2>&1 \
        || echo "note: could not install e2fsprogs; passthrough_identity will skip"
fi
# Includes the FUSE mount tests (crates/vfscale-fuse/tests): as root with
# /dev/fuse they mount with mount(2) directly (no fuse3 package needed);
# elsewhere they print SKIPPED and pass.
cargo test --workspace
step "loom models"
scripts/loom.sh
step "AddressSanitizer (stress and API tests)"
if cargo +nightly --version >/dev/null 2>&1; then
    scripts/asan.sh
else
    echo "skipped: no nightly toolchain (rustup toolchain install nightly) for -Zsanitizer=address"
fi
step "fuzz (bounded: 20 s per target)"
scripts/fuzz.sh 20
