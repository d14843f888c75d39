#!/usr/bin/env bash
# Boots the real-BlueZ VM once (docs/bluez-vm.md): Debian's kernel and bluetoothd from the
# cache (scripts/vm/build-cache.sh), under TCG with no network, on a clean copy of the disk
# (snapshot=on), with the host's mwgated/mwctl/mwsim and Swift runtime shared read-only.
#
# Usage: scripts/vm/run-vm.sh SCENARIO_DIR RESULTS_DIR
#   SCENARIO_DIR holds scenario.sh (run as root inside the VM after the stack is up) and
#   anything it needs; it is shared read-only as /scenario. RESULTS_DIR is /results.
# Environment: MWGATE_BIN (default: the debug build), MWGATE_VM_CPUS (2), MWGATE_VM_MEMORY
#   (1536 MiB), MWGATE_VM_CONTROLLERS (btvirt controllers, 4), MWGATE_VM_TIMEOUT (seconds, 600).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scenario=$(cd "$1" && pwd)
results=$(mkdir -p "$2" && cd "$2" && pwd)
cache=$("$here/build-cache.sh" | tail -1)
bin=${MWGATE_BIN:-$(cd "$repo" && swift build --show-bin-path)}
for tool in mwgated mwctl mwsim; do
    [ -x "$bin/$tool" ] || { echo "run-vm: $bin/$tool missing (swift build first)" >&2; exit 1; }
done
# The binaries find the Swift runtime through their RUNPATH; share that folder at the same path.
# A binary linked with the static Swift runtime (scripts/build-static.sh) names only $ORIGIN:
# the folder comes from the first of the three that names one.
runtime=
for tool in mwgated mwsim mwctl; do
    named=$(readelf -d "$bin/$tool" | sed -n 's/.*R\(UN\)\?PATH.*\[\([^:]*\).*/\2/p' | head -1)
    if [ -n "$named" ] && [ -d "$named" ]; then runtime=$named; break; fi
done
if [ -z "$runtime" ]; then
    echo "run-vm: cannot find the Swift runtime folder from the RUNPATH of mwgated, mwsim or mwctl" >&2; exit 1
fi
cp "$here/vm-init.sh" "$scenario/vm-init.sh"
cp "$repo/dbus/io.mwgate.Gateway1.conf" "$scenario/"
printf "SWIFT_RUNTIME=%s\nCONTROLLERS=%s\n" "$runtime" "${MWGATE_VM_CONTROLLERS:-4}" >"$scenario/vm.env"
rm -f "$results/console.log"

virtfs() { echo "local,path=$1,mount_tag=$2,security_model=none${3:+,$3}"; }
started=$(date +%s)
# no_timer_check: on a loaded host a TCG guest can fail the kernel's IO-APIC timer check and
# panic at boot ("IO-APIC + timer doesn't work", seen once at host load 16).
timeout --foreground -k 10 "${MWGATE_VM_TIMEOUT:-600}" \
qemu-system-x86_64 -accel tcg -cpu max -smp "${MWGATE_VM_CPUS:-2}" -m "${MWGATE_VM_MEMORY:-1536}" \
    -nic none -nographic -no-reboot -monitor none -serial file:"$results/serial.log" \
    -kernel "$cache/vmlinux" -initrd "$cache/initramfs.cpio.gz" \
    -append "console=ttyS0 quiet panic=-1 rdinit=/init no_timer_check" \
    -drive file="$cache/rootfs.ext4",format=raw,if=virtio,snapshot=on \
    -virtfs "$(virtfs "$scenario" scenario readonly=on)" \
    -virtfs "$(virtfs "$bin" binaries readonly=on)" \
    -virtfs "$(virtfs "$runtime" swiftlib readonly=on)" \
    -virtfs "$(virtfs "$results" results)" \
    </dev/null || { status=$?; echo "run-vm: qemu ended with status $status after $(( $(date +%s) - started )) s" >&2; }
echo "run-vm: VM ran $(( $(date +%s) - started )) s" >&2
[ -f "$results/console.log" ] || { echo "run-vm: the VM wrote no console log; its serial output:" >&2; tail -30 "$results/serial.log" >&2; exit 1; }
