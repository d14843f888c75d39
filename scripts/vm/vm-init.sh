#!/bin/sh
# PID 1 of the real-BlueZ VM once the root disk is mounted (started by the initramfs from the
# scenario share): mounts the shares, starts a system dbus-daemon with the packaged mwgate
# policy, btvirt's LE controllers and Debian's bluetoothd, runs the scenario and powers off.
# Everything the host should see goes to /results.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t debugfs debugfs /sys/kernel/debug   # btvirt configures its controllers there
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
share() { mkdir -p "$2" && mount -t 9p -o "trans=virtio,version=9p2000.L,msize=524288,$3" "$1" "$2"; }
share results /results rw
share binaries /mwgate ro
. /scenario/vm.env     # SWIFT_RUNTIME (the host toolchain's library folder), CONTROLLERS
share swiftlib "$SWIFT_RUNTIME" ro
exec >/results/console.log 2>&1
echo "vm: up at $(cut -d' ' -f1 /proc/uptime) s"
hostname mwgate-vm
ip link set lo up 2>/dev/null || true

# The gateway's account as systemd/mwgate.sysusers makes it (member of bluetooth and dialout).
sed -i -e 's/^\(bluetooth:x:[0-9]*:\)$/\1mwgate/' -e 's/^\(dialout:x:[0-9]*:\)$/\1mwgate/' /etc/group
mkdir -p /var/lib/mwgate /etc/mwgate && chown mwgate:mwgate /var/lib/mwgate && chmod 750 /var/lib/mwgate
mkdir -p /usr/share/dbus-1/system.d && cp /scenario/io.mwgate.Gateway1.conf /usr/share/dbus-1/system.d/
mkdir -p /run/dbus
dbus-daemon --system --fork --nopidfile || { echo "vm: dbus-daemon did not start"; echo o >/proc/sysrq-trigger; }

. /scenario/environment   # BLUETOOTHD_FLAGS, BTMON (MWGATE_VM_BLUETOOTHD_FLAGS, MWGATE_VM_BTMON on the host)
# An HCI trace of every controller (btmon -w: reading it back with 5.66's btmon -r inside the VM
# can crash, real-bluez-vm.md; read it on a host with btmon -r).
if [ -n "$BTMON" ]; then
    btmon -w /results/hci.btsnoop >/dev/null 2>&1 &
    sleep 0.5
fi

# hci_vhci creates a controller by itself when its opener sends nothing for 1 s; on a loaded
# TCG guest that can beat btvirt's own request, which btvirt then reports as "Failed to open
# Virtual HCI device" and exits. Try again until all controllers are there.
for attempt in 1 2 3 4 5 6 7 8; do
    btvirt -L -l"$CONTROLLERS" >>/results/btvirt.log 2>&1 &
    btvirt_pid=$!
    for _ in $(seq 50); do
        [ -e "/sys/class/bluetooth/hci$((CONTROLLERS - 1))" ] && break
        kill -0 "$btvirt_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$btvirt_pid" 2>/dev/null && [ -e "/sys/class/bluetooth/hci$((CONTROLLERS - 1))" ] && break
    echo "vm: btvirt attempt $attempt failed"
    kill "$btvirt_pid" 2>/dev/null; wait "$btvirt_pid" 2>/dev/null
    sleep 1
done
# One ATT bearer a link, as with a real MetaWear board (its firmware has no Enhanced ATT). With
# bluetoothd on both ends of every link, 5.66 otherwise opens EATT channels and sends multiple-
# handle notifications; a gateway write queued on them once went unanswered for 10 s after a
# reconnect, which no real board would cause.
sed -i 's/^#Channels = 3$/Channels = 1/' /etc/bluetooth/main.conf
grep -q '^Channels = 1$' /etc/bluetooth/main.conf || echo "vm: could not turn Enhanced ATT off in main.conf"
# MWGATE_VM_MAIN_CONF on the host: further main.conf settings, "Key=Value" each, separated by
# commas or blanks (every key of 5.66's main.conf is spelled once, commented out with its default).
for setting in $(echo "$MAIN_CONF" | tr ',' ' '); do
    key=${setting%%=*}
    value=${setting#*=}
    sed -i "s/^#\{0,1\}$key *=.*/$key = $value/" /etc/bluetooth/main.conf
    grep -q "^$key = $value\$" /etc/bluetooth/main.conf && echo "vm: main.conf $key = $value" \
        || echo "vm: could not set $key in main.conf"
done
# Its log goes to the VM's memory (copied to /results at the end): bluetoothd writes it
# synchronously from its one event loop, and on the 9p share each line waited on the host;
# when a central read its notify socket too slowly, bluetoothd logged every notification it
# could not hand on ("notify_io_cb() sendmsg: Resource temporarily unavailable", 7,551 lines in
# 90 s) and spent its time waiting on 9p instead of serving the links (docs/bluez-vm.md).
mkdir -p /run/mwgate-vm
# A bluetoothd that crashes leaves its core in the VM's memory (copied to /results at the end):
# 5.66 dies in some link teardowns (docs/bluez-vm.md), and its log, even with -d, stops short of
# the fault. Read a core on the host with gdb and Debian's bluez-dbgsym (docs/bluez-vm.md).
ulimit -c unlimited
echo '/run/mwgate-vm/core.%e.%p' >/proc/sys/kernel/core_pattern
# MWGATE_VM_NO_DB_HASH=1 on the host: bluetoothd serves no Database Hash (no_af_alg.c).
[ -n "$BLUETOOTHD_PRELOAD" ] && echo "vm: bluetoothd without AF_ALG ($BLUETOOTHD_PRELOAD): no Database Hash"
LD_PRELOAD=$BLUETOOTHD_PRELOAD /usr/libexec/bluetooth/bluetoothd -n $BLUETOOTHD_FLAGS >/run/mwgate-vm/bluetoothd.log 2>&1 &
echo $! >/run/bluetoothd.pid
echo "vm: stack up at $(cut -d' ' -f1 /proc/uptime) s ($(ls /sys/class/bluetooth | tr '\n' ' '))"

sh /scenario/scenario.sh
echo "vm: scenario exit $? at $(cut -d' ' -f1 /proc/uptime) s"
cp /run/mwgate-vm/bluetoothd.log /results/bluetoothd.log
cp /run/mwgate-vm/core.* /results/ 2>/dev/null
dmesg >/results/dmesg.log 2>/dev/null
sync
umount /results 2>/dev/null
echo o >/proc/sysrq-trigger
sleep 10
