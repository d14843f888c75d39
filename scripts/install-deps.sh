#!/usr/bin/env bash
# Installs the Debian packages that mwgate's build, tests and benchmarks need.
# Idempotent: packages already installed are left alone, and apt is not touched at all
# when nothing is missing.
set -euo pipefail

packages=(
    # build
    pkg-config libdbus-1-dev libbluetooth-dev libsqlite3-dev sqlite3
    # libstdc++.a, linked into the packaged binaries (scripts/build-static.sh)
    libstdc++-12-dev
    # a real D-Bus daemon and independent D-Bus peers for the tests
    dbus-daemon dbus-bin libglib2.0-bin systemd python3-dbus python3-dbusmock python3-gi
    # control API tests: useradd/runuser for the D-Bus policy test, script(1) for a pty, tmux to
    # type real keys at mwctl survey
    passwd util-linux bsdutils tmux
    # GNSS: real gpsd and gpsfake for the source tests
    gpsd gpsd-clients
    # packaging tests: systemd-analyze/sysusers/tmpfiles, udevadm (setpriv/unshare: util-linux),
    # lintian (Debian's package checker)
    systemd udev lintian
    # Uplink: a real PostgreSQL server for the sink tests, Java for Google's Firestore emulator,
    # openssl as the independent JWT verifier
    postgresql-15 postgresql-client-15 openjdk-17-jre-headless openssl
    # session pictures: the export's HTML page is opened and screenshotted in headless Chromium
    chromium
    # benchmarks: the python peers we compare against; valgrind profiles mwgated for its link
    # order (make orderfile)
    python3-pip python3-venv python3-requests python3-psycopg2 valgrind
    # the real-BlueZ VM (make test-bluez, scripts/vm/): qemu under TCG, a Debian root file system
    # built without loop mounts, Debian's kernel unpacked and its modules indexed, the initramfs
    qemu-system-x86 debootstrap e2fsprogs kmod cpio xz-utils binutils
)

# Google's Firestore emulator is not in Debian: it comes from Google's Cloud SDK apt repository
# (package google-cloud-cli-firestore-emulator), which our CI images already carry. Install it
# only when that repository is configured; its absence is not an error (the emulator tests
# then say loudly that they skipped).
optional_packages=(google-cloud-cli-firestore-emulator)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

install_optional() {
    for p in "${optional_packages[@]}"; do
        if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then continue; fi
        if apt-cache show "$p" >/dev/null 2>&1; then
            "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$p" \
                || echo "deps: optional $p could not be installed (Firestore emulator tests will skip)"
        else
            echo "deps: optional $p not available from the configured apt sources (Firestore emulator tests will skip)"
        fi
    done
}

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

if ((${#missing[@]} == 0)); then
    echo "deps: all ${#packages[@]} Debian packages present"
    install_optional
    exit 0
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# gpsd's package enables a system service; the tests start their own gpsd on loopback.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    "${sudo_cmd[@]}" systemctl disable --now gpsd.socket gpsd.service >/dev/null 2>&1 || true
fi
install_optional
