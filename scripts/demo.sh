#!/usr/bin/env bash
# The newcomer's first command. The full gateway demo (simulated boards, mwgated, a
# recorded walking session synced to a sink) arrives with the daemon; until then this
# shows the GNSS pipeline on a real receiver capture.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)
log=${DEMO_NMEA:-../shared/testdata/nmea/quectel-l76k-nmea.log}
echo "== decoding a real receiver capture: $log"
"$bin/mwctl" gnss decode "$log" | head -n 20
echo "..."
echo "== fixes: $("$bin/mwctl" gnss decode "$log" --json | wc -l)"
