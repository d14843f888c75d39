#!/usr/bin/env bash
# Instructions per sample -> Markdown section in $1: mwgated as packaged (MWGATED_STATIC, its
# debug info stripped: valgrind cannot read Swift's DWARF 5) on the footprint workload (4 mwsim
# boards at 100 Hz, always-on recording, directory sink; scripts/bench/footprint-workload.sh),
# under callgrind with instrumentation switched on once every board streams (and 10 s more) for
# INSTRUCTIONS_SECONDS (default 30): instructions mwgated executed per gyro sample received
# (its control API's counters before and after the window), and the functions that cost most.
#
# CPU seconds per 1,000 samples (the footprint area) move by ±10 % between runs on a shared
# machine (the kernel's scheduling, caches, frequency); an instruction count does not. Runs of
# the same binary still differ by up to ~5 %: under valgrind the daemon runs several times
# slower, and when it falls behind the boards' notifications arrive in larger batches, which
# cost less per sample. Compare runs whose samples/s are near 400 (--fair-sched keeps
# valgrind's one-thread-at-a-time scheduling from starving the reading threads).
#
# Env: INSTRUCTIONS_SECONDS; INSTRUCTIONS_PEER_MWGATED and INSTRUCTIONS_PEER_MWCTL: another
# build (e.g. an earlier release, built with scripts/build-static.sh) measured the same way
# after ours, the goal then being no more instructions per sample than it; MWSIM, MWCTL_STATIC,
# MWGATED_STATIC, MWBENCH_DATA_DIR (callgrind's output is kept there).
set -euo pipefail
out=${1:?usage: instructions.sh OUT.md}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mwsim=${MWSIM:?MWSIM must point at mwsim}
mwgated=${MWGATED_STATIC:-$root/.build-static/release/mwgated}
mwctl=${MWCTL_STATIC:-${MWCTL:?}}
seconds=${INSTRUCTIONS_SECONDS:-30}
data=${MWBENCH_DATA_DIR:-$(dirname "$out")}
command -v valgrind > /dev/null || { echo "instructions.sh: valgrind missing (make deps installs it)" >&2; exit 1; }

# measure NAME MWGATED MWCTL: prints "instructions samples seconds load" of one run.
measure() {
    local name=$1 daemon=$2 client=$3
    (
        . "$here/private-bus.sh"
        . "$here/footprint-workload.sh"
        footprint_private_workload "$mwsim"
        export STATE_DIRECTORY=$work/state RUNTIME_DIRECTORY=$work/run CONFIGURATION_DIRECTORY=$work/etc
        strip --strip-debug -o "$work/mwgated" "$daemon"
        local profile=$data/instructions-$name.callgrind
        rm -f "$profile" "$profile".*
        valgrind --tool=callgrind --fair-sched=yes --instr-atstart=no --callgrind-out-file="$profile" \
            "$work/mwgated" --config "$work/etc/mwgated.toml" > /dev/null 2> "$work/valgrind.log" &
        local pid=$!
        bench_track "$pid"
        counters() {  # gyro samples received, boards streaming
            "$client" status --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
total = streaming = 0
def walk(node):
    global total, streaming
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("gyroSamplesReceived", "gyro_samples_received") and isinstance(value, int): total += value
            if key == "streaming" and value is True: streaming += 1
            walk(value)
    elif isinstance(node, list):
        for item in node: walk(item)
walk(json.load(sys.stdin))
print(total, streaming)' 2>/dev/null || echo "0 0"
        }
        local total streaming _
        for _ in $(seq 240); do
            read -r total streaming <<< "$(counters)"
            [[ "$streaming" -ge "$footprint_boards" ]] && break
            kill -0 "$pid" 2>/dev/null || { echo "instructions.sh: $name: mwgated ended: $(tail -5 "$work/valgrind.log")" >&2; exit 1; }
            sleep 0.5
        done
        [[ "$streaming" -ge "$footprint_boards" ]] || { echo "instructions.sh: $name: only $streaming boards streaming" >&2; exit 1; }
        sleep 10
        local first last t0 t1
        read -r first _ <<< "$(counters)"
        callgrind_control --instr=on "$pid" > /dev/null
        t0=$(date +%s.%N)
        sleep "$seconds"
        read -r last _ <<< "$(counters)"
        t1=$(date +%s.%N)
        callgrind_control --dump "$pid" > /dev/null
        local instructions
        instructions=$(awk '/^(summary|totals):/ { print $2; exit }' "$profile".1)
        echo "$instructions $((last - first)) $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(cut -d' ' -f1 /proc/loadavg)"
        # The functions that cost most, for the details.
        callgrind_annotate "$profile".1 2> /dev/null | sed -n '/file:function/,$p' | sed -n '3,17p' \
            | sed -E 's/ \[[^]]*\]$//; s/\?\?\?://' > "$data/instructions-$name-top.txt" || true
    )
}

read -r ours_ir ours_n ours_s ours_load <<< "$(measure ours "$mwgated" "$mwctl")"
per_sample() { awk -v i="$1" -v n="$2" 'BEGIN { printf "%.0f", (n > 0 ? i / n : 0) }'; }
ours=$(per_sample "$ours_ir" "$ours_n")
peer=""
if [[ -n "${INSTRUCTIONS_PEER_MWGATED:-}" ]]; then
    read -r peer_ir peer_n peer_s peer_load <<< "$(measure peer "$INSTRUCTIONS_PEER_MWGATED" "${INSTRUCTIONS_PEER_MWCTL:-$mwctl}")"
    peer=$(per_sample "$peer_ir" "$peer_n")
fi
{
    echo "### Instructions per sample (mwgated as packaged, 4 boards at 100 Hz, under callgrind)"
    echo
    echo "The footprint workload (4 mwsim boards streaming gyro at 100 Hz, always-on recording, directory sink) with mwgated under callgrind, instrumentation on for ${seconds} s once every board streams: instructions mwgated executed (all threads) divided by the gyro samples it received in that window. Unlike CPU seconds it does not move with the machine's load: runs of one binary agree within about 5 % (batching), so a change in the per-sample work shows."
    echo
    if [[ -n "$peer" ]]; then
        echo "| measure | ours | peer ($(basename "$(dirname "$INSTRUCTIONS_PEER_MWGATED")")/$(basename "$INSTRUCTIONS_PEER_MWGATED")) | ours / peer | goal | met |"
        echo "|---|---:|---:|---:|---|---|"
        met=$(awk -v a="$ours" -v b="$peer" 'BEGIN { print (a <= b * 1.05) ? "met" : "NOT met" }')
        echo "| instructions per gyro sample | $ours | $peer | $(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.2f", a / b }') | no more than the peer (5 %: batching) | $met |"
        echo "| samples in the window (samples/s) | $ours_n ($(awk -v n="$ours_n" -v s="$ours_s" 'BEGIN { printf "%.0f", n / s }')) | $peer_n ($(awk -v n="$peer_n" -v s="$peer_s" 'BEGIN { printf "%.0f", n / s }')) | | | |"
        echo
        echo "Load average at our run's end: $ours_load; at the peer's: $peer_load."
    else
        echo "| measure | ours |"
        echo "|---|---:|"
        echo "| instructions per gyro sample | $ours |"
        echo "| samples in the window (samples/s) | $ours_n ($(awk -v n="$ours_n" -v s="$ours_s" 'BEGIN { printf "%.0f", n / s }')) |"
        echo
        echo "No peer (INSTRUCTIONS_PEER_MWGATED names one, e.g. the binaries of an earlier commit). Load average at the end: $ours_load."
    fi
    echo
    echo "<details><summary>the functions that cost most (instructions of their own, in the window)</summary>"
    echo
    for name in ours peer; do
        [[ -s "$data/instructions-$name-top.txt" ]] || continue
        echo "$name:"
        echo
        sed 's/^/    /' "$data/instructions-$name-top.txt"
        echo
    done
    echo "</details>"
} > "$out"
echo "instructions: $ours per sample${peer:+ (peer $peer)}, $ours_n samples in ${ours_s} s"
