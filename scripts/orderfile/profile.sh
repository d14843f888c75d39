#!/usr/bin/env bash
# Regenerates packaging/mwgated.order, the link order of mwgated's code that
# scripts/build-static.sh hands to lld (--symbol-ordering-file): `make orderfile`.
#
# It runs the packaged mwgated (as scripts/build-static.sh builds it) under valgrind's callgrind,
# a first start and then a restart on the same state, on the footprint benchmark's workload
# (scripts/bench/footprint-workload.sh: mwsim with 4 boards of both chip profiles streaming gyro
# at 100 Hz on a private dbus-daemon, always-on recording, chunks sealed and written by the
# directory sink), with a replayed GNSS capture (shared/testdata), the read-only mwctl commands
# every few seconds, and sd_notify and the watchdog as under systemd; then once more into each
# network upstream installed here (a PostgreSQL 15 of its own on loopback, Google's Firestore
# emulator). Each run ends with SIGTERM, so start-up, steady state and shutdown are all in the
# profile. callgrind_order.py lists every function that ran, the code all runs share first,
# then each run's own, hottest first within each group.
#
# Rerun it when the code the daemon runs has changed much: a function missing from the order
# still links and runs, it only lands among cold code (resident memory creeps up, which the
# footprint benchmark shows). The order names symbols only; stale names are ignored by the link.
#
# With the order it writes packaging/mwgated-unnamed.ld: the Swift compiler's unnamed helper
# functions that ran (no symbol for the order to name), by object file and section, found in
# the profiled binary's link map.
#
# Env: PROFILE_SECONDS (streaming time of the restart under callgrind, default 120), ORDER_OUT (default
# packaging/mwgated.order), UNNAMED_OUT (default packaging/mwgated-unnamed.ld), PROFILE_UPSTREAM_SECONDS (each upstream's run, default 60), MWSIM,
# MWCTL (default: the debug build's), PROFILE_KEEP (a directory to keep the profiles and the
# profiled binary in).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
seconds=${PROFILE_SECONDS:-120}
out=${ORDER_OUT:-$root/packaging/mwgated.order}
unnamed_out=${UNNAMED_OUT:-$root/packaging/mwgated-unnamed.ld}
command -v valgrind > /dev/null || { echo "profile.sh: valgrind missing (make deps installs it)" >&2; exit 1; }

# The link map (where each unnamed function's section landed) stays beside the binary.
work_map=$(scripts/build-static.sh --bin-path)/mwgated.map
# Linked without packaging/mwgated-unnamed.ld: in .text.unnamed valgrind would attribute the
# unnamed functions to no object ("???"), and they would drop out of the new script.
MWGATE_NO_UNNAMED=1 MWGATE_LINK_MAP=$work_map scripts/build-static.sh mwgated
built=$(scripts/build-static.sh --bin-path)/mwgated
if [[ -z "${MWSIM:-}" || -z "${MWCTL:-}" ]]; then
    swift build --product mwsim ${SWIFT_FLAGS:-} > /dev/null
    swift build --product mwctl ${SWIFT_FLAGS:-} > /dev/null
fi
mwsim=${MWSIM:-$(swift build --show-bin-path)/mwsim}
mwctl=${MWCTL:-$(swift build --show-bin-path)/mwctl}

. "$root/scripts/bench/private-bus.sh"
private_bus_start
work=$bus_dir
export DBUS_SYSTEM_BUS_ADDRESS=$bus_address
. "$root/scripts/bench/footprint-workload.sh"
footprint_boards_start "$work" "$bus_address" "$mwsim"
# valgrind cannot read the toolchain's DWARF 5; names come from the symbol table, which stays.
mwgated=$work/mwgated
strip --strip-debug -o "$mwgated" "$built"
nmea=$root/../shared/testdata/nmea/quectel-l76k-nmea.log
if [[ -r "$nmea" ]]; then
    nmea=$(cd "$(dirname "$nmea")" && pwd)/$(basename "$nmea")
else
    echo "profile.sh: $nmea missing: profiling without GNSS input" >&2
    nmea=""
fi
# The footprint configuration with SINK_TOML's upstream (default: the directory sink), plus the
# replayed receiver capture: a real gateway reads fixes too.
write_config() {
    footprint_config "$work" "${1:-}"
    [[ -z "$nmea" ]] || printf '\n[gnss]\nsource = "file:%s?speed=realtime"\n' "$nmea" >> "$work/etc/mwgated.toml"
}
# As under systemd (Type=notify, WatchdogSec=30s): readiness, status and watchdog pings go to a
# socket of ours, so the sd_notify code is in the profile too.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    s.recv(4096)
' "$work/notify.sock" &
bench_track $!
. "$root/scripts/bench/scratch-postgres.sh"
# One run under callgrind: start, wait until every board streams (slow under valgrind), ask
# the operator's questions for $2 seconds, SIGTERM. Fails unless every board streamed.
profiled_run() {
    local name=$1 seconds=$2 streaming=0 daemon end query
    STATE_DIRECTORY=$work/state RUNTIME_DIRECTORY=$work/run CONFIGURATION_DIRECTORY=$work/etc \
        NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=30000000 \
        valgrind --tool=callgrind --demangle=no --dump-instr=yes --dump-line=no --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$work/$name.callgrind" \
        "$mwgated" --config "$work/etc/mwgated.toml" > "$work/$name.log" 2>&1 &
    daemon=$!
    bench_track "$daemon"
    for _ in $(seq 600); do
        streaming=$("$mwctl" status --json 2>/dev/null | grep -o '"streaming" *: *true' | wc -l || true)
        [[ "$streaming" -ge "$footprint_boards" ]] && break
        sleep 1
    done
    echo "profile.sh: $name: $streaming of $footprint_boards boards streaming; profiling for $seconds s" >&2
    end=$((SECONDS + seconds))
    while ((SECONDS < end)); do
        for query in "${queries[@]}"; do
            # shellcheck disable=SC2086 # a query is several words
            "$mwctl" $query > /dev/null 2>&1 || true
        done
        sleep 5
    done
    kill -TERM "$daemon"
    wait "$daemon" || true
    [[ -z "${PROFILE_KEEP:-}" ]] || cp "$work/$name.callgrind" "$work/$name.log" "$PROFILE_KEEP/"
    if [[ "$streaming" -lt "$footprint_boards" ]]; then
        echo "profile.sh: $name: the boards did not stream (see $work/$name.log); order not written" >&2
        tail -20 "$work/$name.log" >&2
        return 1
    fi
}

# What an operator or a monitoring script asks of a running gateway.
queries=("status" "status --json" "boards list" "session list" "history" "sync status" "sync status --json")
profiles=()
# A first start creates the database; a restart opens it, closes the session the stop left
# and resumes the backlog: different code, and the one a long-running gateway mostly runs.
write_config
profiled_run first-start 30
profiled_run restart "$seconds"
profiles+=("$work/first-start.callgrind" "$work/restart.callgrind")
documents=$(find "$work/documents" -type f | wc -l)
echo "profile.sh: $documents documents written by the directory sink" >&2
[[ "$documents" -gt 0 ]] || { echo "profile.sh: nothing was sealed and written; order not written" >&2; exit 1; }

# The network upstreams, where installed: their client code (NIO, PostgresNIO, AsyncHTTPClient)
# is most of what a fleet gateway runs beyond the directory sink's; left out of the order, it
# kept ~4 MB more code resident with a PostgreSQL sink.
upstream_seconds=${PROFILE_UPSTREAM_SECONDS:-60}
if [[ -x "$pg_bin/postgres" ]]; then
    scratch_postgres_start "$work"
    bench_track "$pg_pid"  # stopped by the exit trap should a check below fail
    psql_pg() { "$pg_bin/psql" -X -q -h 127.0.0.1 -p "$pg_port" -U postgres "$@"; }
    psql_pg -c "create user mwgate" -c "create database mwgate owner mwgate"
    mkdir -p "$work/credentials"
    echo "trust-auth-ignores-it" > "$work/credentials/postgres-password"
    printf '[sink]\ntype = "postgres"\n\n[sink.postgres]\nhost = "127.0.0.1"\nport = %s\nuser = "mwgate"\ndatabase = "mwgate"\nsslmode = "disable"\n' \
        "$pg_port" > "$work/postgres-sink.toml"
    write_config "$work/postgres-sink.toml"
    CREDENTIALS_DIRECTORY=$work/credentials profiled_run postgres "$upstream_seconds"
    rows=$(psql_pg -d mwgate -tAc "select count(*) from realtime_data")
    echo "profile.sh: $rows realtime_data rows in PostgreSQL" >&2
    scratch_postgres_stop
    [[ "$rows" -gt 0 ]] || { echo "profile.sh: nothing reached PostgreSQL; order not written" >&2; exit 1; }
    profiles+=("$work/postgres.callgrind")
else
    echo "profile.sh: PostgreSQL 15 missing (make deps): its sink is not in the order" >&2
fi
emulator=/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator
if [[ -x "$emulator" ]] && command -v java > /dev/null; then
    emu_port=$(free_port)
    JAVA_TOOL_OPTIONS="-Xms1g -Xmx1g" setsid "$emulator" start --host=127.0.0.1 --port="$emu_port" \
        --project_id=mwgate-profile > "$work/emulator.log" 2>&1 &
    emu_pid=$!
    bench_track "$emu_pid"
    for _ in $(seq 240); do curl -s -o /dev/null "http://127.0.0.1:$emu_port/" && break; sleep 0.5; done
    printf '[sink]\ntype = "firestore"\n\n[sink.firestore]\nproject_id = "mwgate-profile"\nemulator_host = "127.0.0.1:%s"\n' \
        "$emu_port" > "$work/firestore-sink.toml"
    write_config "$work/firestore-sink.toml"
    profiled_run firestore "$upstream_seconds"
    listed=$(curl -s "http://127.0.0.1:$emu_port/v1/projects/mwgate-profile/databases/(default)/documents/realtime_data?pageSize=100" \
        | grep -c '"name": "projects/' || true)
    kill -TERM -- "-$emu_pid" 2>/dev/null || true
    echo "profile.sh: $listed realtime_data documents in the Firestore emulator (first page)" >&2
    [[ "$listed" -gt 0 ]] || { echo "profile.sh: nothing reached the Firestore emulator; order not written" >&2; exit 1; }
    profiles+=("$work/firestore.callgrind")
else
    echo "profile.sh: the Firestore emulator or java is missing: its sink is not in the order" >&2
fi

[[ -z "${PROFILE_KEEP:-}" ]] || cp "$mwgated" "$work_map" "$PROFILE_KEEP/"
/usr/bin/python3 "$here/callgrind_order.py" --map "$work_map" --unnamed-out "$unnamed_out.tmp" \
    "$mwgated" "${profiles[@]}" > "$out.tmp"
mv "$out.tmp" "$out"
mv "$unnamed_out.tmp" "$unnamed_out"
echo "profile.sh: wrote $out ($(wc -l < "$out") symbols, ${#profiles[@]} profiled runs) and $unnamed_out" >&2
