#!/usr/bin/env python3
"""Extracts the ELF vmlinux from a compressed bzImage (qemu boots it through its PVH entry,
several times faster under TCG than the bzImage through SeaBIOS). Tries every compressed stream
the kernel may use and keeps the first that decompresses to an ELF file."""
import gzip, lzma, sys, zlib

def candidates(data):
    magics = [(b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b\x08", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"),
              (b"\x5d\x00\x00", "lzma")]
    for magic, kind in magics:
        start = data.find(magic)
        while start != -1:
            yield kind, start
            start = data.find(magic, start + 1)

def decompress(kind, blob):
    if kind == "xz":
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(blob)
    if kind == "lzma":
        return lzma.LZMADecompressor(format=lzma.FORMAT_ALONE).decompress(blob)
    if kind == "gzip":
        return zlib.decompressobj(31).decompress(blob)
    if kind == "zstd":
        import subprocess
        return subprocess.run(["zstd", "-dc"], input=blob, capture_output=True).stdout
    return b""

def main():
    source, target = sys.argv[1], sys.argv[2]
    data = open(source, "rb").read()
    for kind, start in candidates(data):
        try:
            out = decompress(kind, data[start:])
        except Exception:
            continue
        if out[:4] == b"\x7fELF":
            open(target, "wb").write(out)
            print(f"vm cache: vmlinux ({kind} at {start}, {len(out) // 1048576} MiB)", file=sys.stderr)
            return
    sys.exit(f"vm cache: no ELF kernel found in {source}")

main()
