#!/usr/bin/env python3
"""Reads `valgrind --tool=lackey --trace-mem=yes` output of the anonshare
or createshare example (stdin: the trace; argv[1]: MARK's hex address;
optional argv[2]: operations per measured phase) and prints the 64-byte
lines both measured phases touched with at least one write, with the
instruction addresses that wrote or read them (feed those to addr2line)
and, with argv[2], how many writes per operation each phase made there."""
import sys
from collections import defaultdict

mark = int(sys.argv[1], 16)
phase = 0  # 0 warm-up A, 1 measured A, 2 warm-up B, 3 measured B
ops = int(sys.argv[2]) if len(sys.argv) > 2 else 0
writes = [defaultdict(set), defaultdict(set)]
nwrites = [defaultdict(int), defaultdict(int)]
reads = [defaultdict(set), defaultdict(set)]
ip = 0
for line in sys.stdin:
    if line.startswith("I"):
        ip = int(line[3:].split(",")[0], 16)
        continue
    if len(line) < 4 or line[0] != " ":
        continue
    op = line[1]
    addr = int(line[3:].split(",")[0], 16)
    if addr == mark and op in "SM":
        phase += 1
        continue
    if phase == 1:
        who = 0
    elif phase == 3:
        who = 1
    else:
        continue
    lineno = addr >> 6
    if op in "SM":
        writes[who][lineno].add(ip)
        nwrites[who][lineno] += 1
    if op in "LM":
        reads[who][lineno].add(ip)

shared = set()
for w, o in ((0, 1), (1, 0)):
    for l in writes[w]:
        if l in writes[o] or l in reads[o]:
            shared.add(l)
print(f"phases seen: {phase}; lines written A/B: {len(writes[0])}/{len(writes[1])}; shared with a write: {len(shared)}")
if ops:
    # Lines both phases write (not only read), in writes per operation: the
    # lines that move between two CPUs running the phases at once.
    both = [l for l in shared if l in writes[0] and l in writes[1]]
    hot = [l for l in both if min(nwrites[0][l], nwrites[1][l]) >= ops / 1000]
    print(f"written by both: {len(both)} lines, writes per op A {sum(nwrites[0][l] for l in both) / ops:.3f}, B {sum(nwrites[1][l] for l in both) / ops:.3f}; "
          f"of them written >= 0.001/op by each: {len(hot)} lines, A {sum(nwrites[0][l] for l in hot) / ops:.3f}, B {sum(nwrites[1][l] for l in hot) / ops:.3f}")
for l in sorted(shared):
    if ops:
        print(f"line {l << 6:#x}: writes per op A {nwrites[0][l] / ops:.3f}, B {nwrites[1][l] / ops:.3f}")
    print(f"line {l << 6:#x}: A writes {sorted(hex(i) for i in writes[0].get(l, ()))} reads {sorted(hex(i) for i in reads[0].get(l, ()))[:4]}; B writes {sorted(hex(i) for i in writes[1].get(l, ()))} reads {sorted(hex(i) for i in reads[1].get(l, ()))[:4]}")
