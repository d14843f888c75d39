#!/usr/bin/env python3
"""Turns a callgrind profile of mwgated into an lld symbol ordering file.

Every function the run executed in BINARY is listed, those with the most instructions of their
own first, so the linker packs the code the daemon really runs into one contiguous stretch
instead of leaving it spread among cold code. Why it matters: the kernel maps a file's pages in
64 kB fault-around windows, so one touched function maps its cold neighbours too; scattered over
30 MB of text, a few hundred touched functions kept ~15 MB resident.

usage: callgrind_order.py BINARY CALLGRIND_OUT [CALLGRIND_OUT...] > ORDER

The profile must come from `valgrind --tool=callgrind --demangle=no --compress-strings=no`
(names as the linker knows them). Functions seen in several profiles are ranked by their sum.
"""
import collections
import os
import re
import sys

RECURSION_SUFFIX = re.compile(r"'\d+$")


def self_costs(path, binary):
    """Instructions executed in each function of `binary` itself (calls excluded)."""
    costs = collections.Counter()
    current_object = current_function = None
    skip_next_cost = False
    with open(path, errors="replace") as profile:
        for line in profile:
            if line.startswith("ob="):
                current_object = os.path.realpath(line[3:].strip())
            elif line.startswith("fn="):
                current_function = RECURSION_SUFFIX.sub("", line[3:].strip())
            elif line.startswith("calls="):
                # The next cost line is the callee's inclusive cost, not this function's own.
                skip_next_cost = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                if current_object == binary and current_function:
                    fields = line.split()
                    costs[current_function] += int(fields[1]) if len(fields) > 1 else 0
    return costs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.realpath(sys.argv[1])
    total = collections.Counter()
    for path in sys.argv[2:]:
        costs = self_costs(path, binary)
        if not costs:
            sys.exit(f"callgrind_order.py: {path} has no function of {binary}: was it profiled "
                     "with --compress-strings=no, and is it the same binary?")
        total.update(costs)
    # Hottest first: under memory pressure the kernel can drop the start-up-only tail while
    # the steady-state code stays in a few dense pages.
    for name, _ in sorted(total.items(), key=lambda item: (-item[1], item[0])):
        if name.startswith("0x"):
            continue  # no symbol: nothing for the linker to place
        print(name)
    print(f"callgrind_order.py: {len(total)} functions executed in {binary}", file=sys.stderr)


if __name__ == "__main__":
    main()
