#!/usr/bin/env bash
# Regenerates packaging/mwgated.order, the link order of mwgated's code that
# scripts/build-static.sh hands to lld (--symbol-ordering-file): `make orderfile`.
#
# It runs the packaged mwgated (as scripts/build-static.sh builds it) under valgrind's callgrind,
# a first start and then a restart on the same state, on the footprint benchmark's workload
# (scripts/bench/footprint-workload.sh: mwsim with 4 boards of both chip profiles streaming gyro
# at 100 Hz on a private dbus-daemon, always-on recording, chunks sealed and written by the
# directory sink) plus a replayed GNSS capture (shared/testdata) and the read-only mwctl
# commands every few seconds; each run ends with SIGTERM, so start-up, steady state and
# shutdown are all in the profile. callgrind_order.py lists every function that ran, hottest
# first.
#
# Rerun it when the code the daemon runs has changed much: a function missing from the order
# still links and runs, it only lands among cold code (resident memory creeps up, which the
# footprint benchmark shows). The order names symbols only; stale names are ignored by the link.
#
# Env: PROFILE_SECONDS (streaming time of the restart under callgrind, default 120), ORDER_OUT (default
# packaging/mwgated.order), MWSIM, MWCTL (default: the debug build's), PROFILE_KEEP (a directory
# to keep the profile and the profiled binary in).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
seconds=${PROFILE_SECONDS:-120}
out=${ORDER_OUT:-$root/packaging/mwgated.order}
command -v valgrind > /dev/null || { echo "profile.sh: valgrind missing (make deps installs it)" >&2; exit 1; }

scripts/build-static.sh mwgated
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
footprint_workload_start "$work" "$bus_address" "$mwsim"
# valgrind cannot read the toolchain's DWARF 5; names come from the symbol table, which stays.
mwgated=$work/mwgated
strip --strip-debug -o "$mwgated" "$built"
# A real gateway reads fixes too: replay the shared receiver capture when it is there.
nmea=$root/../shared/testdata/nmea/quectel-l76k-nmea.log
if [[ -r "$nmea" ]]; then
    nmea=$(cd "$(dirname "$nmea")" && pwd)/$(basename "$nmea")
    printf '\n[gnss]\nsource = "file:%s?speed=realtime"\n' "$nmea" >> "$work/etc/mwgated.toml"
else
    echo "profile.sh: $nmea missing: profiling without GNSS input" >&2
fi
# One run under callgrind: start, wait until every board streams (slow under valgrind), ask
# the operator's questions for $2 seconds, SIGTERM. Fails unless every board streamed.
profiled_run() {
    local name=$1 seconds=$2 streaming=0 daemon end query
    STATE_DIRECTORY=$work/state RUNTIME_DIRECTORY=$work/run CONFIGURATION_DIRECTORY=$work/etc \
        valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
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
# A first start creates the database; a restart opens it, closes the session the stop left
# and resumes the backlog: different code, and the one a long-running gateway mostly runs.
profiled_run first-start 30
profiled_run restart "$seconds"
[[ -z "${PROFILE_KEEP:-}" ]] || cp "$mwgated" "$PROFILE_KEEP/"
documents=$(find "$work/documents" -type f | wc -l)
echo "profile.sh: $documents documents written by the directory sink" >&2
[[ "$documents" -gt 0 ]] || { echo "profile.sh: nothing was sealed and written; order not written" >&2; exit 1; }
/usr/bin/python3 "$here/callgrind_order.py" "$mwgated" "$work/first-start.callgrind" "$work/restart.callgrind" > "$out.tmp"
mv "$out.tmp" "$out"
echo "profile.sh: wrote $out ($(wc -l < "$out") symbols)" >&2
