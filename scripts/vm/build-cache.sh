#!/usr/bin/env bash
# Builds the real-BlueZ VM's cache (docs/bluez-vm.md): a Debian bookworm root file system with
# dbus, bluez (bluetoothd 5.66), btvirt and python3-dbus, Debian's own kernel as an ELF vmlinux
# (qemu's PVH entry boots it in seconds under TCG), and a small initramfs that loads the few
# modules the VM needs and hands over to the root file system. Nothing is mounted: the image is
# made with `mkfs.ext4 -d`. Rebuilt only when missing or when this recipe changes (the hash of
# this script and of the files it copies is stored beside the result).
#
# Usage: scripts/vm/build-cache.sh            prints the cache directory on its last line
# (the kernel half is scripts/vm/build-kernel.sh)
# Environment: MWGATE_VM_CACHE (default $XDG_CACHE_HOME/mwgate-vm, else ~/.cache/mwgate-vm),
#              DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root (debootstrap) and: debootstrap, e2fsprogs, cpio, python3, pip (installed by
# scripts/install-deps.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${MWGATE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mwgate-vm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# Root file system contents. python3-dbus: the scenario driver inside the VM; bleak (PyPI) is
# the independent central the benchmark compares against.
root_packages=dbus,bluez,bluez-test-tools,python3,python3-dbus,libdbus-1-3,libsqlite3-0,libsystemd0,libstdc++6,zlib1g,procps,util-linux,kmod
bleak_version=0.22.3

# Two halves, each rebuilt only when its own recipe changes: the kernel and initramfs (a
# minute) and the root file system (debootstrap, several minutes).
kernel_recipe=$(cat "$here/build-kernel.sh" "$here/initramfs-init.sh" "$here/extract-vmlinux.py" | sha256sum | cut -c1-16)
rootfs_recipe=$(sha256sum <"$here/build-cache.sh" | cut -c1-16)
fresh() { [ -f "$cache/$1.recipe" ] && [ "$(cat "$cache/$1.recipe")" = "$2" ]; }

start=$(date +%s)
mkdir -p "$cache"
work="$cache/build"
if ! fresh kernel "$kernel_recipe" || [ ! -f "$cache/vmlinux" ] || [ ! -f "$cache/initramfs.cpio.gz" ]; then
    rm -rf "$work" "$cache/kernel.recipe"
    mkdir -p "$work"
    "$here/build-kernel.sh" "$work"
    mv "$work/vmlinux" "$work/initramfs.cpio.gz" "$work/kernel-version" "$cache/"
    rm -rf "$work"
    echo "$kernel_recipe" >"$cache/kernel.recipe"
    echo "vm cache: kernel $(cat "$cache/kernel-version") ready after $(( $(date +%s) - start )) s" >&2
fi
if fresh rootfs "$rootfs_recipe" && [ -f "$cache/rootfs.ext4" ]; then
    echo "vm cache: up to date (kernel $kernel_recipe, root file system $rootfs_recipe)" >&2
    echo "$cache"
    exit 0
fi
rm -rf "$work" "$cache/rootfs.recipe"
mkdir -p "$work"

# --- root file system ---
rootfs="$work/rootfs"
debootstrap --variant=minbase --include="$root_packages" bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
# The gateway's user, as systemd/mwgate.sysusers makes it on a real gateway.
grep -q '^mwgate:' "$rootfs/etc/passwd" || {
    echo 'mwgate:x:990:990:MetaWear gateway:/var/lib/mwgate:/usr/sbin/nologin' >>"$rootfs/etc/passwd"
    echo 'mwgate:x:990:' >>"$rootfs/etc/group"
    echo 'mwgate:!*:19000::::::' >>"$rootfs/etc/shadow"
}
mkdir -p "$rootfs"/{mwgate,results,scenario,opt/swift/usr/lib/swift/linux,var/lib/mwgate,etc/mwgate}
python3 -m pip install -q --no-cache-dir --target "$rootfs/opt/bleak" --python-version 3.11 \
    --implementation cp --only-binary=:all: --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    "bleak==$bleak_version"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
size_mb=$(( $(du -sm "$rootfs" | cut -f1) + 256 ))
rm -f "$work/rootfs.ext4"
mkfs.ext4 -q -F -L mwgate-vm -d "$rootfs" "$work/rootfs.ext4" "${size_mb}M"

mv "$work/rootfs.ext4" "$cache/"
rm -rf "$work"
echo "$rootfs_recipe" >"$cache/rootfs.recipe"
echo "vm cache: built in $(( $(date +%s) - start )) s (root file system ${size_mb} MB)" >&2
echo "$cache"
