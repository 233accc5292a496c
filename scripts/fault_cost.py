#!/usr/bin/env python3
"""What a first touch of fresh anonymous memory costs on this machine:
maps SIZE MiB (default 40), writes one byte per 4 KiB page and prints the
time per page, with and without MAP_POPULATE. Used by docs/PERFORMANCE.md
(session 28) to price the page faults of a cold passthrough miss.

Usage: scripts/fault_cost.py [SIZE_MIB]
"""
import mmap
import sys
import time

PAGE = 4096


def touch(size, flags):
    t = time.perf_counter_ns()
    m = mmap.mmap(-1, size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    for off in range(0, size, PAGE):
        m[off] = 1
    ns = time.perf_counter_ns() - t
    m.close()
    return ns / (size // PAGE)


def main():
    size = int(sys.argv[1] if len(sys.argv) > 1 else 40) << 20
    private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    # The loop's own cost, on pages already touched.
    m = mmap.mmap(-1, size, flags=private | mmap.MAP_POPULATE)
    t = time.perf_counter_ns()
    for off in range(0, size, PAGE):
        m[off] = 1
    loop = (time.perf_counter_ns() - t) / (size // PAGE)
    m.close()
    print(f"first touch: {touch(size, private) - loop:.0f} ns per page")
    print(f"MAP_POPULATE (mmap call and touch): {touch(size, private | mmap.MAP_POPULATE) - loop:.0f} ns per page")
    print(f"loop overhead subtracted: {loop:.0f} ns per page")


main()
