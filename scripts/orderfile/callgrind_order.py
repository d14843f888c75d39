#!/usr/bin/env python3
"""Turns callgrind profiles of mwgated into an lld symbol ordering file.

Every function of BINARY that the runs executed is listed, grouped by the runs that executed
it (the code all of them ran first) and hottest first within a group, so the linker packs the
code the daemon really runs into one contiguous stretch instead of leaving it spread among cold
code. Why it matters: the kernel maps a file's pages in
64 kB fault-around windows, so one touched function maps its cold neighbours too; scattered over
30 MB of text, a few thousand touched functions kept ~15 MB resident.

usage: callgrind_order.py [--map LINK_MAP --unnamed-out SCRIPT] BINARY CALLGRIND_OUT [CALLGRIND_OUT...] > ORDER

The profiles must come from `valgrind --tool=callgrind --dump-instr=yes --dump-line=no
--compress-strings=no --compress-pos=no`. Functions are found from the executed instruction
addresses and BINARY's own symbol table (nm), not from callgrind's function names: callgrind
gives one name per address range and misses some of the small functions Swift emits (witness
table accessors, value witnesses), which then landed among cold code. Costs of several profiles
are added up.

Code the symbol table does not name cannot go in the order: the Swift compiler emits small
private helpers (outlined copies and destroys, `objectdestroy`, key-path and extra-inhabitant
helpers) as unnamed functions, each in a section of its own (`.text..L__unnamed_3`) with no
symbol. A streaming gateway ran ~40 of them, a few bytes each among cold code, and each kept
a 64 kB window resident (about 2 MB in all). With --map (lld's -Map of BINARY), executed
instructions outside every symbol are found in the link map, and each such section is written
to SCRIPT as an input section description (object file and section name) for a linker script
that puts them in an output section of their own just before .text, next to the ordered code.
"""
import bisect
import collections
import os
import re
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


def unnamed_code_sections(link_map):
    """(start, end, file pattern, section) of every unnamed-function section (`.text..L*`) in
    BINARY's code (.text, or .text.unnamed where an earlier script put it), from lld's link
    map. The pattern names the object by its target's build directory and file name
    (`*Logging.build/Logger.swift.o`), or `*archive.a:member.o`, so the script matches
    wherever the tree is."""
    sections = []
    output = None
    # VMA LMA Size Align, then the output section's name one space after Align, an input
    # section indented further, a symbol further still.
    entry = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (.*)$")
    with open(link_map) as lines:
        for line in lines:
            match = entry.match(line)
            if not match:
                continue
            start, size, rest = int(match.group(1), 16), int(match.group(2), 16), match.group(3)
            if not rest.startswith(" "):
                output = rest.strip()  # an output section's line: its name starts in the Out column
                continue
            located = re.match(r"^\s+(.+):\((\.text\.\.L[^)]*)\)$", rest)
            if output not in (".text", ".text.unnamed") or not located or not size:
                continue
            path, section = located.groups()
            archive = re.match(r"^(.*)\(([^()]+)\)$", path)
            if archive:
                pattern = f"*{os.path.basename(archive.group(1))}:{archive.group(2)}"
            else:
                parts = path.split("/")
                # Not "*/": in a linker script that would end a comment.
                pattern = "*" + "/".join(parts[-2:]) if len(parts) > 1 else path
            sections.append((start, start + size, pattern, section))
    sections.sort()
    return sections


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
    arguments = sys.argv[1:]
    link_map = unnamed_out = None
    while arguments and arguments[0] in ("--map", "--unnamed-out") and len(arguments) > 1:
        if arguments[0] == "--map":
            link_map = arguments[1]
        else:
            unnamed_out = arguments[1]
        arguments = arguments[2:]
    if len(arguments) < 2 or (link_map is None) != (unnamed_out is None):
        sys.exit(__doc__)
    binary = os.path.realpath(arguments[0])
    symbols = code_symbols(binary)
    starts = [start for start, _, _ in symbols]
    unnamed = unnamed_code_sections(link_map) if link_map else []
    unnamed_starts = [start for start, _, _, _ in unnamed]
    total = collections.Counter()
    runs_of = collections.defaultdict(set)  # function (or unnamed section) -> the profiles that executed it
    unnamed_total = collections.Counter()
    for run, path in enumerate(arguments[1:]):
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
                continue
            index = bisect.bisect_right(unnamed_starts, file_address) - 1
            if index >= 0 and file_address < unnamed[index][1]:
                key = unnamed[index][2:]
                unnamed_total[key] += max(cost, 1)
                runs_of[key].add(run)
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
    if unnamed_out:
        with open(unnamed_out, "w") as script:
            script.write(UNNAMED_SCRIPT_HEAD)
            for (pattern, section), _ in sorted(unnamed_total.items(), key=placement):
                script.write(f"        {pattern}({section})\n")
            script.write(UNNAMED_SCRIPT_TAIL)
        print(f"callgrind_order.py: {len(unnamed_total)} unnamed functions executed, placed by {unnamed_out}",
              file=sys.stderr)


UNNAMED_SCRIPT_HEAD = """\
/* The unnamed functions mwgated runs (the Swift compiler's private helpers, which have no
 * symbol for packaging/mwgated.order to name), packed together just before .text, where the
 * ordered code starts. Made by `make orderfile` (scripts/orderfile/); an entry that no longer
 * matches is ignored. Linked by scripts/build-static.sh. */
SECTIONS
{
    .text.unnamed :
    {
"""
UNNAMED_SCRIPT_TAIL = """\
    }
}
INSERT BEFORE .text;
"""


if __name__ == "__main__":
    main()
