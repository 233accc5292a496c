#!/usr/bin/env bash
# Runs the core's concurrency and API tests under AddressSanitizer with the
# installed nightly toolchain: use-after-free in the lock-free paths (a
# retired dentry read after its epoch), double frees in the kill paths,
# leaks at teardown.
# Usage: scripts/asan.sh [extra test filters]
set -euo pipefail
cd "$(dirname "$0")/.."
# vfscale_no_slab: dentries and inodes from Box, so ASan sees every free.
export RUSTFLAGS="-Zsanitizer=address --cfg vfscale_no_slab ${RUSTFLAGS:-}"
export RUSTDOCFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
exec cargo +nightly test -p vfscale --target x86_64-unknown-linux-gnu \
    --target-dir target/asan --test stress --test smoke --test hot_path \
    --test api_names --test api_io --test api_open --test api_context \
    --test api_mounts --test api_dirs --test api_attrs --test api_perms \
    --test api_anon --test anon_stress --test api_handles --test api_xattr_space \
    --test in_lookup --test api_fhandle --test passthrough --test passthrough_containment \
    --test passthrough_stress --test passthrough_dirs --test defer --test reclaim \
    --test reclaim_passthrough --test api_read_only --test passthrough_read_only \
    --test api_openat2 --test api_mount_move --test api_epoll --test api_splice --test api_inotify \
    --test api_fileattr --test api_propagation --test api_namespaces --test api_mount_setattr --test api_detached_trees --test hot_dentry -- "$@"
