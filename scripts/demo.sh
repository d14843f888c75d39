#!/usr/bin/env bash
# The newcomer's first command: a whole gateway on this machine, unprivileged, with nothing
# real attached. A private dbus-daemon stands in for the system bus, mwsim simulates BlueZ
# with two MetaWear boards on it, a real receiver capture is replayed in real time as the GNSS
# source, and mwgated records a short walking session into a temporary state directory with
# the directory sink. Every process started here is stopped on exit (also on Ctrl-C/errors).
#
#   scripts/demo.sh            (or: make demo)
#   DEMO_SECONDS=30 scripts/demo.sh     record longer
#   DEMO_KEEP=1 scripts/demo.sh         keep the temporary directory for a look afterwards
#   UPSTREAM=firestore scripts/demo.sh  upload to Google's Firestore emulator (started here on
#                                       a free loopback port) instead of the directory sink
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${DEMO_SECONDS:-15}
nmea=${DEMO_NMEA:-$root/../shared/testdata/nmea/quectel-l76k-nmea.log}

say() { printf '\n== %s\n' "$*"; }

say "dependencies and build"
scripts/install-deps.sh
swift build 2>&1 | tail -n 1
bin=$(swift build --show-bin-path)
if [ ! -r "$nmea" ]; then
    echo "demo: the NMEA capture $nmea is missing (set DEMO_NMEA=FILE)" >&2
    exit 1
fi
nmea=$(cd "$(dirname "$nmea")" && pwd)/$(basename "$nmea")
upstream=${UPSTREAM:-directory}
emulator=/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator
case $upstream in
directory) ;;
firestore)
    if [ ! -x "$emulator" ] || ! command -v java >/dev/null; then
        echo "demo: UPSTREAM=firestore needs Google's Firestore emulator ($emulator, Debian package" >&2
        echo "      google-cloud-cli-firestore-emulator from Google's Cloud SDK apt repository) and java" >&2
        echo "      (openjdk-17-jre-headless); without UPSTREAM the demo uses the directory sink" >&2
        exit 1
    fi ;;
*) echo "demo: UPSTREAM must be 'directory' (default) or 'firestore', not '$upstream'" >&2; exit 1 ;;
esac

work=$(mktemp -d /tmp/mwgate-demo.XXXXXX)
# The session's picture pages outlive the demo's work directory (removed on exit).
pictures=${DEMO_PICTURES:-/tmp/mwgate-demo-pictures}
pids=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # Stop in reverse start order: the daemon first (it seals and disconnects), the bus last.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${pids[i]}" 2>/dev/null || true
        wait "${pids[i]}" 2>/dev/null || true
    done
    # The emulator's launcher leads its own process group, java included.
    if [ -n "${emulator_pid:-}" ]; then
        kill -TERM -- "-$emulator_pid" 2>/dev/null || true
        wait "$emulator_pid" 2>/dev/null || true
    fi
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        echo "demo: kept $work"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

say "private D-Bus bus (stands in for the system bus)"
cat >"$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/><allow user="*"/>
  </policy>
</busconfig>
EOF
dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile --print-address=3 3>"$work/bus.address" 2>"$work/bus.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/bus.address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS
DBUS_SYSTEM_BUS_ADDRESS=$(head -n 1 "$work/bus.address")
echo "bus: $DBUS_SYSTEM_BUS_ADDRESS"

say "mwsim: BlueZ with two simulated MetaWear boards (MetaMotion R + S)"
"$bin/mwsim" --boards 2 --model mixed --quiet >"$work/mwsim.log" 2>&1 &
pids+=($!)

# The control API (io.mwgate.Gateway1 + `mwctl session ...`) drives a manual session when it
# is built in; without it the demo records in always-on mode and stops the daemon to end it.
if "$bin/mwctl" --help | grep -qE "^  session "; then control=dbus; mode=manual; else control=none; mode=always; fi

if [ "$upstream" = firestore ]; then
    say "Google's Firestore emulator (stands in for Cloud Firestore)"
    port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    setsid "$emulator" start --host=127.0.0.1 --port="$port" --project_id=demo-mwgate >"$work/emulator.log" 2>&1 &
    emulator_pid=$!
    firestore="http://127.0.0.1:$port/v1/projects/demo-mwgate/databases/(default)/documents"
    # Java takes a while; mwgated does not wait for it: its uploads retry until it answers.
    echo "emulator: 127.0.0.1:$port (log $work/emulator.log)"
    sink_settings=$(printf '[sink]\ntype = "firestore"\n\n[sink.firestore]\nproject_id = "demo-mwgate"\nemulator_host = "127.0.0.1:%s"' "$port")
else
    sink_settings=$(printf '[sink]\ntype = "directory"\n\n[sink.directory]\npath = "%s"' "$work/documents")
fi

mkdir -p "$work/state" "$work/run" "$work/etc"
: >"$work/mwgated.log"
cat >"$work/etc/mwgated.toml" <<EOF
[boards]
gyro_rate = 50

[gnss]
source = "file:$nmea?speed=realtime"

[session]
mode = "$mode"

$sink_settings
EOF

say "mwgated (config $work/etc/mwgated.toml, state $work/state)"
"$bin/mwgated" --check-config --config "$work/etc/mwgated.toml"
STATE_DIRECTORY=$work/state RUNTIME_DIRECTORY=$work/run CONFIGURATION_DIRECTORY=$work/etc \
    "$bin/mwgated" --config "$work/etc/mwgated.toml" 2>"$work/mwgated.log" &
daemon=$!
pids+=($daemon)
for _ in $(seq 300); do grep -q "ready in" "$work/mwgated.log" && break; sleep 0.1; done
grep "ready in" "$work/mwgated.log" || { echo "mwgated did not become ready:"; cat "$work/mwgated.log"; exit 1; }
for _ in $(seq 200); do [ "$(grep -c "connected: MetaMotion" "$work/mwgated.log")" -ge 2 ] && break; sleep 0.1; done

ctl() { "$bin/mwctl" "$@"; }

if [ "$control" = dbus ]; then
    say "recording a ${seconds} s session over D-Bus (mwctl session start / stop)"
    ctl session start
    sleep "$seconds"
    say "status (mwctl status, over D-Bus)"
    ctl status
    ctl session stop
    say "the walker's hazard survey (mwctl survey submit)"
    ctl survey submit --hazard pothole=3 --hazard kerb=1
    if [ "$upstream" = firestore ]; then
        say "upload to the Firestore emulator (mwctl sync; waits until the backlog is empty)"
        for _ in $(seq 600); do
            ctl sync | grep -qE "^backlog: 0 document" && break
            sleep 0.2
        done
    else
        say "upload to the directory sink (mwctl sync)"
        for _ in $(seq 100); do
            [ -n "$(find "$work/documents" -name '*.json' 2>/dev/null | head -n 1)" ] && break
            sleep 0.2
        done
        sleep 1
    fi
    ctl sync || true
    say "sessions (mwctl session list)"
    ctl session list
    session=$(sed -nE 's/.*session ([0-9A-F-]{36}) started.*/\1/p' "$work/mwgated.log" | head -n 1)
    say "history (mwctl history, over D-Bus)"
    # Point times come from the replayed capture (recorded 2026-08-05) when this machine's clock
    # is not NTP-synchronised, so look back a year.
    ctl history --days 365 --html "$pictures" | grep -vE "^[0-9-]+ +0 "
    if ctl status --json | grep -q '"timeSource" *: *"gnss_corrected"'; then
        echo "(dated by the replayed capture: this machine's clock is not synchronised, so point times follow the GNSS clock, which is the capture's; on a gateway in the field that is today)"
    fi
    say "the session, exported (mwctl export, over D-Bus)"
    ctl export "$session" --format geojson -o "$work/session.geojson"
    ctl export "$session" --format csv -o "$work/session.csv"
    ctl export "$session" --format html -o "$pictures/session-$session.html"
else
    say "recording a ${seconds} s always-on session"
    echo "(the control API is not built in: no 'mwctl session' or 'mwctl status' over D-Bus;"
    echo " the session is ended by stopping the daemon, and its survey waits for the next start)"
    sleep "$seconds"
fi

say "journal events (MESSAGE_ID entries in mwgated's log)"
grep -E "MESSAGE_ID=" "$work/mwgated.log" | sed -E 's/^<[0-9]>/  /; s/ MESSAGE_ID=[0-9a-f]+//'

say "stopping mwgated (SIGTERM: seal open chunks, stop the sensors, disconnect)"
stop_started=$(date +%s%N)
kill -TERM "$daemon"
wait "$daemon" && echo "mwgated exited 0 after $(( ($(date +%s%N) - stop_started) / 1000000 )) ms"
grep -E "shutdown: session|boards stopped" "$work/mwgated.log" | sed -E 's/^<[0-9]>/  /' || true

if [ "$control" != dbus ]; then
    session=$(sed -nE 's/.*session ([0-9A-F-]{36}) started.*/\1/p' "$work/mwgated.log" | head -n 1)
    say "history (mwctl history --state-dir: read from the buffer, daemon stopped)"
    ctl history --state-dir "$work/state" --days 365 --html "$pictures" | grep -vE "^[0-9-]+ +0 "
    say "the session, exported (mwctl export --state-dir)"
    ctl export "$session" --state-dir "$work/state" --format geojson -o "$work/session.geojson"
    ctl export "$session" --state-dir "$work/state" --format csv -o "$work/session.csv"
    ctl export "$session" --state-dir "$work/state" --format html -o "$pictures/session-$session.html"
fi
echo "session $session: $(($(wc -l <"$work/session.csv") - 1)) points; first rows:"
head -n 3 "$work/session.csv"
echo "GeoJSON: $work/session.geojson"
echo "pictures of the session (a self-contained page, opens offline): $pictures/session-$session.html"
echo "all sessions by day: $pictures/index.html"

say "where the documents are"
if [ "$upstream" = firestore ]; then
    echo "Firestore emulator: $firestore"
    for collection in realtime_data records; do
        /usr/bin/python3 - "$firestore/$collection?pageSize=300" "$collection" <<'PY' || echo "  (could not list $collection)"
import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer owner"})
documents = json.load(urllib.request.urlopen(request, timeout=30)).get("documents", [])
for d in documents:
    fields = d.get("fields", {})
    points = len(fields.get("data", {}).get("arrayValue", {}).get("values", []))
    detail = f"{points} points" if sys.argv[2] == "realtime_data" else "session " + fields.get("session_id", {}).get("stringValue", "?")
    print(f"  {sys.argv[2]}/{d['name'].rsplit('/', 1)[-1]}  {detail}")
PY
    done
elif [ -d "$work/documents" ] && [ -n "$(ls -A "$work/documents" 2>/dev/null)" ]; then
    echo "directory sink: $work/documents"
    (cd "$work/documents" && find . -name '*.json' | sort | while read -r f; do
        printf '  %-90s %8d bytes\n' "$f" "$(stat -c %s "$f")"; done)
else
    echo "directory sink: $work/documents (no upload service built in yet: documents stay in the"
    echo "buffer's outbox $work/state/buffer.sqlite until the Uplink sync service lands)"
fi
echo "buffer: $work/state/buffer.sqlite; daemon log: $work/mwgated.log"
[ "${DEMO_KEEP:-0}" = 1 ] || echo "(set DEMO_KEEP=1 to keep $work after the demo)"
