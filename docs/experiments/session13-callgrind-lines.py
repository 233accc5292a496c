#!/usr/bin/env python3
"""Per-instruction D1 read misses from two callgrind runs (session 13, issue 6).

Usage: session13-callgrind-lines.py MORE.out FEWER.out N
where both files come from
  PTHOT_SHUFFLE=1 valgrind --tool=callgrind --cache-sim=yes --LL=33554432,16,64 \
      --dump-instr=yes --callgrind-out-file=F target/release/examples/pthot count DIR 100000 P
with P = 3 (MORE) and 1 (FEWER); N = the stats between them (200000).
Prints the misses per stat by instruction address; resolve each with
  addr2line -i -f -C -e target/release/examples/pthot ADDR
"""
import sys, collections
def parse(fn):
    cost = collections.Counter()  # addr -> D1mr
    ir = collections.Counter()
    last_addr = 0; last_line = 0
    in_calls = 0
    for raw in open(fn):
        line = raw.rstrip('\n')
        if not line: continue
        c = line[0]
        if c.isdigit() or c in '+-*' or line.startswith('0x'):
            parts = line.split()
            # position: instr line
            def sub(tok, last):
                if tok.startswith('0x'): return int(tok, 16)
                if tok == '*': return last
                if tok[0] in '+-': return last + int(tok)
                return int(tok)
            a = sub(parts[0], last_addr); l = sub(parts[1], last_line)
            last_addr, last_line = a, l
            vals = [int(x) for x in parts[2:]] + [0]*9
            if in_calls:
                in_calls -= 1  # cost line following calls= is inclusive call cost; skip
                continue
            ir[a] += vals[0]; cost[a] += vals[4]
        elif line.startswith('calls='):
            in_calls = 1
    return ir, cost
ir3, c3 = parse(sys.argv[1]); ir1, c1 = parse(sys.argv[2]); n = int(sys.argv[3])
d = {a: c3[a]-c1.get(a,0) for a in c3}
tot = sum(d.values())
print("total D1mr diff", tot, "per stat", tot/n)
top = sorted(d.items(), key=lambda x: -x[1])[:20]
for a, v in top:
    print(hex(a), v/n)
