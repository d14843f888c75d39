#!/usr/bin/env bash
# Flash-log backfill -> Markdown section in $1. Called by scripts/bench.sh with MWBENCH set to
# the release mwbench binary (and MWGATED_STATIC, MWCTL_STATIC, MWSIM as it sets them).
# 1. The pure half (download decoding and placement): mwbench backfill, in-process, with an 8 s
#    stall and a kill -9 of 8 s after 2, 5 and 10 minutes of session.
# 2. The whole daemon (backfill_daemon.py): mwgated as packaged with one mwsim MetaMotion R on a
#    private dbus-daemon, on each notification path: 800 Hz gyro logged for
#    BACKFILL_DAEMON_SECONDS (20) s and downloaded to the end at the stop with the board reading
#    out at BACKFILL_FAST_READOUT (10000) notifications/s; and an 8 s out-of-range gap in a 100 Hz
#    stream after 15 s and after BACKFILL_LONG_GAP_SECONDS (120) s of session, read out at the
#    model's pace and at BACKFILL_FAST_READOUT; the same on a MetaMotion S (AcquireNotify); and
#    outages of 20 and 60 s after 15 s (AcquireNotify): the board out of range, and the board in
#    range with its link up but its stream silent (mwsim's Stall), each session then checked
#    sample by sample (lost, twice, marks left). Beside it, bleak (backfill_peer.py, venv
#    .build-venv/boards as boards.sh makes it) making the SDK's download of the same log on the same board.
set -euo pipefail
out=${1:?usage: backfill.sh OUT.md}
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mwgated=${MWGATED_STATIC:-$root/.build-static/release/mwgated}
mwctl=${MWCTL_STATIC:-${MWCTL:-$(dirname "$bench")/mwctl}}
mwsim=${MWSIM:-$(dirname "$bench")/mwsim}
seconds=${BACKFILL_DAEMON_SECONDS:-20}
fast=${BACKFILL_FAST_READOUT:-10000}
long=${BACKFILL_LONG_GAP_SECONDS:-120}
venv="$root/.build-venv/boards"
for binary in "$mwgated" "$mwctl" "$mwsim"; do
    [[ -x "$binary" ]] || { echo "backfill.sh: $binary missing (make bench builds it)" >&2; exit 1; }
done
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import bleak' 2>/dev/null; then
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q bleak
fi
bleak_version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("bleak"))')
raw=$("$bench" backfill "${@:2}")

. "$here/private-bus.sh"
private_bus_start
export DBUS_SYSTEM_BUS_ADDRESS=$bus_address
load_daemon=$(cut -d' ' -f1-3 /proc/loadavg)
# One mwsim (one MetaMotion R unless board_model says otherwise, the model's readout pace) per
# run, so no run reads another's log.
with_board() {
    "$mwsim" --bus "$bus_address" --boards 1 --model "${board_model:-metamotion-r}" --quiet --signal checkable --discovery-delay 0.1 \
        2>> "$bus_dir/mwsim.log" &
    sim_pid=$!
    # Runs in a command substitution's subshell: its own trap stops this mwsim.
    trap 'kill -TERM "$sim_pid" 2> /dev/null; wait "$sim_pid" 2> /dev/null' EXIT
    local _
    for _ in $(seq 100); do
        busctl --address="$bus_address" call io.mwgate.Simulator /io/mwgate/Simulator1 io.mwgate.Simulator1 ListBoards \
            > /dev/null 2>&1 && break
        sleep 0.1
    done
    "$@"
}
daemon() {
    rm -rf "$bus_dir/work" && mkdir -p "$bus_dir/work"
    /usr/bin/python3 "$here/backfill_daemon.py" "$mwgated" "$mwctl" "$bus_dir/work" "$bus_address" "$bus_pid" "$@"
}
peer() {
    local address
    address=$(busctl --address="$bus_address" call io.mwgate.Simulator /io/mwgate/Simulator1 io.mwgate.Simulator1 ListBoards \
        | grep -oE '([0-9A-F]{2}:){5}[0-9A-F]{2}' | head -1)
    "$venv/bin/python" "$here/backfill_peer.py" "$address" "$seconds" "$fast" "$bus_pid" "$bus_address"
}
# A run that fails is named in the section (its error is in this area's log); the others stand.
failed_runs=()
run() {
    local name=$1 out
    shift
    if out=$(with_board "$@"); then raw+=$'\n'$out; else failed_runs+=("$name"); fi
}
for delivery in acquire start-notify; do
    run "logged $delivery" daemon "$delivery" logged "$seconds" "$fast"
    run "gap $delivery" daemon "$delivery" gap "gap_$delivery" 15
    run "gap $delivery, fast readout" daemon "$delivery" gap "gap_fast_$delivery" 15 "$fast"
    run "gap after $long s, $delivery" daemon "$delivery" gap "gap_long_$delivery" "$long"
done
run "gap after $long s, acquire, fast readout" daemon acquire gap gap_long_fast_acquire "$long" "$fast"
board_model=metamotion-s run "MetaMotion S gap, acquire" daemon acquire gap gap_mms_acquire 15
board_model=metamotion-s run "MetaMotion S gap after $long s, acquire" daemon acquire gap gap_long_mms_acquire "$long"
for down in 20 60; do
    run "out of range $down s, acquire" daemon acquire gap "outage_${down}s_acquire" 15 --down "$down"
    run "silent $down s, acquire" daemon acquire gap "silent_${down}s_acquire" 15 --down "$down" --silent
done
run "bleak peer" peer
load_daemon_end=$(cut -d' ' -f1-3 /proc/loadavg)
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p" | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.1f", b / a; else print "n/a" }'; }
below() { awk -v a="$1" -v g="$2" 'BEGIN { print (a >= 0 && a < g) ? "met" : "NOT met" }'; }
{
    echo "### Backfill from the board's flash log (decode and placement)"
    echo
    echo "A MetaMotion R board model logs gyro at 100 Hz for $(value backfill_seconds) s while its stream loses a 60 s"
    echo "and up to five 8 s stretches; the whole log ($(value backfill_entries) entries) is downloaded"
    echo "through \`LogDownloader\` and placed with \`BackfillPlanner\`, one core. Streamed samples keep"
    echo "the board's true times here, so the error column measures the placement alone."
    echo
    echo "| what | value |"
    echo "|---|---:|"
    echo "| samples logged / streamed / backfilled | $(value backfill_logged_samples) / $(value backfill_streamed_samples) / $(value backfill_backfilled_samples) |"
    echo "| CPU per 1,000 backfilled samples (decode + placement of the whole log) | $(value backfill_cpu_ms_per_1000) ms |"
    echo "| CPU per 1,000 downloaded samples | $(value backfill_cpu_ms_per_1000_logged) ms |"
    echo "| download decoding | $(value backfill_decode_entries_per_s) entries/s ($(value backfill_decode_ms) ms) |"
    echo "| placement | $(value backfill_plan_ms) ms |"
    echo "| placement error vs the board's sample times, median / max | $(value backfill_median_error_ms) / $(value backfill_max_error_ms) ms |"
    echo "| samples dropped as already present | $(value backfill_duplicates) |"
    echo
    echo "Goal: placement median error < 1 ms (issue 21): $(below "$(value backfill_median_error_ms)" 1);"
    echo "CPU < 20 ms per 1,000 downloaded samples (the readout always starts at the oldest entry, so"
    echo "the whole log is decoded, not only the gaps; an hour at 100 Hz then costs under 7.2 s):"
    echo "$(below "$(value backfill_cpu_ms_per_1000_logged)" 20)."
    echo
    echo "Time to close an 8 s gap: the same board model streams into the recorder (\`SessionController\`,"
    echo "a store that keeps nothing), stalls for 8 s after 2, 5 and 10 minutes, and its log is read"
    echo "out page by page as soon as the points after the stall wait, each page deleted once stored."
    echo "The log is not trimmed while a session records (d94c3c6), so the readout reads the whole"
    echo "session before the gap; at the model's pace (200 notifications/s, 400 entries/s) and at"
    echo "10,000 notifications/s. Simulated time: seconds from the stream's return to the gap's points"
    echo "committed (\"never\": not within the recorder's longest hold, 5 minutes from the first point"
    echo "after the gap, so the gap stays marked); CPU from the readout's start to the gap closed."
    echo
    echo "| session before the gap | entries read | gap closed after, model's pace | CPU per 1,000 backfilled | gap closed after, 10,000/s | CPU per 1,000 backfilled |"
    echo "|---|---:|---:|---:|---:|---:|"
    for m in 2 5 10; do
        echo "| $m min | $(value backfill_gap_${m}min_model_entries) | $(value backfill_gap_${m}min_model_close_s) s | $(value backfill_gap_${m}min_model_cpu_ms_per_1000) ms | $(value backfill_gap_${m}min_fast_close_s) s | $(value backfill_gap_${m}min_fast_cpu_ms_per_1000) ms |"
    done
    echo
    echo "A gateway restart instead of the stall (kill -9): after 2, 5 and 10 minutes the recorder and its buffer (SQLite, a temporary directory) are dropped; 8 s later a new process recovers the session and expects its restart gap, the board's next link streams into an always-mode session, and the log is read when the recorder asks. Gap closed: seconds from the restart to the gap no longer waited for; lost and twice: the board's samples missing from, or stored twice in, the interrupted and the new session taken together."
    echo
    echo "| session before the kill | entries read | gap closed after, model's pace | CPU per 1,000 backfilled | gap closed after, 10,000/s | CPU per 1,000 backfilled | backfilled, model / 10,000/s | lost / twice, model / 10,000/s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for m in 2 5 10; do
        r=backfill_restart_${m}min
        echo "| $m min | $(value ${r}_model_entries) | $(value ${r}_model_close_s) s | $(value ${r}_model_cpu_ms_per_1000) ms | $(value ${r}_fast_close_s) s | $(value ${r}_fast_cpu_ms_per_1000) ms | $(value ${r}_model_backfilled) / $(value ${r}_fast_backfilled) | $(value ${r}_model_lost) / $(value ${r}_model_twice), $(value ${r}_fast_lost) / $(value ${r}_fast_twice) |"
    done
    echo
    echo "#### The whole daemon: downloads through dbus-daemon"
    echo
    echo "mwgated as packaged, one simulated MetaMotion R (mwsim, separate process, a new one per run) on a private dbus-daemon, manual sessions, directory sink; each notification path (\`[boards] notifications\`). Logged: gyro at 800 Hz logged on the board (\`backfill = true\`), a ${seconds} s session downloaded during it at the model's readout pace (200 notifications/s, 400 entries/s) and, at \`mwctl session stop\`, the rest of the log with the board reading out at ${fast} notifications/s (mwsim SetReadoutRate), so the download runs as fast as mwgated takes it: entries and samples per second from the stop to the last sample stored (\`mwctl status\` polled every 0.2 s), mwgated's and dbus-daemon's CPU (schedstat) over that span per 1,000 samples. Peer: bleak $bleak_version (PyPI, its default notification path) making MbientLab's SDK download of the same 800 Hz log on the same board (metawear-logging.md §8.1: \`0B 06 <n> <n/20>\`, \`0B 0E\` after each page; every entry decoded and paired into samples), its own CPU (getrusage) and dbus-daemon's over its download."
    echo
    echo "| case | entries/s | samples/s | ms CPU / 1,000 samples | dbus-daemon ms / 1,000 samples | samples in the download | stored in the session / taken by the board |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for d in acquire start-notify; do
        echo "| mwgated, $d, at the stop | $(value logged_${d}_entries_per_s) | $(value logged_${d}_samples_per_s) | $(value logged_${d}_cpu_ms_per_1000) | $(value logged_${d}_dbus_ms_per_1000) | $(value logged_${d}_after_stop_samples) | $(value logged_${d}_session_points) / $(value logged_${d}_board_measured) |"
    done
    echo "| bleak, SDK download, same log size | $(value bleak_entries_per_s) | $(value bleak_samples_per_s) | $(value bleak_cpu_ms_per_1000) | $(value bleak_dbus_ms_per_1000) | $(value bleak_samples) | |"
    echo
    echo "During the session, at the model's pace: $(value logged_acquire_in_session_samples_per_s) (AcquireNotify) and $(value logged_start-notify_in_session_samples_per_s) (StartNotify) samples/s downloaded while the board logs 800; the stop took $(value logged_acquire_stop_s) / $(value logged_start-notify_stop_s) s (download, a last empty readout, the seal)."
    echo "Throughput, mwgated ÷ bleak in samples/s: AcquireNotify $(ratio "$(value bleak_samples_per_s)" "$(value logged_acquire_samples_per_s)")× , StartNotify $(ratio "$(value bleak_samples_per_s)" "$(value logged_start-notify_samples_per_s)")× (above 1: mwgated faster); CPU per sample, bleak ÷ mwgated: $(ratio "$(value logged_acquire_cpu_ms_per_1000)" "$(value bleak_cpu_ms_per_1000)")× / $(ratio "$(value logged_start-notify_cpu_ms_per_1000)" "$(value bleak_cpu_ms_per_1000)")×. mwgated stores every page in SQLite before it confirms it on the board (a page is deleted only once stored); bleak keeps the samples in memory."
    echo
    echo "Time to close an 8 s gap after reconnect: gyro streamed at 100 Hz with backfill on, after 15 s of session the board goes out of range for 8 s (VanishDevice, then RestoreDevice); times from the board back in range (\`mwctl status\` polled every 0.1 s):"
    echo
    echo "| case | back to streaming | gap closed (last backfilled sample stored) | of which after streaming | samples backfilled / not delivered by the board | CPU per 1,000 backfilled samples (less the stream's own) | stream while reading (of 100/s) |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    gap_row() {
        echo "| $2 | $(value "$1_back_to_streaming_s") s | $(value "$1_closed_after_s") s | $(value "$1_closed_after_streaming_s") s | $(value "$1_backfilled") / $(value "$1_missing") | $(value "$1_cpu_ms_per_1000") ms | $(value "$1_stream_per_s_while_reading") |"
    }
    for d in acquire start-notify; do gap_row "gap_$d" "$d, after 15 s"; done
    for d in acquire start-notify; do gap_row "gap_fast_$d" "$d, after 15 s, readout at ${fast}/s"; done
    for d in acquire start-notify; do gap_row "gap_long_$d" "$d, after $long s"; done
    gap_row gap_long_fast_acquire "acquire, after $long s, readout at ${fast}/s"
    gap_row gap_mms_acquire "MetaMotion S, acquire, after 15 s"
    gap_row gap_long_mms_acquire "MetaMotion S, acquire, after $long s"
    echo
    echo "Outages of 20 and 60 s after 15 s of session (AcquireNotify, the model's pace): the board out of range (VanishDevice, RestoreDevice), or in range with its link up and its stream silent (mwsim's Stall: the board answers, logs and measures on; mwgated's watchdog restarts the stream after 1 s of silence, gives the link up when the restart brings nothing, links again, and so on until the stream is back). Times from the outage's end; after the session's stop its export (\`mwctl export\`), sample by sample: samples missing between its first and last point, stored twice, and gap marks left."
    echo
    echo "| case | back to streaming | gap closed | samples backfilled / not delivered by the board | lost | twice | marks left (samples) |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for down in 20 60; do
        for kind in outage silent; do
            k=${kind}_${down}s_acquire
            echo "| $([[ $kind == outage ]] && echo "out of range" || echo "silent, link up") $down s | $(value "${k}_back_to_streaming_s") s | $(value "${k}_closed_after_s") s | $(value "${k}_backfilled") / $(value "${k}_missing") | $(value "${k}_lost") | $(value "${k}_twice") | $(value "${k}_marks") ($(value "${k}_marked_samples")) |"
        done
    done
    echo
    [[ ${#failed_runs[@]} -eq 0 ]] || echo "**Failed runs** (empty cells above; see the area's log): ${failed_runs[*]}."
    echo
    echo "The log is not trimmed while a session records (d94c3c6: a trim paused logging), so the download after the gap reads the whole session before it: about 200 entries per second of session at 100 Hz, at the model's pace 400 entries/s; the rows at ${fast}/s show what mwgated's side takes. A MetaMotion S download during a session starts once its open page has filled (f8f4c0e: 512 entries plus a quarter, 3.2 s at 100 Hz) instead of a flush that paused logging. The readout starts once the first point after the gap reaches the recorder, about 2 s after the board streams again (the timestamper's 1 s lookahead and the 1 s fix wait). Load average at the start of the daemon runs: $load_daemon; at the end: $load_daemon_end."
    echo
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n' "$raw" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
