#!/usr/bin/env bash
# vfscale through FUSE beside other FUSE filesystems with in-memory storage
# (issue 8's "≥ 2× the best other FUSE in-memory filesystem"). Debian ships
# no purely in-memory FUSE filesystem, so the peers are the FUSE
# filesystems whose backing store is kept in RAM here (/dev/shm):
#   fuse2fs         ext4 image file on /dev/shm (e2fsprogs' FUSE ext2/3/4 driver)
#   fuse-overlayfs  overlay with upper/lower directories on /dev/shm
#   mergerfs        union over one /dev/shm branch
# Each is mounted, driven by the bench's kernel target (`--kernel-dir`:
# the same syscalls as every kernel row), and unmounted; then the host
# tmpfs (kernel) and vfscale's own mount (fuse) run in one invocation.
# Needs root (apt, mount). Usage:
#   [WORKLOADS="w1 w2"] scripts/fuse_peers.sh [OUTDIR] [extra bench args]
#   [ENTRIES=N] scripts/fuse_peers.sh --prepopulated [OUTDIR] [extra bench args]
# e.g. scripts/fuse_peers.sh docs/perf/fuse-peers --repeat 3
#
# --prepopulated: readdir-large only, at ENTRIES (default 100,000) entries.
# The peers' creates are too slow to build that many files through their
# mounts in bounded time, so each peer's directory is filled through its
# backing store before mounting (mergerfs and fuse-overlayfs: files made in
# the branch / lower directory; fuse2fs: the image filled through a loop
# mount of the kernel's ext4) and only its readdir rate is measured through the
# mount (`vfscale bench --readdir-dir`); vfscale and the host tmpfs run the
# whole workload (their create and unlink rows have no peer to compare).
#
# When readdir-large runs, it runs a second time with --readdir-uncached:
# the kernel's page cache dropped before every readdir pass (untimed), so
# the rows measure the listing each server produces rather than the
# kernel's cached copy (FOPEN_CACHE_DIR / libfuse's cache_readdir), which
# every server that asks for it shares. Files NAME.json (cache kept) and
# NAME-dropped.json; the summary's rows say which.
set -euo pipefail
cd "$(dirname "$0")/.."
PREPOPULATED=0
if [ "${1:-}" = "--prepopulated" ]; then
    PREPOPULATED=1
    shift
fi
OUT="${1:-target/fuse-peers}"
shift || true
if [ $PREPOPULATED = 1 ]; then
    ENTRIES="${ENTRIES:-100000}"
    WORKLOADS=(readdir-large)
    ARGS=(--threads 1,2 --entries "$ENTRIES" "$@")
else
    read -r -a WORKLOADS <<< "${WORKLOADS:-stat-same create-unlink readdir-large}"
    ARGS=(--threads 1,2 --entries 20000 "$@")
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "fuse_peers skipped: needs root to install and mount the peers"
    exit 0
fi
need=()
for pair in fuse2fs:fuse2fs fuse-overlayfs:fuse-overlayfs mergerfs:mergerfs mkfs.ext4:e2fsprogs fusermount3:fuse3; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    apt-get install -y "${need[@]}" >/dev/null
fi

cargo build --release -q -p vfscale-cli
BIN=target/release/vfscale
WORK=$(mktemp -d /dev/shm/vfscale-fuse-peers.XXXXXX)
MOUNTED=()
cleanup() {
    for m in "${MOUNTED[@]}"; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT"

# Makes DIR/big holding ENTRIES empty files e0.. (the names readdir-large
# itself uses), when --prepopulated.
populate() {
    [ $PREPOPULATED = 1 ] || return 0
    mkdir -p "$1/big"
    python3 - "$1/big" "$ENTRIES" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open(os.path.join(d, f"e{i}"), os.O_CREAT | os.O_WRONLY, 0o644))
PY
}

mount_peer() {
    local name=$1 mnt=$WORK/mnt-$1
    mkdir -p "$mnt"
    case $name in
        fuse2fs)
            truncate -s 4G "$WORK/ext4.img"
            mkfs.ext4 -q -F -N 400000 "$WORK/ext4.img"
            if [ $PREPOPULATED = 1 ]; then
                # Filled through the kernel's own ext4 on a loop device
                # (`mkfs.ext4 -d` inserts names one by one into an unindexed
                # directory: minutes for 100,000).
                mkdir -p "$WORK/ext4-loop"
                mount -o loop "$WORK/ext4.img" "$WORK/ext4-loop"
                populate "$WORK/ext4-loop"
                umount "$WORK/ext4-loop"
            fi
            fuse2fs "$WORK/ext4.img" "$mnt" -o rw
            ;;
        fuse-overlayfs)
            mkdir -p "$WORK/lower" "$WORK/upper" "$WORK/work"
            populate "$WORK/lower"
            fuse-overlayfs -o "lowerdir=$WORK/lower,upperdir=$WORK/upper,workdir=$WORK/work" "$mnt"
            ;;
        mergerfs)
            mkdir -p "$WORK/branch"
            populate "$WORK/branch"
            mergerfs "$WORK/branch" "$mnt"
            ;;
    esac
    MOUNTED+=("$mnt")
    PEER_MNT=$mnt
}

UNCACHED=0
for w in "${WORKLOADS[@]}"; do
    [ "$w" = readdir-large ] && UNCACHED=1
done

for peer in fuse2fs fuse-overlayfs mergerfs; do
    echo "==> $peer"
    mount_peer "$peer"
    PEER_ARGS=()
    if [ $PREPOPULATED = 1 ]; then
        PEER_ARGS=(--readdir-dir "$PEER_MNT/big")
    fi
    "$BIN" bench "${WORKLOADS[@]}" --targets kernel --kernel-dir "$PEER_MNT" "${ARGS[@]}" \
        "${PEER_ARGS[@]}" --json "$OUT/$peer.json"
    if [ $UNCACHED = 1 ]; then
        echo "==> $peer, kernel cache dropped before each readdir pass"
        "$BIN" bench readdir-large --targets kernel --kernel-dir "$PEER_MNT" "${ARGS[@]}" \
            "${PEER_ARGS[@]}" --readdir-uncached --json "$OUT/$peer-dropped.json"
    fi
done
echo "==> host tmpfs (kernel) and vfscale through FUSE (fuse)"
"$BIN" bench "${WORKLOADS[@]}" --targets kernel,fuse "${ARGS[@]}" --json "$OUT/vfscale.json"
if [ $UNCACHED = 1 ]; then
    echo "==> host tmpfs and vfscale, kernel cache dropped before each readdir pass"
    "$BIN" bench readdir-large --targets kernel,fuse "${ARGS[@]}" --readdir-uncached \
        --json "$OUT/vfscale-dropped.json"
fi
python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, sys, os
out = sys.argv[1]
peers = ["fuse2fs", "fuse-overlayfs", "mergerfs"]
rate = {}
def load(name, target, label):
    for suffix in ("", "-dropped"):
        path = os.path.join(out, name + suffix + ".json")
        if not os.path.exists(path):
            continue
        for r in json.load(open(path))["results"]:
            if r["target"] == target:
                phase = r["params"].get("phase", "")
                if r["params"].get("kernel_cache") == "dropped":
                    phase += ", cache dropped"
                key = (r["workload"], r["threads"], phase)
                rate.setdefault(key, {})[label] = r["ops_per_sec"]
for p in peers:
    load(p, "kernel", p)
load("vfscale", "kernel", "host tmpfs")
load("vfscale", "fuse", "vfscale")
cols = ["host tmpfs", "vfscale"] + peers
print("| workload | threads | " + " | ".join(c + " ops/s" for c in cols)
      + " | vfscale ÷ host | vfscale ÷ best peer |")
print("|---" * (len(cols) + 4) + "|")
fmt = lambda v: "-" if v is None else f"{v/1e3:.1f} k" if v < 1e6 else f"{v/1e6:.2f} M"
for (w, t, ph), row in sorted(rate.items()):
    best = max((row.get(p) or 0) for p in peers)
    v, h = row.get("vfscale"), row.get("host tmpfs")
    name = w + (f" ({ph})" if ph else "")
    ratios = f" | {v/h:.2f} | {v/best:.2f} |" if v and h and best else " | - | - |"
    print(f"| {name} | {t} | " + " | ".join(fmt(row.get(c)) for c in cols) + ratios)
PY
echo "results in $OUT/"
