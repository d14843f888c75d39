#!/usr/bin/env python3
"""What of a running process's own binary is resident: by ELF section, by origin (Swift module
from the mangled symbol names; ICU, CoreFoundation, the Swift runtime, libdispatch and BoringSSL
from their C/C++ names) for .text, .rodata and .data.rel.ro, and inside ICU's common data
(icudt*_dat) by data item. Reads /proc/PID/pagemap (present bits: no privileges needed beyond
reading the process) and the binary's section and symbol tables (readelf, nm).

A page shared by several symbols is split among them by bytes. The kernel maps file pages in
fault-around windows (64 kB on current kernels) around each page touched, so "resident" is
what was touched plus its neighbours, not what was touched alone.

usage: footprint_resident.py PID BINARY [PAGES_OUT]   (PAGES_OUT: one "vaddr is_file" line per
resident page, for further analysis)"""
import bisect, collections, os, re, struct, subprocess, sys

pid, binary = sys.argv[1], sys.argv[2]
real = os.path.realpath(binary)
PAGE = 4096
maps = []
for line in open(f"/proc/{pid}/maps"):
    p = line.split()
    if len(p) >= 6 and os.path.realpath(p[5]) == real:
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        maps.append((lo, hi, int(p[2], 16), p[1]))
bias = next(lo for lo, hi, off, perm in maps if off == 0)
pm = open(f"/proc/{pid}/pagemap", "rb")
resident = []  # (relative vaddr, is_file_page)
for lo, hi, off, perm in maps:
    pm.seek(lo // PAGE * 8)
    data = pm.read((hi - lo) // PAGE * 8)
    for i in range(0, len(data), 8):
        (e,) = struct.unpack_from("<Q", data, i)
        if e >> 63 & 1:
            resident.append((lo + i // 8 * PAGE - bias, bool(e >> 61 & 1)))
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        f.writelines(f"{va:x} {int(isf)}\n" for va, isf in resident)

secs = []
for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if m and int(m.group(3), 16) and m.group(2) != "NOBITS":
        secs.append((int(m.group(3), 16), int(m.group(5), 16), m.group(1)))
secs.sort()
sec_starts = [s[0] for s in secs]


def overlaps(va):
    """(section name, bytes of this page inside it) for every section the page overlaps."""
    i = max(0, bisect.bisect_right(sec_starts, va) - 1)
    out = []
    for a, size, name in secs[max(0, i - 3):i + 40]:
        lo, hi = max(a, va), min(a + size, va + PAGE)
        if hi > lo:
            out.append((name, hi - lo))
    return out or [("(between sections)", PAGE)]


def module(name):
    m = re.match(r"_?\$s(\d+)([A-Za-z_]\w*)", name)
    if m:
        n = int(m.group(1))
        return m.group(2)[:n]
    if re.match(r"_?\$s[sS]", name):
        return "Swift (stdlib)"
    if "icu_76" in name or re.search(r"_76$", name) or name.startswith("icudt"):
        return "ICU"
    if name.startswith("_ZN5swift") or name.startswith("swift_") or name.startswith("_swift"):
        return "Swift runtime (C++)"
    if "dispatch" in name:
        return "libdispatch"
    if "CCryptoBoringSSL" in name or "boringssl" in name.lower():
        return "BoringSSL (swift-crypto)"
    if name.startswith("_Z"):
        return "C++ other"
    if name.startswith("_CF") or name.startswith("CF") or name.startswith("__CF"):
        return "CoreFoundation"
    if "nio" in name.lower():
        return "NIO (C)"
    return "C other"


syms = []
for line in subprocess.run(["nm", "-n", "-S", "--defined-only", binary], capture_output=True, text=True).stdout.splitlines():
    p = line.split(None, 3)
    if len(p) == 4 and int(p[1], 16) > 0:
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
syms.sort()
addrs = [s[0] for s in syms]
big = [s for s in syms if s[1] > (1 << 20)]
syms = [s for s in syms if s[1] <= (1 << 20)]
addrs = [s[0] for s in syms]
maxsize = max(s[1] for s in syms)


def page_symbols(va):
    """(symbol, bytes of overlap) for symbols overlapping the page."""
    i = bisect.bisect_left(addrs, va + PAGE)
    out = []
    j = i - 1
    while j >= 0 and addrs[j] > va - maxsize:
        a, size, name = syms[j]
        lo, hi = max(a, va), min(a + size, va + PAGE)
        if hi > lo:
            out.append((name, hi - lo))
        j -= 1
        if len(out) > 400:
            break
    for a, size, name in big:
        lo, hi = max(a, va), min(a + size, va + PAGE)
        if hi > lo:
            out.append((name, hi - lo))
    return out


by_sec = collections.Counter()
file_by_sec = collections.Counter()
by_mod = collections.defaultdict(collections.Counter)
by_sym = collections.defaultdict(collections.Counter)
for va, isfile in resident:
    for name, nbytes in overlaps(va):
        by_sec[name] += nbytes
        if isfile:
            file_by_sec[name] += nbytes
    for secname, _ in overlaps(va):
        if secname in (".text", ".rodata", ".data.rel.ro", ".data"):
            sym = page_symbols(va)
            covered = sum(b for _, b in sym)
            for name, b in sym:
                by_mod[secname][module(name)] += b
                by_sym[secname][name] += b
            if covered < PAGE:
                by_mod[secname]["(no symbol)"] += PAGE - covered
            break
sizes = {n: s for a, s, n in secs}
total = len(resident) * 4
print(f"mapping of {os.path.basename(binary)}: {total} KiB resident ({sum(1 for r in resident if r[1]) * 4} KiB clean file pages, {sum(1 for r in resident if not r[1]) * 4} KiB private copies)")
print(f"{'KiB':>8} {'file KiB':>8} {'of KiB':>8}  section")
for name, b in by_sec.most_common(30):
    print(f"{b / 1024:8.0f} {file_by_sec[name] / 1024:8.0f} {sizes.get(name, 0) / 1024:8.0f}  {name}")
for sec in (".text", ".rodata", ".data.rel.ro"):
    print(f"--- {sec} by origin (page bytes split among the symbols on it)")
    for name, b in by_mod[sec].most_common(30):
        print(f"{b / 1024:8.0f} KiB  {name}")
print("--- .rodata biggest resident symbols")
for name, b in by_sym[".rodata"].most_common(15):
    print(f"{b / 1024:8.0f} KiB  {name[:110]}")

# ICU common data: which items of icudt76_dat are resident.
icu = next(((a, s) for a, s, n in big if n.startswith("icudt") and n.endswith("_dat")), None)
if icu:
    a, s = icu
    with open(binary, "rb") as f:
        # file offset of the symbol: find section containing it
        for sa, ss, sn in secs:
            if sa <= a < sa + ss:
                break
        out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout
        m = re.search(r"\]\s+" + re.escape(sn) + r"\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
        off = int(m.group(2), 16) + (a - int(m.group(1), 16))
        f.seek(off)
        blob = f.read(s)
    header_size = struct.unpack_from("<H", blob, 0)[0]
    toc = header_size
    count = struct.unpack_from("<I", blob, toc)[0]
    entries = []
    for k in range(count):
        name_off, data_off = struct.unpack_from("<II", blob, toc + 4 + 8 * k)
        name = blob[toc + name_off: blob.index(b"\0", toc + name_off)].decode()
        entries.append((toc + data_off, name))
    entries.sort()
    res_pages = set(va for va, _ in resident if a <= va < a + s or a <= va + PAGE - 1 < a + s)
    per_item = collections.Counter()
    for idx, (start, name) in enumerate(entries):
        end = entries[idx + 1][0] if idx + 1 < len(entries) else s
        for pg in range((a + start) // PAGE * PAGE, a + end, PAGE):
            if pg in res_pages:
                lo, hi = max(pg, a + start), min(pg + PAGE, a + end)
                per_item[name] += hi - lo
    print(f"--- ICU data {s / 1024:.0f} KiB, resident {sum(per_item.values()) / 1024:.0f} KiB, by item (top 25 of {len(per_item)})")
    for name, b in per_item.most_common(25):
        print(f"{b / 1024:8.0f} KiB  {name}")
