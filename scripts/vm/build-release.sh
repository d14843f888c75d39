#!/usr/bin/env bash
# The binaries the real-BlueZ VM runs (make test's VM pass, make test-bluez): mwgated, mwctl and
# mwsim from a release build, as a gateway runs them. The debug mwgated is too slow under the
# VM's TCG for two boards at 100 Hz and for a stop within 2 s (docs/bluez-vm.md, "Which
# binaries"). Prints what it built and how long it took on stderr, and the folder holding the
# binaries as its only line on stdout.
# Usage: scripts/vm/build-release.sh [swift build flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
# One product at a time (swift build takes one --product); the second and third reuse what
# the first built (every dependency, most of our modules).
for product in mwgated mwctl mwsim; do
    swift build -c release --product "$product" "$@" >&2
done
echo "vm binaries: release build of mwgated, mwctl, mwsim took $((SECONDS - started)) s" >&2
swift build -c release --show-bin-path "$@"
