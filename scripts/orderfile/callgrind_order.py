#!/usr/bin/env python3
"""Turns callgrind profiles of mwgated into an lld symbol ordering file.

Every function of BINARY that the runs executed is listed, grouped by the runs that executed
it (the code all of them ran first) and hottest first within a group, so the linker packs the
code the daemon really runs into one contiguous stretch instead of leaving it spread among cold
code. Why it matters: the kernel maps a file's pages in
64 kB fault-around windows, so one touched function maps its cold neighbours too; scattered over
30 MB of text, a few thousand touched functions kept ~15 MB resident.

usage: callgrind_order.py BINARY CALLGRIND_OUT [CALLGRIND_OUT...] > ORDER

The profiles must come from `valgrind --tool=callgrind --dump-instr=yes --dump-line=no
--compress-strings=no --compress-pos=no`. Functions are found from the executed instruction
addresses and BINARY's own symbol table (nm), not from callgrind's function names: callgrind
gives one name per address range and misses some of the small functions Swift emits (witness
table accessors, value witnesses), which then landed among cold code. Costs of several profiles
are added up.
"""
import bisect
import collections
import os
import subprocess
import sys


def code_symbols(binary):
    """(start, end, name) of every sized code symbol in `binary`, by address."""
    listing = subprocess.run(["nm", "--defined-only", "-S", binary], capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            start, size = int(fields[0], 16), int(fields[1], 16)
            if size:
                symbols.append((start, start + size, fields[3]))
    symbols.sort()
    return symbols


def executed_instructions(path, binary):
    """(address, own cost) of each instruction of `binary` the run executed, and for each
    function callgrind named, one address inside it (to find where valgrind loaded it)."""
    costs = collections.Counter()
    named = {}
    current_object = current_function = None
    skip_next_cost = False
    with open(path, errors="replace") as profile:
        for line in profile:
            if line.startswith("ob="):
                current_object = os.path.realpath(line[3:].strip())
            elif line.startswith("fn="):
                current_function = line[3:].strip()
            elif line.startswith("calls="):
                # The next cost line is the callee's inclusive cost, not this instruction's own.
                skip_next_cost = True
            elif line.startswith("0x"):
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                if current_object != binary:
                    continue
                fields = line.split()
                address = int(fields[0], 16)
                costs[address] += int(fields[1]) if len(fields) > 1 else 0
                if current_function and current_function not in named:
                    named[current_function] = address
    return costs, named


def load_bias(named, symbols):
    """Where valgrind mapped the binary: the most common difference between the address
    callgrind saw in a named function and that function's address in the file."""
    by_name = {}
    for start, end, name in symbols:
        by_name.setdefault(name, (start, end))
    votes = collections.Counter()
    for name, address in named.items():
        span = by_name.get(name.rsplit("'", 1)[0])
        if span:
            votes[(address - span[0]) & ~0xFFF] += 1
    if not votes:
        return None
    return votes.most_common(1)[0][0]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.realpath(sys.argv[1])
    symbols = code_symbols(binary)
    starts = [start for start, _, _ in symbols]
    total = collections.Counter()
    runs_of = collections.defaultdict(set)  # function -> the profiles that executed it
    for run, path in enumerate(sys.argv[2:]):
        costs, named = executed_instructions(path, binary)
        bias = load_bias(named, symbols)
        if not costs or bias is None:
            sys.exit(f"callgrind_order.py: {path} has no instruction of {binary}: was it profiled with "
                     "--dump-instr=yes --compress-strings=no, and is it the same binary?")
        unmapped = 0
        for address, cost in costs.items():
            file_address = address - bias
            index = bisect.bisect_right(starts, file_address) - 1
            if index >= 0 and file_address < symbols[index][1]:
                total[symbols[index][2]] += max(cost, 1)
                runs_of[symbols[index][2]].add(run)
            else:
                unmapped += 1
        print(f"callgrind_order.py: {path}: {len(costs)} instructions, {unmapped} outside any symbol",
              file=sys.stderr)
    # Grouped by the runs that executed them, the code every run needs first, then each
    # configuration's own (one sink's client, say) in a block of its own, so a gateway touches
    # the shared block and its own, not every sink's code interleaved. Within a group hottest
    # first: under memory pressure the start-up-only tail can go while the steady-state code
    # stays in a few dense pages.
    def placement(item):
        name, cost = item
        runs = runs_of[name]
        return (-len(runs), sorted(runs), -cost, name)
    for name, _ in sorted(total.items(), key=placement):
        print(name)
    print(f"callgrind_order.py: {len(total)} functions executed in {binary}", file=sys.stderr)


if __name__ == "__main__":
    main()
