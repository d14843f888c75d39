#!/usr/bin/env bash
# Builds mwgate_<version>_<arch>.deb: release binaries linked with the Swift runtime statically
# (--static-swift-stdlib: the Pi needs no Swift toolchain), the systemd unit, sysusers and
# tmpfiles snippets, the D-Bus policy, the udev rule, the default configuration (a conffile)
# and the docs. postinst creates the user and directories with systemd-sysusers/tmpfiles when
# they exist and reloads systemd/udev/D-Bus; it does not enable or start the service.
#
#   scripts/package-deb.sh [OUT_DIR]        (make deb; OUT_DIR defaults to dist/)
#   MWGATE_DEB_SKIP_BUILD=1 ...             package the release binaries already built
#   MWGATE_DEB_COMPRESSION=none ...         dpkg-deb -Z (default xz)
#   MWGATE_MAINTAINER="Name <address>" ...  the Maintainer field (set a real address before
#                                           publishing; the default is a placeholder)
#   MWGATE_DEB_BIN_DIR=DIR ...              package the binaries in DIR instead (the packaging
#                                           test uses the debug build; never ship that)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
# A tag v1.2.3 gives 1.2.3 (1.2.3+5.gabcdef after it); no tag gives 0.0~git<hash>.
if [ -n "${MWGATE_VERSION:-}" ]; then
    version=$MWGATE_VERSION
elif tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
    version=$(echo "${tag#v}" | sed -E 's/-([0-9]+)-g/+\1.g/')
else
    version="0.0~git$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi

if [ -n "${MWGATE_DEB_BIN_DIR:-}" ]; then
    bin=$MWGATE_DEB_BIN_DIR
else
    if [ "${MWGATE_DEB_SKIP_BUILD:-0}" != 1 ]; then
        scripts/build-static.sh mwgated mwctl
    fi
    bin=$(scripts/build-static.sh --bin-path)
fi

# The package's architecture is the binaries' (a cross-built tree may differ from this
# machine's dpkg architecture): ELF machine -> Debian architecture name.
machine=$(LC_ALL=C readelf -h "$bin/mwgated" | sed -n 's/^ *Machine: *//p')
case "$machine" in
    *X86-64*) arch=amd64 ;;
    *AArch64*) arch=arm64 ;;
    *) echo "package-deb.sh: $bin/mwgated is for '$machine', which this script does not map to a Debian architecture" >&2; exit 1 ;;
esac
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    # Depends is read from this machine's libraries below: wrong for another architecture.
    echo "package-deb.sh: the binaries are $arch but this machine is $(dpkg --print-architecture); build the package on an $arch machine (Depends comes from its libraries)" >&2
    exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
install -d "$root/DEBIAN"
install -D -m 0755 "$bin/mwgated" "$root/usr/bin/mwgated"
install -D -m 0755 "$bin/mwctl" "$root/usr/bin/mwctl"
strip --strip-unneeded "$root/usr/bin/mwgated" "$root/usr/bin/mwctl" 2>/dev/null || true
install -D -m 0644 systemd/mwgated.service "$root/usr/lib/systemd/system/mwgated.service"
install -D -m 0644 systemd/mwgate.sysusers "$root/usr/lib/sysusers.d/mwgate.conf"
install -D -m 0644 systemd/mwgate.tmpfiles "$root/usr/lib/tmpfiles.d/mwgate.conf"
install -D -m 0644 dbus/io.mwgate.Gateway1.conf "$root/usr/share/dbus-1/system.d/io.mwgate.Gateway1.conf"
install -D -m 0644 udev/61-mwgate-gps.rules "$root/usr/lib/udev/rules.d/61-mwgate-gps.rules"
install -D -m 0644 packaging/mwgated.toml "$root/etc/mwgate/mwgated.toml"
# mwctl's completions and both man pages, generated from the programs' own parsers (as
# `make cli-docs`). bash-completion sources its files: no #! line.
install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/man/man1" "$root/usr/share/man/man8"
"$bin/mwctl" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/mwctl"
"$bin/mwctl" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_mwctl"
"$bin/mwctl" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/mwctl.fish"
/usr/bin/python3 scripts/gen-man.py "$bin/mwctl" | gzip -9n >"$root/usr/share/man/man1/mwctl.1.gz"
/usr/bin/python3 scripts/gen-man.py "$bin/mwgated" | gzip -9n >"$root/usr/share/man/man8/mwgated.8.gz"
chmod 0644 "$root"/usr/share/bash-completion/completions/mwctl "$root"/usr/share/zsh/vendor-completions/_mwctl \
    "$root"/usr/share/fish/vendor_completions.d/mwctl.fish "$root"/usr/share/man/man1/mwctl.1.gz \
    "$root"/usr/share/man/man8/mwgated.8.gz
# Machine-readable (DEP-5): mwgate's licence and those of the components linked into the
# binaries statically.
install -D -m 0644 packaging/copyright "$root/usr/share/doc/mwgate/copyright"
install -D -m 0644 packaging/mwgate.lintian-overrides "$root/usr/share/lintian/overrides/mwgate"
for doc in operations.md configuration.md; do
    install -D -m 0644 "docs/$doc" "$root/usr/share/doc/mwgate/$doc"
done
# Debian policy 12.7: every package carries its changelog (a native one, as the version has
# no Debian revision). One entry per build, naming the commit it was built from; dated by
# that commit so that rebuilding the same commit gives the same file.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
commit_date=$(git log -1 --format=%cD 2>/dev/null || date -R)
{
    echo "mwgate ($version) unstable; urgency=medium"
    echo
    echo "  * Built from commit $commit; see the project's history for the changes."
    echo
    echo " -- ${MWGATE_MAINTAINER:-mwgate developers <mwgate@localhost>}  $commit_date"
} | gzip -9n >"$root/usr/share/doc/mwgate/changelog.gz"
chmod 0644 "$root/usr/share/doc/mwgate/changelog.gz"

# Shared libraries the binaries link directly (ELF NEEDED), as Debian packages.
needed=$(for b in "$root/usr/bin/mwgated" "$root/usr/bin/mwctl"; do
    objdump -p "$b" | awk '/NEEDED/ { print $2 }'
done | sort -u)
depends=$(for name in $needed; do
    path=$(ldd "$root/usr/bin/mwgated" "$root/usr/bin/mwctl" | awk -v n="$name" '$1 == n && $3 ~ /^\// { print $3; exit }')
    [ -n "$path" ] || continue
    dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true
done | cut -d: -f1 | sort -u | while read -r pkg; do
    [ -n "$pkg" ] || continue
    v=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null | sed -E 's/-[^-]*$//')
    echo "$pkg (>= $v)"
done | paste -sd, | sed 's/,/, /g')

size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: mwgate
Version: $version
Architecture: $arch
Maintainer: ${MWGATE_MAINTAINER:-mwgate developers <mwgate@localhost>}
Installed-Size: $size
Depends: $depends
Recommends: bluez, dbus, systemd
Section: misc
Priority: optional
Homepage: https://github.com/mwgate/mwgate
Description: MetaWear sensor gateway (BLE boards + GNSS, recording, upstream sync)
 mwgated connects MbientLab MetaWear boards through BlueZ, merges their gyro and
 accelerometer samples with GNSS fixes, records walking sessions into a local
 SQLite buffer and uploads them. mwctl controls and inspects it.
EOF
echo /etc/mwgate/mwgated.toml >"$root/DEBIAN/conffiles"

# Maintainer scripts honour DPKG_ROOT (dpkg --root ... --force-script-chrootless): an
# installation into another root touches only that root, never this machine's services.
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    # The account first: tmpfiles hands /var/lib/mwgate to it. A failure here fails the
    # configuration (the service cannot run without its user).
    if command -v systemd-sysusers >/dev/null 2>&1; then
        systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} mwgate.conf
    fi
    if command -v systemd-tmpfiles >/dev/null 2>&1; then
        systemd-tmpfiles ${DPKG_ROOT:+--root="$DPKG_ROOT"} --create mwgate.conf || true
    fi
    if [ -z "$DPKG_ROOT" ]; then
        if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
        if command -v udevadm >/dev/null 2>&1 && [ -d /run/udev ]; then udevadm control --reload || true; fi
        if [ -d /run/dbus ] && command -v dbus-send >/dev/null 2>&1; then
            dbus-send --system --type=method_call --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null 2>&1 || true
        fi
    fi
    echo "mwgate: enable with 'systemctl enable --now mwgated' (configuration: /etc/mwgate/mwgated.toml)"
fi
exit 0
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
# Debian's own helpers (init-system-helpers) stop and disable the unit: they respect
# policy-rc.d and a package manager running without systemd.
if [ "$1" = remove ] && [ -z "$DPKG_ROOT" ] && command -v deb-systemd-invoke >/dev/null 2>&1; then
    deb-systemd-invoke stop mwgated.service >/dev/null 2>&1 || true
fi
exit 0
EOF
# remove keeps the buffer (recorded sessions, unsent documents) and the account; purge
# deletes the buffer too. The account stays (Debian does not reuse ids of removed users).
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -z "$DPKG_ROOT" ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper disable mwgated.service >/dev/null 2>&1 || true
fi
if [ "$1" = purge ]; then
    rm -rf "$DPKG_ROOT/var/lib/mwgate" "$DPKG_ROOT/run/mwgate"
    rmdir "$DPKG_ROOT/etc/mwgate" 2>/dev/null || true
fi
if [ -z "$DPKG_ROOT" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/mwgate_${version}_${arch}.deb"
# MWGATE_DEB_COMPRESSION=none: the tests package debug binaries, which xz takes minutes over.
dpkg-deb --root-owner-group ${MWGATE_DEB_COMPRESSION:+-Z"$MWGATE_DEB_COMPRESSION"} --build "$root" "$deb" >/dev/null
echo "$deb"
