#!/usr/bin/env bash
# Flash-log backfill, the pure half (download decoding and placement) -> Markdown section in $1.
# Called by scripts/bench.sh with MWBENCH set to the release mwbench binary.
set -euo pipefail
out=${1:?usage: backfill.sh OUT.md}
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
raw=$("$bench" backfill "${@:2}")
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p"; }
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
    echo "out page by page at the model's pace (400 entries/s) as soon as the points after the stall"
    echo "wait, each page deleted once stored; with the log trimmed every 5 s while the stream is"
    echo "healthy, and without. Simulated time: seconds from the stream's return to the gap's points"
    echo "committed (\"never\": not within the 60 s the points wait, so the gap stays marked)."
    echo
    echo "| session before the gap | entries read, trimmed | gap closed after, trimmed | entries read, untrimmed | gap closed after, untrimmed |"
    echo "|---|---:|---:|---:|---:|"
    for m in 2 5 10; do
        echo "| $m min | $(value backfill_gap_${m}min_trimmed_entries) | $(value backfill_gap_${m}min_trimmed_close_s) s | $(value backfill_gap_${m}min_untrimmed_entries) | $(value backfill_gap_${m}min_untrimmed_close_s) |"
    done
    echo
    echo "Not in this figure: download throughput through dbus-daemon and the time to close a gap"
    echo "after a real reconnect (the VM bench)."
    echo
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n' "$raw" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
