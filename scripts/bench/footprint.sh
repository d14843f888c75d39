#!/usr/bin/env bash
# Daemon footprint -> Markdown section in $1: mwgated as packaged (release, static Swift
# runtime: MWGATED_STATIC, built by scripts/bench.sh into .build-static/) on a private bus with
# mwsim simulating BlueZ and 4 boards streaming gyro at 100 Hz, always-on recording into a
# temporary state directory, directory sink. Measures start to READY=1 (sd_notify datagram to
# a socket this script owns; median of STARTS), RSS at steady state and its maximum, and
# mwgated's CPU (utime + stime) per 1,000 samples received over the steady window.
# Env: FOOTPRINT_SECONDS (total streaming window, default 60), FOOTPRINT_STEADY_AFTER (default
# 30), FOOTPRINT_STARTS (default 7), MWCTL_STATIC / MWGATED_STATIC, MWBENCH_DATA_DIR.
set -euo pipefail
out=${1:?usage: footprint.sh OUT.md}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
mwsim=${MWSIM:-$(dirname "$bench")/mwsim}
mwgated=${MWGATED_STATIC:-$root/.build-static/release/mwgated}
mwctl=${MWCTL_STATIC:-${MWCTL:?}}
seconds=${FOOTPRINT_SECONDS:-60}
steady_after=${FOOTPRINT_STEADY_AFTER:-30}
starts=${FOOTPRINT_STARTS:-7}
data=${MWBENCH_DATA_DIR:-$(dirname "$out")}
for binary in "$mwgated" "$mwsim" "$mwctl"; do
    [[ -x "$binary" ]] || { echo "footprint.sh: $binary missing (make bench builds it)" >&2; exit 1; }
done

. "$here/private-bus.sh"
. "$here/footprint-workload.sh"
footprint_private_workload "$mwsim"
"$mwgated" --check-config --config "$work/etc/mwgated.toml" > /dev/null
load=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$(/usr/bin/python3 "$here/footprint.py" "$mwgated" "$mwctl" "$work" "$data" "$starts" "$seconds" "$steady_after" "$footprint_boards")
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p" | tail -1; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
met() { awk -v a="$1" -v g="$2" 'BEGIN { print (a < g) ? "met" : "NOT met" }'; }
packaged="as packaged"
ldd "$mwgated" 2>/dev/null | grep -q libswiftCore && packaged="NOT as packaged: Swift runtime linked dynamically"
# How much of the link order (packaging/mwgated.order) this binary still has: names the code
# no longer defines mean the order is going stale (make orderfile).
order=$root/packaging/mwgated.order
order_note="no link order (packaging/mwgated.order missing): code in the compiler's order"
if [[ -s "$order" ]]; then
    order_total=$(wc -l < "$order")
    order_found=$(nm --defined-only "$mwgated" 2>/dev/null | awk 'NR == FNR { want[$1]; next } ($NF in want) { found[$NF] } END { print length(found) }' "$order" -)
    order_note="code laid out by packaging/mwgated.order: $order_found of its $order_total names are in this binary"
fi
# The unnamed helpers packaging/mwgated-unnamed.ld placed before .text (no such section: none).
unnamed_size=$(readelf -SW "$mwgated" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == ".text.unnamed") print $(i + 4) }')
[[ -z "$unnamed_size" ]] || order_note="$order_note, and $((16#$unnamed_size)) bytes of unnamed helper functions placed next to them by packaging/mwgated-unnamed.ld"
sink_note="directory sink"
[[ -z "${FOOTPRINT_SINK_TOML:-}" ]] || sink_note="the sink of $FOOTPRINT_SINK_TOML ($(sed -n 's/^type *= *//p' "$FOOTPRINT_SINK_TOML" | head -1))"
rss=$(mib "$(value rss_steady_kib)"); rss_max=$(mib "$(value rss_max_kib)")
ready=$(value ready_median_ms)
cpu=$(value cpu_ms_per_1000_samples)
{
    echo "### Daemon footprint (mwgated $packaged, 4 boards at 100 Hz)"
    echo
    echo "mwgated built as the package builds it (\`scripts/build-static.sh\`: release, static Swift runtime, one section per function, lld with packed relative relocations, no exported symbols, the code the daemon runs packed together; $order_note), mwsim simulating BlueZ with $footprint_boards boards (mixed MetaMotion R/S) streaming gyro at 100 Hz on a private dbus-daemon, always-on recording into a fresh state directory, $sink_note. Start to READY=1: from fork to the sd_notify datagram on a socket the benchmark owns, $starts starts (the first creates the database). RSS sampled every second; steady state = median after ${steady_after} s of streaming; CPU = utime + stime of mwgated over the window from ${steady_after} s to ${seconds} s, divided by the gyro samples it received in that window (its control API's counters)."
    echo
    echo "| measure | ours | goal | met |"
    echo "|---|---:|---:|---|"
    echo "| RSS, steady state | $rss MiB | < 25 MB | $(met "$(value rss_steady_kib)" 24414) |"
    echo "| RSS, maximum (VmHWM) | $rss_max MiB | | |"
    echo "| of the RSS at the end: anonymous (heap, stacks, relocated data) | $(mib "$(value rss_anon_kib)") MiB | | |"
    echo "| of the RSS at the end: file-backed (code and read-only data of mwgated and its libraries: clean pages) | $(mib "$(value rss_file_kib)") MiB | | |"
    echo "| start to READY=1, median of $starts | $ready ms (first: $(value ready_first_ms) ms) | < 300 ms | $(met "$ready" 300) |"
    echo "| CPU per 1,000 samples end to end | $cpu ms | | |"
    echo "| samples/s received (all boards) | $(value samples_per_s) | 400 | |"
    echo "| wake-ups/s (voluntary context switches over the window), all threads | $(value wakeups_per_s) | | |"
    echo "| of them on the recording pipeline's thread | $(value wakeups_recording_per_s) | | |"
    echo "| threads | $(value threads) | | |"
    echo
    [[ -n "${FOOTPRINT_DAEMON_ENV:-}" ]] && echo "mwgated's environment had in addition: \`$FOOTPRINT_DAEMON_ENV\`." && echo
    echo "No peer: no other MetaWear gateway daemon runs on this machine; the goals are absolute."
    echo "Load average at the start: $load; at the end: $load_end."
    echo
    echo "<details><summary>raw, and memory by mapping at the end of the run</summary>"
    echo
    printf '%s\n' "$raw" | sed 's/^/    /'
    echo
    [[ -f "$data/footprint-smaps.txt" ]] && sed 's/^/    /' "$data/footprint-smaps.txt"
    echo
    # What of mwgated's own mapping is resident, by section and by origin (footprint_resident.py).
    [[ -f "$data/footprint-resident.txt" ]] && sed 's/^/    /' "$data/footprint-resident.txt"
    echo
    echo "</details>"
} > "$out"
echo "footprint: RSS $rss MiB (max $rss_max), READY $ready ms, CPU $cpu ms / 1,000 samples, wake-ups $(value wakeups_per_s)/s (recording thread $(value wakeups_recording_per_s)/s)"
