#!/usr/bin/env bash
# The real-BlueZ VM's kernel half (called by build-cache.sh): Debian's linux-image package,
# unpacked (never installed), its ELF vmlinux for qemu's PVH entry, and an initramfs with a
# static busybox and the modules the VM needs, decompressed so busybox's modprobe loads them.
# Usage: build-kernel.sh WORK_DIR  (leaves vmlinux, initramfs.cpio.gz, kernel-version there)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1
# Modules the VM loads (with whatever they depend on, from the kernel's modules.dep). btvirt's
# controllers need AES and CMAC through AF_ALG sockets (bluez's shared/crypto.c).
modules=(virtio_pci virtio_blk virtio_console 9p 9pnet_virtio ext4 crc32c_generic
         af_alg algif_skcipher algif_hash ecb cmac aes_generic aesni_intel sha256_generic
         bluetooth hci_vhci ecdh_generic ecc ccm ctr)
kernel_package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kernel_package" ]; then echo "vm cache: cannot resolve linux-image-amd64's kernel package" >&2; exit 1; fi
(cd "$work" && apt-get download -q "$kernel_package" busybox-static 2>&1 | grep -v "unsandboxed" >&2 || true)
mkdir -p "$work/kernel" "$work/busybox"
dpkg-deb -x "$work"/linux-image-*.deb "$work/kernel"
dpkg-deb -x "$work"/busybox-static_*.deb "$work/busybox"
kver=$(ls "$work/kernel/lib/modules")
python3 "$here/extract-vmlinux.py" "$work/kernel/boot/vmlinuz-$kver" "$work/vmlinux"

# --- initramfs: static busybox, the modules (decompressed, so busybox's modprobe loads them) ---
initrd="$work/initramfs"
mkdir -p "$initrd"/{bin,dev,proc,sys,newroot,lib/modules/"$kver"}
cp "$work/busybox/bin/busybox" "$initrd/bin/busybox"
for applet in sh mount umount modprobe insmod switch_root mkdir sleep cat echo ls cp; do
    ln -sf busybox "$initrd/bin/$applet"
done
cp "$here/initramfs-init.sh" "$initrd/init"
chmod 755 "$initrd/init"
kmods="$work/kernel/lib/modules/$kver"
depmod -b "$work/kernel" "$kver"   # the package ships no modules.dep; installing it would run this
python3 - "$kmods" "$initrd/lib/modules/$kver" "${modules[@]}" <<'PY'
import lzma, os, shutil, sys
src, dst, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
deps = {}
for line in open(os.path.join(src, "modules.dep")):
    path, _, rest = line.partition(":")
    deps[path] = rest.split()
byname = {os.path.basename(p).split(".ko")[0].replace("-", "_"): p for p in deps}
builtin = {os.path.basename(l.strip()).split(".ko")[0].replace("-", "_")
           for l in open(os.path.join(src, "modules.builtin"))}
chosen, stack = set(), []
for name in wanted:
    if name in byname: stack.append(byname[name])
    elif name not in builtin: print(f"vm cache: module {name} neither built in nor a module", file=sys.stderr)
while stack:
    p = stack.pop()
    if p in chosen: continue
    chosen.add(p); stack.extend(deps[p])
with open(os.path.join(dst, "load-order"), "w") as order:
    for name in wanted:
        if name in byname: order.write(name + "\n")
for p in chosen:
    out = os.path.join(dst, p.removesuffix(".xz"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    opener = lzma.open if p.endswith(".xz") else open
    with opener(os.path.join(src, p), "rb") as f, open(out, "wb") as g: shutil.copyfileobj(f, g)
for extra in ("modules.builtin", "modules.order", "modules.builtin.modinfo"):
    if os.path.exists(os.path.join(src, extra)): shutil.copy(os.path.join(src, extra), dst)
print(f"vm cache: {len(chosen)} modules", file=sys.stderr)
PY
depmod -b "$initrd" "$kver"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.cpio.gz"

echo "$kver" >"$work/kernel-version"
