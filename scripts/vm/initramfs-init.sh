#!/bin/sh
# PID 1 of the VM's initramfs: load the modules the VM needs (the kernel's own, copied by
# build-cache.sh), mount the root disk and the scenario share, and hand over to the scenario's
# init script, which lives on the share so that changing it needs no cache rebuild.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r module; do
    modprobe "$module" 2>/dev/null || echo "initramfs: module $module did not load"
done </lib/modules/$(uname -r)/load-order
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
mount -t ext4 /dev/vda /newroot || { echo "initramfs: cannot mount /dev/vda"; exec sh; }
mount -t 9p -o trans=virtio,version=9p2000.L,ro scenario /newroot/scenario \
    || { echo "initramfs: no scenario share"; exec sh; }
# The root disk has no modules of its own: give it ours, so the kernel's module autoloading
# (modprobe from the root file system's kmod) finds them.
mkdir -p /newroot/lib/modules && cp -a /lib/modules/$(uname -r) /newroot/lib/modules/
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh /scenario/vm-init.sh
