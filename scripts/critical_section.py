#!/usr/bin/env python3
"""What a create+unlink does inside the directory lock, from the
`valgrind --tool=lackey --trace-mem=yes` trace of the createshare example
(stdin: the trace; argv[1]: MARK's hex address; argv[2]: operations per
measured phase; argv[3]: the directory lock word's hex address, or
"find" to list the addresses of the lock's line candidates: every address
the measured phases modify with a read-modify-write at least once per op).

A section starts at a read-modify-write of the lock word and ends at the
next one (parking_lot's exclusive lock and unlock are each one
compare-exchange; sections per op must read 2.00, else the word was also
taken shared and the count is wrong). It prints, per phase, the sections
and instructions inside them per op, and the 64-byte lines touched inside
the sections that the other phase writes anywhere (the lines the next
holder must pull from the previous one while holding the lock), with the
accesses per op inside the sections."""
import sys
from collections import defaultdict

mark = int(sys.argv[1], 16)
ops = int(sys.argv[2])
find = sys.argv[3] == "find"
lock = 0 if find else int(sys.argv[3], 16)
phase = 0  # 0 warm-up A, 1 measured A, 2 warm-up B, 3 measured B
inside = False
sections = [0, 0]
instrs = [0, 0]
written = [set(), set()]  # lines each measured phase writes anywhere
touched = [defaultdict(int), defaultdict(int)]  # lines touched inside, accesses
rmw = [defaultdict(int), defaultdict(int)]
for line in sys.stdin:
    if line.startswith("I"):
        if inside and phase in (1, 3):
            instrs[phase // 2] += 1
        continue
    if len(line) < 4 or line[0] != " ":
        continue
    op = line[1]
    addr = int(line[3:].split(",")[0], 16)
    if addr == mark and op in "SM":
        phase += 1
        inside = False
        continue
    if phase not in (1, 3):
        continue
    who = phase // 2
    if op in "SM":
        written[who].add(addr >> 6)
    if op == "M":
        rmw[who][addr] += 1
    if not find and addr == lock and op == "M":
        if not inside:
            sections[who] += 1
        inside = not inside
        continue
    if inside:
        touched[who][addr >> 6] += 1
if find:
    for who in (0, 1):
        print(f"phase {'AB'[who]}: addresses modified >= once per op:")
        for a, n in sorted(rmw[who].items(), key=lambda x: -x[1]):
            if n >= ops:
                print(f"  {a:#x} (line {a >> 6 << 6:#x}): {n / ops:.2f} per op")
    sys.exit(0)
print(f"phases seen: {phase}")
for who, other in ((0, 1), (1, 0)):
    print(f"phase {'AB'[who]}: {sections[who] / ops:.2f} sections per op, "
          f"{instrs[who] / ops:.0f} instructions inside per op")
    shared = sorted(l for l in touched[who] if l in written[other])
    print(f"  lines touched inside that phase {'AB'[other]} writes: {len(shared)}")
    for l in shared:
        print(f"    {l << 6:#x}: {touched[who][l] / ops:.2f} accesses per op inside")
