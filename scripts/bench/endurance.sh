#!/usr/bin/env bash
# Field endurance -> Markdown section in $1: mwgated as packaged (MWGATED_STATIC) with mwsim's
# 4 boards (gyro at 100 Hz) on a private bus, as a user runs it: manual sessions, directory
# sink. Measures (endurance.py) the idle gateway (CPU, wake-ups, notifications while no
# session records), the time from `mwctl session start` to the first sample, and the bytes
# mwgated writes to disk per recorded sample (/proc/PID/io write_bytes) beside the bytes the
# buffer stores and the documents the sink writes, as bytes/sample and GB/day.
# Env: ENDURANCE_IDLE_SECONDS (default 60), ENDURANCE_SESSION_SECONDS (default 60),
# ENDURANCE_SESSION_TOML (extra [session]/[boards] lines, e.g. 'idle_sensors = "streaming"').
set -euo pipefail
out=${1:?usage: endurance.sh OUT.md}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
mwsim=${MWSIM:-$(dirname "$bench")/mwsim}
mwgated=${MWGATED_STATIC:-$root/.build-static/release/mwgated}
mwctl=${MWCTL_STATIC:-${MWCTL:?}}
idle=${ENDURANCE_IDLE_SECONDS:-60}
session=${ENDURANCE_SESSION_SECONDS:-60}
for binary in "$mwgated" "$mwsim" "$mwctl"; do
    [[ -x "$binary" ]] || { echo "endurance.sh: $binary missing (make bench builds it)" >&2; exit 1; }
done

. "$here/private-bus.sh"
private_bus_start
work=$bus_dir
export DBUS_SYSTEM_BUS_ADDRESS=$bus_address
. "$here/footprint-workload.sh"
footprint_boards_start "$work" "$bus_address" "$mwsim"
mkdir -p "$work/state" "$work/run" "$work/etc" "$work/documents"
{
    printf '[boards]\ngyro_rate = 100\n\n[session]\nmode = "manual"\n%s\n\n' "${ENDURANCE_SESSION_TOML:-}"
    printf '[sink]\ntype = "directory"\n\n[sink.directory]\npath = "%s"\n' "$work/documents"
} > "$work/etc/mwgated.toml"
"$mwgated" --check-config --config "$work/etc/mwgated.toml" > /dev/null
load=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$(/usr/bin/python3 "$here/endurance.py" "$mwgated" "$mwctl" "$work" "$bus_address" "$footprint_boards" "$idle" "$session")
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p" | tail -1; }
samples=$(value samples)
per() { awk -v b="$1" -v n="$samples" 'BEGIN { if (n > 0) printf "%.1f", b / n; else print "nan" }'; }
# At 4 boards x 100 Hz recording all day.
per_day() { awk -v b="$1" -v n="$samples" 'BEGIN { if (n > 0) printf "%.2f", b / n * 400 * 86400 / 1e9; else print "nan" }'; }
atmost() { awk -v a="$1" -v g="$2" 'BEGIN { print (a <= g) ? "met" : "NOT met" }'; }
written=$(value write_bytes); documents=$(value document_bytes); stored=$(value buffer_stored_bytes)
owed=$(value checkpoint_owed_bytes)
buffer_written=$((written - documents + owed))
{
    echo "### Field endurance (mwgated with 4 boards at 100 Hz, manual sessions)"
    echo
    echo "mwgated as packaged, mwsim simulating BlueZ with $footprint_boards boards (mixed MetaMotion R/S) streaming gyro at 100 Hz when asked, manual sessions, directory sink into the state directory's disk, the unit's WATCHDOG_USEC (30 s). Idle: $idle s with every board connected and no session; CPU is the run time of all of mwgated's threads (schedstat), wake-ups their voluntary + nonvoluntary context switches, notifications what the simulated boards delivered. Then \`mwctl session start\`, $session s of recording, \`mwctl session stop\` and the sink drained: bytes written are mwgated's /proc/PID/io write_bytes over that span plus what the next checkpoint will write for the WAL frames not yet copied into the database (so a span shorter than the 4 MiB checkpoint interval is not flattered); the directory sink's documents are the product and are shown apart; GB/day assumes 4 boards x 100 Hz recording around the clock.${ENDURANCE_SESSION_TOML:+ Extra configuration: \`$ENDURANCE_SESSION_TOML\`.}"
    echo
    echo "| measure | before (issue 19) | before the segment journal (078ae53) | ours | goal | met |"
    echo "|---|---:|---:|---:|---:|---|"
    echo "| written to disk by the buffer (write_bytes less documents, plus the checkpoint still owed) per sample | 886 B (30.6 GB/day) | 117.1 B (4.05 GB/day) | $(per "$buffer_written") B ($(per_day "$buffer_written") GB/day) | <= 90 B | $(atmost "$(per "$buffer_written")" 90) |"
    echo "| of which: the checkpoint still owed at the end (WAL pages not yet in the database file) |  | 25.4 B | $(per "$owed") B | | |"
    echo "| of which: what the buffer stores per sample | 28 B | 21.0 B | $(per "$stored") B | | |"
    echo "| documents written by the directory sink per sample (shown apart) | 153 B | 128.5 B | $(per "$documents") B ($(per_day "$documents") GB/day) | | |"
    echo "| all of mwgated's write_bytes per sample |  | 220.3 B | $(per "$written") B ($(per_day "$written") GB/day) | | |"
    echo "| samples recorded |  | 24,064 | $samples | | |"
    echo "| idle CPU (no session, boards connected) | 3.9-6 ms/s | 0.052 ms/s | $(value idle_cpu_ms_per_s) ms/s | <= 0.5 ms/s | $(atmost "$(value idle_cpu_ms_per_s)" 0.5) |"
    echo "| idle wake-ups (all threads' context switches) | 102 /s | 1.91 /s | $(value idle_wakeups_per_s) /s | <= 5 /s | $(atmost "$(value idle_wakeups_per_s)" 5) |"
    echo "| notifications per minute while idle (all boards) | 24,031-24,287 | 0.0 | $(value idle_notifications_per_min) | 0 | $(atmost "$(value idle_notifications_per_min)" 0) |"
    echo "| watchdog pings received while idle |  | 4 in 20.4 s | $(value idle_watchdog_pings) in $(value idle_window_s) s | | |"
    echo "| session start to first sample | (always streaming) | 174 ms (all boards: 198 ms) | $(value first_sample_ms) ms (all boards: $(value all_boards_first_sample_ms) ms) | <= 300 ms | $(atmost "$(value first_sample_ms)" 300) |"
    echo "| RSS idle / recording |  | 20.6 / 24.1 MiB | $(awk -v k="$(value idle_rss_kib)" 'BEGIN { printf "%.1f", k / 1024 }') / $(awk -v k="$(value session_rss_kib)" 'BEGIN { printf "%.1f", k / 1024 }') MiB | < 25 MB | $(atmost "$(value session_rss_kib)" 24414) |"
    echo
    echo "Before the segment journal: this bench on main at 078ae53 (the open chunks' segments as database rows), release static mwgated, 20 s idle, 60 s session, load 12-18, 27 Nov 2026."
    echo "Before (issue 19): the figures issue 19 was filed with (a release build, 60 s session; it counted no owed checkpoint, and wrote each open chunk whole every second), and for wake-ups and notifications the first run of this bench on main before the issue's changes (2533ca1, debug build, 27 Nov 2026)."
    echo "The time to the first sample is polled through \`mwctl status\` as fast as it answers, so it includes one status round trip."
    echo "Load average at the start: $load; at the end: $load_end."
    echo
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n' "$raw" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
echo "endurance: buffer $(per "$buffer_written") B/sample ($(per_day "$buffer_written") GB/day), idle $(value idle_cpu_ms_per_s) ms/s, $(value idle_wakeups_per_s) wake-ups/s, first sample $(value first_sample_ms) ms"
