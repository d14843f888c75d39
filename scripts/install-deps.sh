#!/usr/bin/env bash
# Installs the Debian packages that mwgate's build, tests and benchmarks need.
# Idempotent: packages already installed are left alone, and apt is not touched at all
# when nothing is missing.
set -euo pipefail

packages=(
    # build
    pkg-config libdbus-1-dev libbluetooth-dev libsqlite3-dev sqlite3
    # a real D-Bus daemon and independent D-Bus peers for the tests
    dbus-daemon dbus-bin libglib2.0-bin systemd python3-dbus python3-dbusmock python3-gi
    # control API tests: useradd/runuser for the D-Bus policy test, script(1) for a pty
    passwd util-linux bsdutils
    # GNSS: real gpsd and gpsfake for the source tests
    gpsd gpsd-clients
    # packaging tests: systemd-analyze/sysusers/tmpfiles, udevadm (setpriv/unshare: util-linux)
    systemd udev
    # benchmarks: the python peers we compare against
    python3-pip python3-venv
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "deps: all ${#packages[@]} Debian packages present"
    exit 0
fi

echo "deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# gpsd's package enables a system service; the tests start their own gpsd on loopback.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    "${sudo_cmd[@]}" systemctl disable --now gpsd.socket gpsd.service >/dev/null 2>&1 || true
fi
